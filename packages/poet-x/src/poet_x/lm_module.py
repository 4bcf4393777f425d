"""Causal-LM LightningModule shared by every optimiser (POET-X, POET and the anchors).

The model is a randomly initialised ``transformers`` Llama. ``optimizer="poet"`` wraps its
hidden Linears (not ``lm_head``) with :func:`~poet_x.model_surgery.wrap_model`;
``"lora"`` / ``"oft"`` inject ``peft`` adapters into the same hidden Linears (the base
weights frozen; embeddings, norms and ``lm_head`` stay trainable, as POET's) and train with
AdamW; the other choices (``adamw``, ``muon``, ``galore``, ``apollo``) train the plain model. One optimiser step (:meth:`CausalLMModule.optimizer_step_on`)
does forward, backward, gradient clipping (with the post-merge warm-up for POET), step and
zero-grad; :class:`POETMergeCallback` merges every T optimiser steps and resets the POET
optimiser state. Manual optimisation keeps the same code path for Lightning and the
``reproduce`` loop.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn

from .config import POETConfig
from .model_surgery import merge_all, poet_layers, wrap_model
from .optimizer_recipe import build_optimizer, clip_value, reset_poet_state

OPTIMIZERS = ("poet", "adamw", "muon", "galore", "apollo", "lora", "oft")
HIDDEN = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def inject_adapters(model, kind: str, rank: int, block_size: int):
    """Inject LoRA (rank ``rank``) or OFT (block ``block_size``) adapters with ``peft``.

    Only the adapters and the non-Linear parameters (embeddings, norms, ``lm_head``) train.
    """
    try:
        from peft import LoraConfig, OFTConfig, get_peft_model
    except ImportError as err:  # pragma: no cover - depends on the bench extra
        raise ImportError(f"optimizer {kind!r} needs peft: pip install 'poet-x[bench]'") from err
    if kind == "lora":
        cfg = LoraConfig(r=rank, lora_alpha=rank, target_modules=HIDDEN, lora_dropout=0.0)
    else:
        cfg = OFTConfig(r=0, oft_block_size=block_size, target_modules=HIDDEN)
    model = get_peft_model(model, cfg)
    for name, p in model.named_parameters():
        if "embed_tokens" in name or "norm" in name or "lm_head" in name:
            p.requires_grad_(True)
    return model


def tiny_llama(vocab: int, hidden: int, intermediate: int, layers: int, heads: int, seq: int):
    """A randomly initialised ``LlamaForCausalLM`` (float32, eager attention)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=max(seq, 16), tie_word_embeddings=False,
        attn_implementation="eager",
    )  # fmt: skip
    return LlamaForCausalLM(cfg)


