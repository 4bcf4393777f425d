"""WaterSIC-FT pieces: the quantized linear layer whose rescalers train, and model loading.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), WaterSIC-FT: the integer codes
stay fixed; only the row scales t and the column scales alpha*g of every quantized layer train
(through an fp16 straight-through estimator, so what trains is what is stored), with the KL
divergence to the full-precision teacher's next-token distribution as the loss. AdamW with a
cosine schedule from lr = 5e-4 down to 5e-6 (the paper's setting for models below 70B).

* :class:`QuantizedLinear` -- ``y = x[:, live] (diag(t) Z diag(s))^T + b`` with trainable t, s;
* :func:`quantized_student` -- a quantized model with every quantized linear swapped for a
  :class:`QuantizedLinear` (the student of WaterSIC-FT);
* :func:`load_causal_lm`, :func:`load_tokenizer` -- a hub / local ``transformers`` model.

The training itself is the LightningModule :class:`watersic.lightning.WaterSICFinetune`
(teacher, student, KL loss), run by :func:`watersic.lightning.finetune_rescalers`.
"""

from __future__ import annotations

import torch
from torch import nn

from watersic.model_quantization import QuantizedArtifact
from watersic.quantized_matrix import QuantizedMatrix

__all__ = ["QuantizedLinear", "load_causal_lm", "load_tokenizer", "quantized_student"]


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


def quantized_student(artifact: QuantizedArtifact) -> nn.Module:
    """The artifact's model with each quantized linear replaced by a :class:`QuantizedLinear`.

    Only the rescalers (``row_scale``, ``col_scale``) require gradients; every other parameter
    of the model is frozen. The model is modified in place and returned.
    """
    student = artifact.model
    for name, q in artifact.layers.items():
        _set_module(student, name, QuantizedLinear(q, student.get_submodule(name).bias))
    for n, p in student.named_parameters():
        p.requires_grad_(n.endswith(("row_scale", "col_scale")))
    return student


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
