"""wrap_model / merge_to_linear on a transformers Llama, counts, optimiser recipe, training."""

import pytest
import torch
from poet_x.config import POETConfig
from poet_x.lightning import CausalLMModule, TextDataModule, tiny_llama
from poet_x.memory_accounting import optimizer_state_bytes
from poet_x.model_surgery import merge_all, merge_to_linear, poet_layers, wrap_model
from poet_x.optimizer_recipe import build_optimizer, poet_parameters
from poet_x.text_data import MarkovChain2
from torch import nn


def _llama():
    torch.manual_seed(0)
    return tiny_llama(32, 16, 32, 1, 2, 16)


def test_wrap_counts_and_optimizer_bytes_equal_formulas():
    model = _llama()
    shapes = {
        n: m.weight.shape
        for n, m in model.named_modules()
        if isinstance(m, nn.Linear) and not n.endswith("lm_head")
    }
    b = 4
    rep = wrap_model(model, POETConfig(block_size=b))
    assert sorted(rep.wrapped) == sorted(shapes) and "lm_head" not in rep.wrapped
    n_poet = sum(p.numel() for p in poet_parameters(model))
    assert n_poet == sum((m + n) * (b - 1) // 2 for m, n in shapes.values())
    other = sum(p.numel() for p in model.parameters()) - n_poet
    opt = build_optimizer(model, POETConfig(block_size=b))
    x = torch.randint(0, 32, (2, 8))
    model(input_ids=x).logits.sum().backward()
    opt.step()
    n_tensors = len(list(model.parameters()))
    # AdamW: exp_avg + exp_avg_sq (4 B each per element) + a 4-byte step per parameter tensor
    assert optimizer_state_bytes(opt) == 8 * (n_poet + other) + 4 * n_tensors
    group = opt.param_groups[0]
    assert group["poet"] and group["weight_decay"] == 0.0 and group["lr"] == 5e-4 * 0.5


def test_merge_keeps_model_outputs_and_resets_state():
    module = CausalLMModule(32, 16, 32, 1, 2, 16, block_size=4, poet_lr=0.05)
    opts = module.configure_optimizers()
    batch = torch.randint(0, 32, (4, 17))
    for _ in range(3):
        module.optimizer_step_on(batch, opts)
    x = batch[:, :-1]
    with torch.no_grad():
        before = module(x)
    assert any(p in opts.state for p in poet_parameters(module.model))
    module.merge(opts)
    with torch.no_grad():
        assert torch.allclose(module(x), before, atol=1e-5)
    assert all(p not in opts.state for p in poet_parameters(module.model))
    assert all(float(p.detach().abs().max()) == 0 for p in poet_parameters(module.model))
    assert module.steps_since_merge == 0 and module.n_optimizer_steps == 3


def test_merge_to_linear_exports_the_same_function():
    model = _llama()
    wrap_model(model, POETConfig(block_size=4))
    with torch.no_grad():
        for p in poet_parameters(model):
            p.normal_(0, 0.05)
    x = torch.randint(0, 32, (2, 8))
    with torch.no_grad():
        ref = model(input_ids=x).logits
        merge_to_linear(model)
        assert not poet_layers(model)
        assert torch.allclose(model(input_ids=x).logits, ref, atol=1e-5)


def test_indivisible_raise_and_skip_and_no_eligible_layer():
    net = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 6))
    with pytest.raises(ValueError, match="not divisible by block_size 4"):
        wrap_model(net, POETConfig(block_size=4))
    rep = wrap_model(net, POETConfig(block_size=4, on_indivisible="skip"))
    assert rep.wrapped == ["0"] and rep.skipped == ["1"]
    with pytest.raises(ValueError, match="no eligible"):
        wrap_model(nn.Sequential(nn.ReLU()), POETConfig(block_size=4))
    with pytest.raises(ValueError, match="no eligible"):
        wrap_model(nn.Sequential(nn.Linear(8, 8)), POETConfig(block_size=4, exclude_modules=("0",)))


def test_integer_weights_rejected():
    lin = nn.Linear(4, 4)
    lin.weight = nn.Parameter(torch.ones(4, 4, dtype=torch.int32), requires_grad=False)
    with pytest.raises(TypeError, match="integer dtype"):
        wrap_model(nn.Sequential(lin), POETConfig(block_size=2))


def test_markov_entropy_rate_is_a_floor_and_poet_training_lowers_loss():
    chain = MarkovChain2(vocab=8, alpha=0.1, seed=0)
    h = chain.entropy_rate()
    dm = TextDataModule("markov", seq_len=16, batch_size=16, train_windows=640, val_windows=32,
                        vocab=8)  # fmt: skip
    dm.setup("fit")
    assert abs(dm.entropy_rate - h) < 1e-12
    module = CausalLMModule(8, 16, 32, 1, 2, 16, block_size=4, poet_lr=0.02, lr=0.01,
                            merge_interval=20)  # fmt: skip
    opts = module.configure_optimizers()
    val = next(iter(dm.val_dataloader()))
    with torch.no_grad():
        start = module.loss(val).item()
    batches = iter(dm.train_dataloader())
    for step in range(1, 41):
        module.optimizer_step_on(next(batches), opts)  # 40 batches: one epoch
        if step % 20 == 0:
            module.merge(opts)
    with torch.no_grad():
        end = module.loss(val).item()
    assert end < 0.9 * start  # measured 2.09 -> 1.73 nats
    assert end > h - 0.1  # cannot beat the entropy rate (up to sampling noise of 32 windows)
    assert merge_all(module.model) == len(poet_layers(module.model))
