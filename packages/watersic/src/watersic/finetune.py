"""WaterSIC-FT: fine-tuning only the rescalers of a WaterSIC-quantized LM (LightningModule).

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), WaterSIC-FT: the integer codes
stay fixed; only the row scales t and the column scales alpha*g of every quantized layer train
(through an fp16 straight-through estimator, so what trains is what is stored), with the KL
divergence to the full-precision teacher's next-token distribution as the loss. AdamW with a
cosine schedule from lr = 5e-4 down to 5e-6 (the paper's setting for models below 70B).

* :class:`QuantizedLinear` -- ``y = x[:, live] (diag(t) Z diag(s))^T + b`` with trainable t, s;
* :class:`WaterSICFinetune` -- the LightningModule (teacher, quantized student, KL loss);
* :class:`~watersic.text_corpus.ByteTextDataModule` (re-exported here) -- byte-token windows
  of the stdlib text (train / held-out).
"""

from __future__ import annotations

import math

import lightning.pytorch as pl
import torch
from torch import nn

from watersic.evaluation import kl_bits
from watersic.model_quantization import quantize_model
from watersic.quantized_matrix import QuantizedMatrix
from watersic.text_corpus import ByteTextDataModule, byte_sequences, stdlib_text
from watersic.tiny_llm import TinyLlamaSpec, build_tiny_llama, train_tiny_llama

__all__ = ["ByteTextDataModule", "QuantizedLinear", "WaterSICFinetune", "load_causal_lm"]


def _fp16_ste(v: torch.Tensor) -> torch.Tensor:
    """Round to fp16 in the forward pass, identity gradient (straight-through)."""
    return v + (v.half().float() - v).detach()


class QuantizedLinear(nn.Module):
    """A linear layer with frozen integer codes and trainable row/column scales.

    Parameters
    ----------
    q:
        The :class:`~watersic.quantized_matrix.QuantizedMatrix` of the weight.
    bias:
        Optional bias of the original layer (kept frozen).

    Examples
    --------
    >>> import torch
    >>> from watersic.layer_quantizer import quantize_matrix
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(64, 16, generator=g, dtype=torch.float64)
    >>> layer = QuantizedLinear(quantize_matrix(W, torch.eye(16, dtype=torch.float64), rate=4.0))
    >>> layer(torch.ones(2, 16)).shape
    torch.Size([2, 64])
    """

    def __init__(self, q: QuantizedMatrix, bias: torch.Tensor | None = None) -> None:
        super().__init__()
        self.out_features, self.in_features = q.shape
        self.register_buffer("codes", q.codes.to(torch.float32))  # (a, n_live)
        self.register_buffer("live", q.live.clone())  # (n,) bool
        self.row_scale = nn.Parameter(q.row_scale.to(torch.float32))  # (a,)
        self.col_scale = nn.Parameter(q.col_scale.to(torch.float32))  # (n_live,)
        self.register_buffer("bias", None if bias is None else bias.detach().clone())

    def weight_live(self) -> torch.Tensor:
        """diag(t) Z diag(s) ``(a, n_live)`` with fp16 straight-through scales."""
        return _fp16_ste(self.row_scale)[:, None] * self.codes * _fp16_ste(self.col_scale)[None, :]

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x (..., n)
        y = torch.nn.functional.linear(x[..., self.live], self.weight_live())
        return y if self.bias is None else y + self.bias


def _set_module(root: nn.Module, name: str, new: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, new)