class CausalLMModule(pl.LightningModule):
    """Next-token LM trained by POET-X or an anchor optimiser.

    Parameters
    ----------
    vocab_size, hidden_size, intermediate_size, num_layers, num_heads, seq_len:
        Llama shape.
    optimizer: ``"poet"`` (POET-X / POET, see ``mode``) or an anchor: ``"adamw"``,
        ``"muon"``, ``"galore"``, ``"apollo"``, ``"lora"``, ``"oft"`` (the last four need
        the ``bench`` extra).
    lora_rank: LoRA rank, and GaLore / APOLLO projection rank.
    lr: Base learning rate (AdamW part; Muon uses 20x on matrices).
    block_size, merge_interval, cayley, neumann_terms, mode, path, base_quant:
        :class:`~poet_x.config.POETConfig` fields (``mode="naive"`` is POET).
    poet_lr, poet_lr_scale, grad_clip, clip_warmup_steps: the optimiser recipe.
    weight_decay: AdamW weight decay of the non-POET parameters.
    seed: Seed of the model init and the permutations.

    Examples
    --------
    >>> m = CausalLMModule(vocab_size=16, hidden_size=8, intermediate_size=16, num_layers=1,
    ...                    num_heads=2, seq_len=8, block_size=4)
    >>> m(torch.zeros(2, 8, dtype=torch.long)).shape
    torch.Size([2, 8, 16])
    """

    def __init__(
        self,
        vocab_size: int = 256,
        hidden_size: int = 128,
        intermediate_size: int = 384,
        num_layers: int = 2,
        num_heads: int = 4,
        seq_len: int = 64,
        optimizer: str = "poet",
        lr: float = 1e-3,
        block_size: int = 32,
        merge_interval: int = 200,
        cayley: str = "neumann",
        neumann_terms: int = 4,
        mode: str = "fast",
        path: str = "auto",
        base_quant: str = "none",
        poet_lr: float = 5e-4,
        poet_lr_scale: float = 0.5,
        grad_clip: float = 1.0,
        clip_warmup_steps: int = 0,
        weight_decay: float = 0.0,
        seed: int = 0,
        lora_rank: int = 16,
    ) -> None:
        super().__init__()
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.poet_cfg = POETConfig(
            block_size=block_size, merge_interval=merge_interval, cayley=cayley,
            neumann_terms=neumann_terms, mode=mode, path=path, base_quant=base_quant,
            poet_lr=poet_lr, poet_lr_scale=poet_lr_scale, base_lr=lr, grad_clip=grad_clip,
            clip_warmup_steps=clip_warmup_steps, seed=seed,
        )  # fmt: skip
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.model = tiny_llama(
                vocab_size, hidden_size, intermediate_size, num_layers, num_heads, seq_len
            )
        if optimizer == "poet":
            wrap_model(self.model, self.poet_cfg)
        elif optimizer in ("lora", "oft"):
            self.model = inject_adapters(self.model, optimizer, lora_rank, block_size)
        self.steps_since_merge = 0
        self.n_optimizer_steps = 0

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.model(input_ids=input_ids).logits

    def loss(self, batch) -> torch.Tensor:
        """Mean next-token cross-entropy (nats/token) of a batch of windows."""
        tokens = batch[0] if isinstance(batch, (list, tuple)) else batch
        logits = self(tokens[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))

    def setup(self, stage: str | None = None) -> None:
        """Check that the data's vocabulary fits the model's (no silent index errors)."""
        dm = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        vocab = getattr(dm, "vocab_size", None)
        if vocab is not None and vocab > self.hparams.vocab_size:
            raise ValueError(
                f"the data's vocabulary ({vocab} tokens) is larger than the model's "
                f"vocab_size={self.hparams.vocab_size}; set --model.init_args.vocab_size {vocab}"
            )

    def configure_optimizers(self):  # noqa: D102
        kind = self.hparams.optimizer
        kind = "adamw" if kind in ("lora", "oft") else kind
        return build_optimizer(
            self.model, self.poet_cfg, kind, self.hparams.lr, self.hparams.weight_decay,
            rank=self.hparams.lora_rank, proj_gap=max(self.hparams.merge_interval, 1),
        )  # fmt: skip

    def optimizer_step_on(self, batch, optimizers) -> torch.Tensor:
        """Forward, backward, clip, step, zero-grad (the same for Lightning and reproduce)."""
        opts = optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]
        loss = self.loss(batch)
        if self._trainer is not None:
            self.manual_backward(loss)
        else:
            loss.backward()
        clip = self.hparams.grad_clip
        if self.hparams.optimizer == "poet":
            clip = clip_value(clip, self.steps_since_merge, self.hparams.clip_warmup_steps)
        if clip > 0:
            nn.utils.clip_grad_norm_(self.parameters(), clip)
        for opt in opts:
            opt.step()
            opt.zero_grad(set_to_none=True)
        self.steps_since_merge += 1
        self.n_optimizer_steps += 1
        return loss.detach()

    def merge(self, optimizers) -> int:
        """Merge-and-reinitialise every POET layer and reset their optimiser state."""
        opts = optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]
        n = merge_all(self.model)
        for opt in opts:
            opt = getattr(opt, "optimizer", opt)  # unwrap LightningOptimizer
            reset_poet_state(opt)
        self.steps_since_merge = 0
        return n

    def training_step(self, batch, batch_idx):  # noqa: D102
        opts = self.optimizers()
        loss = self.optimizer_step_on(batch, opts)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):  # noqa: D102
        self.log("val_loss", self.loss(batch), prog_bar=True)

    def test_step(self, batch, batch_idx):  # noqa: D102
        self.log("test_loss", self.loss(batch))

    def predict_step(self, batch, batch_idx):  # noqa: D102
        tokens = batch[0] if isinstance(batch, (list, tuple)) else batch
        return self(tokens[:, :-1]).argmax(-1)


class POETMergeCallback(pl.Callback):
    """Merge every POET layer every ``merge_interval`` optimiser steps (and reset state).

    Works with any module that has POET layers, a ``merge(optimizers)`` method and an
    ``n_optimizer_steps`` counter (:class:`CausalLMModule`,
    :class:`~poet_x.teacher_regression.TeacherRegressionModule`). ``merge_interval=None``
    takes the module's ``merge_interval`` hyper-parameter.

    Examples
    --------
    >>> POETMergeCallback(50).merge_interval
    50
    """

    def __init__(self, merge_interval: int | None = None) -> None:
        if merge_interval is not None and merge_interval <= 0:
            raise ValueError(f"merge_interval must be > 0, got {merge_interval}")
        self.merge_interval = merge_interval
        self.n_merges = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:  # noqa: D102
        if not hasattr(pl_module, "merge") or not poet_layers(pl_module):
            return
        every = self.merge_interval or pl_module.hparams.merge_interval
        if pl_module.n_optimizer_steps > 0 and pl_module.n_optimizer_steps % every == 0:
            pl_module.merge(trainer.optimizers)
            self.n_merges += 1
