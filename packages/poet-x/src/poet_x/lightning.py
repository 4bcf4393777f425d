"""The Lightning side of poet-x: the causal-LM module shared by every optimiser (POET-X, POET
and the anchors), the merge callback, the teacher-regression module and the data modules.

* :class:`CausalLMModule`, :class:`POETMergeCallback`: below.
* :class:`TextDataModule`: offline text (CPython stdlib bytes, :func:`~poet_x.text_data.stdlib_bytes`)
  or the order-2 Markov chain (:class:`~poet_x.text_data.MarkovChain2`) as fixed windows.
* :class:`HFTextDataModule`: C4 / WikiText / TinyStories or a local text file, packed into
  windows (:mod:`poet_x.pretraining_corpora`).
* :class:`TeacherRegressionDataModule`, :class:`TeacherRegressionModule`: one POET layer
  fitting a linear teacher, against the Procrustes floor (:mod:`poet_x.teacher_regression`).

The model is a randomly initialised ``transformers`` Llama, or (``pretrained=PATH_OR_ID``) any
Hugging Face causal LM loaded with ``AutoModelForCausalLM`` (continued pretraining or
fine-tuning: rows are then not re-normalised, so training starts from the model's own
function). ``optimizer="poet"`` wraps its hidden Linears / GPT-2 ``Conv1D`` layers (not
``lm_head``) with :func:`~poet_x.model_surgery.wrap_model`;
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
from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.text import Perplexity

from .config import POETConfig
from .model_surgery import merge_all, poet_layers, wrap_model
from .optimizer_recipe import build_optimizer, clip_value, reset_poet_state
from .poet_linear import POETLinear
from .pretraining_corpora import (
    CORPORA,
    OFFLINE_HINT,
    ByteTokenizer,
    HubTokenizer,
    PackedStream,
    is_validation,
)
from .teacher_regression import procrustes_floor
from .text_data import MarkovChain2, stdlib_bytes, windows

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


def load_causal_lm(pretrained: str):
    """``AutoModelForCausalLM.from_pretrained`` in float32 (local folder, or the Hub's cache
    offline: a clear one-line error when neither has it)."""
    from icml26_shared.hub import from_pretrained
    from transformers import AutoModelForCausalLM

    try:
        return from_pretrained(
            AutoModelForCausalLM, pretrained, torch_dtype=torch.float32,
            offline_hint="pass a local folder written by save_pretrained: --model path/to/model",
        )  # fmt: skip
    except RuntimeError as err:  # HubUnavailableError: one line through the CLI
        raise ConnectionError(str(err)) from None


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
    pretrained: A Hugging Face causal LM (local folder or Hub id) to train instead of the tiny
        random Llama; its config replaces the shape arguments above.
    on_indivisible: ``"raise"`` on a layer whose dimensions b does not divide, or ``"skip"``
        it (left as a plain layer trained by AdamW, listed in the log).
    normalize_rows: Normalise W0's rows at conversion (the paper's pretraining init);
        ``None``: yes for the random model, no for a ``pretrained`` one (keeps its function).
    bias_placement: ``"before_rotation"`` (the authors') or ``"after_rotation"``.
    target_modules: Names of the layers to convert (default: every Linear but ``lm_head``).

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
        pretrained: str | None = None,
        on_indivisible: str = "raise",
        normalize_rows: bool | None = None,
        bias_placement: str = "before_rotation",
        target_modules: list[str] | None = None,
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
        # a pretrained model brings its own shape: its (unused) seq_len must not clash with the
        # data module's when Lightning merges the hyper-parameters of both for the logger
        self.save_hyperparameters(ignore=["seq_len"] if pretrained is not None else None)
        self.automatic_optimization = False
        self.poet_cfg = POETConfig(
            block_size=block_size, merge_interval=merge_interval, cayley=cayley,
            neumann_terms=neumann_terms, mode=mode, path=path, base_quant=base_quant,
            poet_lr=poet_lr, poet_lr_scale=poet_lr_scale, base_lr=lr, grad_clip=grad_clip,
            clip_warmup_steps=clip_warmup_steps, seed=seed, on_indivisible=on_indivisible,
            normalize_rows=(pretrained is None) if normalize_rows is None else normalize_rows,
            bias_placement=bias_placement, target_modules=target_modules,
        )  # fmt: skip
        if pretrained is not None:
            self.model = load_causal_lm(pretrained).train()  # from_pretrained returns eval mode
        else:
            with torch.random.fork_rng():
                torch.manual_seed(seed)
                self.model = tiny_llama(
                    vocab_size, hidden_size, intermediate_size, num_layers, num_heads, seq_len
                )
        self.wrap_report = None
        if optimizer == "poet":
            self.wrap_report = wrap_model(self.model, self.poet_cfg)
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
        own = int(self.model.config.vocab_size)
        if vocab is not None and vocab > own:
            hint = (
                "use the model's own tokenizer: --data.init_args.tokenizer PATH_OR_ID"
                if self.hparams.pretrained
                else f"set --model.init_args.vocab_size {vocab}"
            )
            raise ValueError(
                f"the data's vocabulary ({vocab} tokens) is larger than the model's "
                f"vocab_size={own}; {hint}"
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


class TextDataModule(pl.LightningDataModule):
    """Byte-level stdlib text (``source="stdlib"``) or the order-2 Markov chain (``"markov"``).

    Parameters
    ----------
    source: ``"stdlib"`` or ``"markov"``.
    seq_len: Tokens per example (targets are the inputs shifted by one).
    batch_size: Examples per batch.
    train_windows, val_windows: Number of fixed windows in each split.
    max_bytes: Bytes of stdlib text read for training.
    vocab, alpha: Markov chain size and Dirichlet concentration.
    seed: Seed of the windows and the chain.

    Examples
    --------
    >>> dm = TextDataModule("markov", seq_len=8, batch_size=2, train_windows=4, val_windows=2,
    ...                     vocab=8)
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader()))[0].shape
    torch.Size([2, 9])
    """

    def __init__(
        self,
        source: str = "stdlib",
        seq_len: int = 64,
        batch_size: int = 16,
        train_windows: int = 2048,
        val_windows: int = 128,
        max_bytes: int = 2_000_000,
        vocab: int = 64,
        alpha: float = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if source not in ("stdlib", "markov"):
            raise ValueError(f"source must be 'stdlib' or 'markov', got {source!r}")
        if seq_len < 2 or batch_size < 1:
            raise ValueError("seq_len must be >= 2 and batch_size >= 1")
        self.save_hyperparameters()
        self.entropy_rate: float | None = None
        self.train_set = self.val_set = None

    @property
    def vocab_size(self) -> int:
        """256 for bytes, V for the Markov chain."""
        return 256 if self.hparams.source == "stdlib" else self.hparams.vocab

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        if self.train_set is not None:
            return
        hp = self.hparams
        length = hp.seq_len + 1
        if hp.source == "stdlib":
            train, val = stdlib_bytes(hp.max_bytes)
        else:
            chain = MarkovChain2(hp.vocab, hp.alpha, hp.seed)
            self.entropy_rate = chain.entropy_rate()
            # as many tokens as the windows hold, so windows overlap only by chance
            train = chain.sample(max(hp.train_windows, 4) * length, seed=hp.seed + 1)
            val = chain.sample(max(hp.val_windows, 4) * length, seed=hp.seed + 2)
        self.train_set = TensorDataset(windows(train, hp.train_windows, length, hp.seed + 3))
        self.val_set = TensorDataset(windows(val, hp.val_windows, length, hp.seed + 4))

    def train_dataloader(self) -> DataLoader:  # noqa: D102
        gen = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(self.train_set, self.hparams.batch_size, shuffle=True, generator=gen)

    def val_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.val_set, self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()


def local_documents(path: str, validation: bool, field: str = "text") -> list[dict]:
    """The non-empty lines of a ``.txt`` file (or of every ``.txt`` under a folder) as
    ``{field: line}`` rows of one split (:func:`~poet_x.pretraining_corpora.is_validation`)."""
    root = Path(path).expanduser()
    files = sorted(root.rglob("*.txt")) if root.is_dir() else [root]
    if not files:
        raise ValueError(f"no .txt files under {str(root)!r}")
    rows = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{str(f)!r} is not UTF-8 text") from None
        for line in text.splitlines():
            if line.strip() and is_validation(line) == validation:
                rows.append({field: line})
    return rows


class HFTextDataModule(pl.LightningDataModule):
    """C4 / WikiText / TinyStories (or a local text file) packed into LM windows.

    Parameters
    ----------
    dataset: ``"c4"``, ``"wikitext"``, ``"tinystories"`` (:data:`CORPORA`), another Hub id,
        or a local ``.txt`` file or folder of them (one document per line; offline; a line goes
        to validation by :func:`is_validation`).
    config: Hub configuration (default: the one in :data:`CORPORA`).
    tokenizer: ``"bytes"`` (vocabulary 256, no download) or a Hub tokenizer id; the paper
        uses ``google-t5/t5-base``. The model's ``vocab_size`` must cover it.
    seq_len: Tokens per example (windows hold ``seq_len + 1``).
    batch_size: Examples per batch.
    train_sequences: Training windows per epoch (``None``: until the split ends).
    val_sequences: Validation windows (the first ones of the validation split).
    streaming: Stream from the Hub instead of downloading the whole split.
    text_field: Column holding the text.
    shuffle_buffer, seed: Streaming shuffle of the training documents.
    num_workers: DataLoader workers.

    Examples
    --------
    >>> dm = HFTextDataModule("c4", seq_len=256)
    >>> dm.vocab_size, dm.hub_id
    (256, 'allenai/c4')
    """

    def __init__(
        self,
        dataset: str = "c4",
        config: str | None = None,
        tokenizer: str = "bytes",
        seq_len: int = 256,
        batch_size: int = 16,
        train_sequences: int | None = None,
        val_sequences: int = 256,
        streaming: bool = True,
        text_field: str = "text",
        shuffle_buffer: int = 10_000,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if seq_len < 2 or batch_size < 1 or val_sequences < 1:
            raise ValueError("seq_len must be >= 2, batch_size >= 1 and val_sequences >= 1")
        if train_sequences is not None and train_sequences < 1:
            raise ValueError(f"train_sequences must be >= 1 or null, got {train_sequences}")
        self.save_hyperparameters()
        self.local = Path(dataset).expanduser().exists()
        if dataset in CORPORA:
            hub_id, default_cfg, self.train_split, self.val_split = CORPORA[dataset]
            self.hub_id, self.config = hub_id, config or default_cfg
        else:
            self.hub_id, self.config = dataset, config
            self.train_split, self.val_split = "train", "validation"
        self._tokenizer = ByteTokenizer() if tokenizer == "bytes" else None
        self.train_set = self.val_set = None

    @property
    def tokenizer(self):
        """The tokenizer (a Hub tokenizer is loaded on first use)."""
        if self._tokenizer is None:
            self._tokenizer = HubTokenizer(self.hparams.tokenizer)
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        """Vocabulary of the tokenizer (256 for bytes)."""
        return self.tokenizer.vocab_size

    def _load(self, split: str, streaming: bool):
        if self.local:  # plain Python: a local corpus needs no `datasets`
            return local_documents(self.hparams.dataset, split == self.val_split,
                                   self.hparams.text_field)  # fmt: skip
        from icml26_shared.hub import load_dataset

        try:
            return load_dataset(self.hub_id, self.config, split=split, streaming=streaming,
                                offline_hint=OFFLINE_HINT)  # fmt: skip
        except RuntimeError as err:  # HubUnavailableError: one line through the CLI
            raise ConnectionError(str(err)) from None

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        if self.train_set is not None:
            return
        hp = self.hparams
        length = hp.seq_len + 1
        tok = self.tokenizer
        val_docs = self._load(self.val_split, hp.streaming)
        val = []
        for (w,) in PackedStream(val_docs, hp.text_field, tok, length, hp.val_sequences):
            val.append(w)
        if not val:
            raise ValueError(f"validation split of {self.hub_id!r} is shorter than one window")
        self.val_set = TensorDataset(torch.stack(val))
        train_docs = self._load(self.train_split, hp.streaming)
        if hp.streaming and hasattr(train_docs, "shuffle") and not self.local:
            train_docs = train_docs.shuffle(seed=hp.seed, buffer_size=hp.shuffle_buffer)
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.world_size > 1 and self.local:
            train_docs = train_docs[trainer.global_rank :: trainer.world_size]
        elif trainer is not None and trainer.world_size > 1:  # DDP / FSDP: one shard per rank
            from datasets.distributed import split_dataset_by_node

            train_docs = split_dataset_by_node(train_docs, trainer.global_rank, trainer.world_size)
        self.train_set = PackedStream(train_docs, hp.text_field, tok, length, hp.train_sequences)

    def train_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.train_set, self.hparams.batch_size,
                          num_workers=self.hparams.num_workers)  # fmt: skip

    def val_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.val_set, self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()


class TeacherRegressionDataModule(pl.LightningDataModule):
    """Regression on a fixed random linear teacher (x ~ N(0, I), y = T x + noise).

    Parameters
    ----------
    in_features, out_features: Teacher shape (out x in).
    n_train, n_val: Examples per split.
    batch_size: Examples per batch.
    noise: Standard deviation of the label noise.
    seed: Seed of the teacher and the inputs.

    Examples
    --------
    >>> dm = TeacherRegressionDataModule(8, 4, n_train=16, n_val=8, batch_size=4)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape, dm.teacher.shape
    (torch.Size([4, 8]), torch.Size([4, 4]), torch.Size([4, 8]))
    """

    def __init__(
        self,
        in_features: int = 32,
        out_features: int = 32,
        n_train: int = 2048,
        n_val: int = 512,
        batch_size: int = 64,
        noise: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if min(in_features, out_features, n_train, n_val, batch_size) < 1 or noise < 0:
            raise ValueError("sizes must be >= 1 and noise >= 0")
        self.save_hyperparameters()
        g = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(out_features, in_features, generator=g) / in_features**0.5
        self._g = g
        self.train_set = self.val_set = None

    def _split(self, n: int) -> TensorDataset:
        x = torch.randn(n, self.hparams.in_features, generator=self._g)
        y = x @ self.teacher.T
        y = y + self.hparams.noise * torch.randn(y.shape, generator=self._g)
        return TensorDataset(x, y)

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        if self.train_set is None:
            self.train_set = self._split(self.hparams.n_train)
            self.val_set = self._split(self.hparams.n_val)

    def train_dataloader(self) -> DataLoader:  # noqa: D102
        gen = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(self.train_set, self.hparams.batch_size, shuffle=True, generator=gen)

    def val_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.val_set, self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()


class TeacherRegressionModule(pl.LightningModule):
    """A single POET layer (or an AdamW ``nn.Linear``) regressing onto the teacher.

    Parameters
    ----------
    in_features, out_features: Layer shape (must match the data module's teacher).
    optimizer: ``"poet"`` (W = R W0 P, merged every ``merge_interval`` steps) or ``"adamw"``.
    block_size, merge_interval, cayley, neumann_terms, mode: POET settings.
    lr: Learning rate (POET: of the rotations).
    seed: Seed of W0 and the permutations.

    Examples
    --------
    >>> m = TeacherRegressionModule(8, 4, block_size=4)
    >>> m(torch.zeros(2, 8)).shape
    torch.Size([2, 4])
    """

    def __init__(
        self,
        in_features: int = 32,
        out_features: int = 32,
        optimizer: str = "poet",
        block_size: int = 8,
        merge_interval: int = 50,
        cayley: str = "exact",
        neumann_terms: int = 4,
        mode: str = "mem",
        lr: float = 0.05,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if optimizer not in ("poet", "adamw"):
            raise ValueError(f"optimizer must be 'poet' or 'adamw', got {optimizer!r}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.cfg = POETConfig(block_size=block_size, merge_interval=merge_interval,
                              cayley=cayley, neumann_terms=neumann_terms, mode=mode,
                              poet_lr=lr, poet_lr_scale=1.0, base_lr=lr, seed=seed)  # fmt: skip
        g = torch.Generator().manual_seed(seed + 1000)
        w0 = torch.randn(out_features, in_features, generator=g) / in_features**0.5
        if optimizer == "poet":
            self.layer = POETLinear(w0, None, self.cfg, torch.Generator().manual_seed(seed))
        else:
            self.layer = nn.Linear(in_features, out_features, bias=False)
            with torch.no_grad():
                self.layer.weight.copy_(w0 / w0.norm(dim=1, keepdim=True))  # same start as POET
        self.n_optimizer_steps = 0
        self.steps_since_merge = 0
        self.floor: float | None = None

    def weight(self) -> torch.Tensor:
        """The student's effective weight (m x n)."""
        if isinstance(self.layer, POETLinear):
            return self.layer.effective_weight()
        return self.layer.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.layer(x)

    def _teacher(self) -> torch.Tensor | None:
        trainer = self._trainer
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        return getattr(dm, "teacher", None)

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        teacher = self._teacher()
        if teacher is None:
            return
        want = (self.hparams.out_features, self.hparams.in_features)
        if tuple(teacher.shape) != want:
            raise ValueError(f"teacher shape {tuple(teacher.shape)} != student shape {want}")
        # POET keeps sigma(W) = sigma(W0); AdamW's floor is 0 (it can match any spectrum)
        self.floor = (
            procrustes_floor(self.weight().detach(), teacher)
            if self.hparams.optimizer == "poet"
            else 0.0
        )

    def configure_optimizers(self):  # noqa: D102
        kind = self.hparams.optimizer
        return build_optimizer(self.layer, self.cfg, kind, lr=self.hparams.lr)

    def training_step(self, batch, batch_idx):  # noqa: D102
        opt = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.manual_backward(loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        self.n_optimizer_steps += 1
        self.steps_since_merge += 1
        self.log("train_mse", loss.detach(), prog_bar=True)
        return loss.detach()

    def merge(self, optimizers) -> int:
        """Merge-and-reinitialise the POET layer and reset its optimiser state."""
        if not isinstance(self.layer, POETLinear):
            return 0
        self.layer.merge_and_reinit()
        for opt in optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]:
            reset_poet_state(getattr(opt, "optimizer", opt))
        self.steps_since_merge = 0
        return 1

    def _eval(self, batch, prefix: str) -> None:
        x, y = batch
        self.log(f"{prefix}_mse", F.mse_loss(self(x), y), prog_bar=True)
        teacher = self._teacher()
        if teacher is not None:
            dist = (self.weight().detach() - teacher.to(self.device)).pow(2).sum()
            self.log("weight_dist", dist)
            self.log("procrustes_floor", float(self.floor or 0.0))

    def validation_step(self, batch, batch_idx):  # noqa: D102
        self._eval(batch, "val")

    def test_step(self, batch, batch_idx):  # noqa: D102
        self._eval(batch, "test")

    def predict_step(self, batch, batch_idx):  # noqa: D102
        return self(batch[0])
