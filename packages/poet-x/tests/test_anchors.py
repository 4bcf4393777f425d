"""The optional anchors (GaLore, APOLLO, LoRA, OFT; ``bench`` extra) on the same tiny Llama.

Each test skips cleanly when its package is absent. Importing ``peft`` alone takes about a
minute on the shared 2-core CPU, so the LoRA / OFT tests are marked ``slow``.
"""

import pytest
import torch
from poet_x.lightning import CausalLMModule
from poet_x.memory_accounting import optimizer_state_bytes

NEEDS = {"galore": "galore_torch", "apollo": "apollo_torch", "lora": "peft", "oft": "peft"}


def _module(kind):
    return CausalLMModule(
        vocab_size=16, hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2,
        seq_len=8, block_size=4, optimizer=kind, lr=1e-2, merge_interval=5, lora_rank=4,
    )  # fmt: skip


@pytest.mark.parametrize(
    "kind",
    ["galore", "apollo", *(pytest.param(k, marks=pytest.mark.slow) for k in ("lora", "oft"))],
)
def test_anchor_trains_and_lowers_the_loss(kind):
    pytest.importorskip(NEEDS[kind])
    torch.manual_seed(0)
    m = _module(kind)
    opts = m.configure_optimizers()
    x = torch.randint(0, 16, (4, 9))
    losses = [m.optimizer_step_on(x, opts).item() for _ in range(15)]
    assert losses[-1] < 0.8 * losses[0]
    assert optimizer_state_bytes(opts) > 0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lora", "oft"])
def test_adapters_freeze_the_hidden_base_weights(kind):
    pytest.importorskip("peft")
    m = _module(kind)
    trainable = {n for n, p in m.model.named_parameters() if p.requires_grad}
    assert any("base_layer" in n for n, _ in m.model.named_parameters())
    assert not any("base_layer" in n for n in trainable)
    assert any("embed_tokens" in n for n in trainable)


def test_galore_state_is_smaller_than_adamw_on_the_hidden_matrices():
    pytest.importorskip("galore_torch")
    sizes = {}
    for kind in ("adamw", "galore"):
        torch.manual_seed(0)
        m = _module(kind)
        opts = m.configure_optimizers()
        m.optimizer_step_on(torch.randint(0, 16, (2, 9)), opts)
        sizes[kind] = optimizer_state_bytes(opts)
    assert sizes["galore"] < sizes["adamw"]
