"""Causal-LM LightningModule shared by every optimiser (POET-X, POET and the anchors).

The model is a randomly initialised ``transformers`` Llama. ``optimizer="poet"`` wraps its
hidden Linears (not ``lm_head``) with :func:`~poet_x.model_surgery.wrap_model`;
``"lora"`` / ``"oft"`` inject ``peft`` adapters into the same hidden Linears (the base
weights frozen; embeddings, norms and ``lm_head`` stay trainable, as POET's) and train with
AdamW; the other choices (``adamw``, ``muon``, ``galore``, ``apollo``) train the plain model. One optimiser step (:meth:`CausalLMModule.optimizer_step_on`)
does forward, backward, gradient clipping (with the post-merge warm-up for POET), the
learning-rate schedule (constant, or the paper's linear warm-up + cosine decay to 1% of the
peak, :func:`lr_factor`), step and zero-grad; :class:`POETMergeCallback` merges every T
optimiser steps and resets the POET optimiser state. Manual optimisation keeps the same code
path for Lightning and the ``reproduce`` loop. Under a Trainer, clipping goes through
Lightning (``clip_gradients``: mixed-precision unscaling, FSDP-sharded norms); validation and
test log the loss and ``torchmetrics.text.Perplexity``; the step counters are saved in
checkpoints so merges and the schedule resume where they stopped.
"""

from __future__ import annotations

import math

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.text import Perplexity

from .config import POETConfig
from .model_surgery import merge_all, poet_layers, wrap_model
from .optimizer_recipe import build_optimizer, clip_value, reset_poet_state

OPTIMIZERS = ("poet", "adamw", "muon", "galore", "apollo", "lora", "oft")
SCHEDULES = ("constant", "cosine")
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


def lr_factor(step: int, schedule: str, warmup_steps: int, total_steps: int | None) -> float:
    """Learning-rate multiplier at optimiser step ``step`` (0-based).

    ``"constant"``: 1 after a linear warm-up of ``warmup_steps``; ``"cosine"``: the paper's
    recipe, linear warm-up then cosine decay from 1 to 0.01 at ``total_steps``.

    >>> [round(lr_factor(s, "cosine", 10, 110), 3) for s in (0, 5, 10, 60, 110, 500)]
    [0.1, 0.6, 1.0, 0.505, 0.01, 0.01]
    >>> lr_factor(3, "constant", 0, None)
    1.0
    """
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    span = max(int(total_steps) - warmup_steps, 1)
    frac = min(max(step - warmup_steps, 0) / span, 1.0)
    return 0.01 + 0.99 * 0.5 * (1.0 + math.cos(math.pi * frac))  # cosine to 1% of the peak


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
    lr_schedule, warmup_steps, total_steps: ``"constant"`` (default) or ``"cosine"`` (linear
        warm-up over ``warmup_steps``, cosine decay to 1% at ``total_steps``, the paper's
        recipe; ``total_steps`` defaults to the Trainer's ``max_steps``), applied to every
        parameter group.
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
        lr_schedule: str = "constant",
        warmup_steps: int = 0,
        total_steps: int | None = None,
    ) -> None:
        super().__init__()
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
        if lr_schedule not in SCHEDULES:
            raise ValueError(f"lr_schedule must be 'constant' or 'cosine', got {lr_schedule!r}")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if total_steps is not None and total_steps <= warmup_steps:
            raise ValueError(
                f"total_steps ({total_steps}) must be larger than warmup_steps ({warmup_steps})"
            )
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
        self.val_ppl = Perplexity()
        self.test_ppl = Perplexity()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.model(input_ids=input_ids).logits

    def loss(self, batch, return_logits: bool = False):
        """Mean next-token cross-entropy (nats/token) of a batch of windows (B, L+1)."""
        tokens = batch[0] if isinstance(batch, (list, tuple)) else batch
        logits = self(tokens[:, :-1])  # (B, L, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        return (loss, logits, tokens[:, 1:]) if return_logits else loss

    def _total_steps(self) -> int | None:
        if self.hparams.total_steps is not None:
            return self.hparams.total_steps
        trainer = self._trainer
        max_steps = getattr(trainer, "max_steps", -1) if trainer is not None else -1
        if max_steps is None or max_steps <= 0:
            raise ValueError(
                "lr_schedule='cosine' needs --model.init_args.total_steps or --trainer.max_steps"
            )
        return max_steps

    def _apply_lr_schedule(self, opts) -> None:
        """Set every group's lr to its base lr x :func:`lr_factor` of this step."""
        hp = self.hparams
        if hp.lr_schedule == "constant" and hp.warmup_steps == 0:
            return
        total = self._total_steps() if hp.lr_schedule == "cosine" else None
        f = lr_factor(self.n_optimizer_steps, hp.lr_schedule, hp.warmup_steps, total)
        for opt in opts:
            for group in getattr(opt, "optimizer", opt).param_groups:
                group.setdefault("base_lr", group["lr"])
                group["lr"] = group["base_lr"] * f

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
            if self._trainer is not None and len(opts) == 1:
                # through Lightning: unscales fp16 AMP gradients, FSDP-sharded global norm
                self.clip_gradients(opts[0], gradient_clip_val=clip, gradient_clip_algorithm="norm")
            else:
                nn.utils.clip_grad_norm_(self.parameters(), clip)
        self._apply_lr_schedule(opts)
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
        loss, logits, target = self.loss(batch, return_logits=True)
        self.val_ppl(logits.float(), target)
        self.log("val_loss", loss, prog_bar=True, sync_dist=True)
        self.log("val_ppl", self.val_ppl)

    def test_step(self, batch, batch_idx):  # noqa: D102
        loss, logits, target = self.loss(batch, return_logits=True)
        self.test_ppl(logits.float(), target)
        self.log("test_loss", loss, sync_dist=True)
        self.log("test_ppl", self.test_ppl)

    def on_save_checkpoint(self, checkpoint: dict) -> None:  # noqa: D102
        checkpoint["poet_x_counters"] = {
            "n_optimizer_steps": self.n_optimizer_steps,
            "steps_since_merge": self.steps_since_merge,
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:  # noqa: D102
        counters = checkpoint.get("poet_x_counters", {})
        self.n_optimizer_steps = int(counters.get("n_optimizer_steps", 0))
        self.steps_since_merge = int(counters.get("steps_since_merge", 0))

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