class WaterSICFinetune(pl.LightningModule):
    """WaterSIC-FT: train only the rescalers of a WaterSIC-quantized causal LM by KL to its teacher.

    Parameters
    ----------
    teacher:
        ``"tiny-llama"`` (built and pretrained here on stdlib text) or a ``transformers``
        causal-LM id / local path (loaded through the offline-aware hub loader).
    rate:
        Target bits per quantized weight.
    hidden_size, intermediate_size, num_layers, num_heads, seq_len:
        Size of the tiny teacher (ignored for a hub model).
    pretrain_steps:
        Pretraining steps of the tiny teacher (0: random initialisation).
    calib_sequences:
        Calibration windows of ``seq_len`` bytes for the quantizer.
    lr, min_lr:
        AdamW learning rate, annealed by a cosine schedule to ``min_lr``.
    accounting:
        WaterSIC entropy accounting.
    seed:
        Seed of the teacher initialisation and pretraining.

    References
    ----------
    Lifar, Savkin, Ordentlich, Polyanskiy, ICML 2026, arXiv:2603.04956 (WaterSIC-FT).

    Examples
    --------
    >>> m = WaterSICFinetune(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2,
    ...                      seq_len=16, pretrain_steps=0, calib_sequences=8, rate=4.0)
    >>> m(torch.zeros(2, 16, dtype=torch.long)).shape  # (B, T, V)
    torch.Size([2, 16, 256])
    >>> all(p.requires_grad == ("scale" in n) for n, p in m.student.named_parameters())
    True
    """

    def __init__(
        self,
        teacher: str = "tiny-llama",
        rate: float = 2.0,
        hidden_size: int = 64,
        intermediate_size: int = 128,
        num_layers: int = 2,
        num_heads: int = 2,
        seq_len: int = 64,
        pretrain_steps: int = 150,
        calib_sequences: int = 64,
        lr: float = 5e-4,
        min_lr: float = 5e-6,
        accounting: str = "pooled",
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if teacher == "tiny-llama":
            spec = TinyLlamaSpec(
                hidden_size=hidden_size,
                intermediate_size=intermediate_size,
                num_layers=num_layers,
                num_heads=num_heads,
                seq_len=seq_len,
                train_steps=pretrain_steps,
                batch_size=8,
            )
            fp = (
                train_tiny_llama(spec, seed) if pretrain_steps > 0 else build_tiny_llama(spec, seed)
            )
        else:
            fp = load_causal_lm(teacher)
        cal = byte_sequences(stdlib_text("train"), seq_len, calib_sequences)
        artifact = quantize_model(fp, cal, rate, "watersic", accounting=accounting)
        student = artifact.model
        for name, q in artifact.layers.items():
            old = student.get_submodule(name)
            _set_module(student, name, QuantizedLinear(q, old.bias))
        for p in fp.parameters():
            p.requires_grad_(False)
        for n, p in student.named_parameters():
            p.requires_grad_("row_scale" in n or "col_scale" in n)
        self.teacher = fp
        self.student = student
        self.quantized_rate = artifact.rate

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, V)
        return self.student(input_ids=input_ids).logits

    def _kl(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            t_logits = self.teacher(input_ids=batch).logits
        s_logits = self(batch)
        return kl_bits(t_logits, s_logits), s_logits

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss, _ = self._kl(batch)
        self.log("train_kl_bits", loss, prog_bar=True)
        return loss

    def _eval(self, batch: torch.Tensor, prefix: str) -> None:
        kl, logits = self._kl(batch)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1)
        )
        self.log(f"{prefix}_kl_bits", kl)
        self.log(f"{prefix}_perplexity", torch.exp(nll))

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "val")

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "test")

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Per-sequence next-token NLL in bits ``(B,)``."""
        logits = self(batch)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].transpose(1, 2).float(), batch[:, 1:], reduction="none"
        )
        return nll.mean(-1) / math.log(2)

    def configure_optimizers(self):
        params = [p for p in self.student.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.hparams.lr, weight_decay=0.0)
        total = max(1, int(self.trainer.estimated_stepping_batches)) if self._trainer else 1
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=total, eta_min=self.hparams.min_lr
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def load_causal_lm(model_id: str) -> nn.Module:
    """A ``transformers`` causal LM from the hub or a local path, with a clear offline error."""
    from icml26_shared.hub import from_pretrained
    from transformers import AutoModelForCausalLM

    model = from_pretrained(
        AutoModelForCausalLM,
        model_id,
        offline_hint="use --model tiny-llama (trained here on CPython's sources)",
    )
    model.eval()
    return model


def load_tokenizer(model_id: str):
    """The model's own ``transformers`` tokenizer (hub id or local path), offline-aware."""
    from icml26_shared.hub import from_pretrained
    from transformers import AutoTokenizer

    return from_pretrained(
        AutoTokenizer,
        model_id,
        offline_hint="use --model tiny-llama (trained here on CPython's sources)",
    )
