"""``QuantLinear`` and QAT schemes applied to Llama-style ``transformers`` models.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

1. W-bit / A-bit QAT of every linear layer inside the decoder blocks (embeddings and the LM
   head stay in full precision) -> :func:`apply_qat` with a :class:`QATScheme`.
2. Schemes of the paper: W4A4 (the unified law), W4A16 (weight part of the error, delta_W),
   W16A4 (activation part, delta_A) and mixed precision with an 8-bit FC2 input
   (``mlp.down_proj`` activations at 8 bits, Sec. "FC2 outliers") -> :data:`SCHEMES`.
3. Outlier mitigation anchor (not in the paper's method, QuaRot/SpinQuant style): an
   orthonormal Hadamard rotation ``H`` of the FC2 input, ``x W^T = (x H)(W H)^T``, quantising
   ``x H`` and ``W H`` at the same bits -> ``QuantLinear(rotate=True)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .fake_quant import FakeQuantizer, ScaleRule, SteRule, check_bits, check_group_size

#: Linear layers of a Llama decoder block, by their name inside the block.
LLAMA_LINEARS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)
OVERRIDE_KEYS = ("w_bits", "a_bits", "group_size", "rotate")


def hadamard_matrix(n: int) -> torch.Tensor:
    """Orthonormal Sylvester-Hadamard matrix of size ``n`` (a power of two).

    >>> h = hadamard_matrix(4)
    >>> torch.allclose(h @ h.T, torch.eye(4))
    True
    """
    if n < 1 or n & (n - 1):
        raise ValueError(f"a Hadamard rotation needs a power-of-two size, got {n}")
    h = torch.ones(1, 1)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h / math.sqrt(n)


class QuantLinear(nn.Linear):
    """An ``nn.Linear`` whose weight and input are fake-quantised in the forward pass.

    Weights: per-group (along ``in_features``) symmetric ``w_bits``. Inputs: dynamic
    per-token, per-group ``a_bits``. Gradients pass through the rounding (STE).
    With ``w_bits = a_bits = 16`` the layer is exactly ``nn.Linear``.

    Args:
        in_features, out_features, bias: As for ``nn.Linear``.
        w_bits, a_bits: Bits of weights / input activations (2..8, or 16 = not quantised).
        group_size: G, shared by weights and activations.
        scale_rule, ste: Passed to :class:`~qat_scaling.fake_quant.FakeQuantizer`.
        rotate: Apply an orthonormal Hadamard rotation to input and weight first.

    Examples:
        >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
        <torch._C.Generator object at ...>
        >>> layer = QuantLinear(8, 3, bias=False, w_bits=4, a_bits=4, group_size=4)
        >>> layer(torch.randn(2, 8)).shape
        torch.Size([2, 3])
        >>> len(torch.unique(layer.quantized_weight()[0, :4]).tolist()) <= 16
        True
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        w_bits: int = 4,
        a_bits: int = 4,
        group_size: int = 32,
        scale_rule: ScaleRule = "absmax",
        ste: SteRule = "identity",
        rotate: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        check_group_size(group_size, in_features)
        self.weight_quantizer = FakeQuantizer(w_bits, group_size, scale_rule, ste)
        self.input_quantizer = FakeQuantizer(a_bits, group_size, scale_rule, ste)
        self.rotate = bool(rotate)
        if self.rotate:
            self.register_buffer("rotation", hadamard_matrix(in_features), persistent=False)

    @classmethod
    def from_linear(cls, linear: nn.Linear, **kwargs: Any) -> QuantLinear:
        """A ``QuantLinear`` sharing ``linear``'s parameters (no copy)."""
        layer = cls(
            linear.in_features,
            linear.out_features,
            bias=linear.bias is not None,
            device="meta",
            **kwargs,
        )
        layer.weight = linear.weight
        layer.bias = linear.bias
        if layer.rotate:
            layer.rotation = hadamard_matrix(linear.in_features).to(linear.weight)
        return layer

    def quantized_weight(self) -> torch.Tensor:
        """The weight as the forward pass sees it (rotated, then fake-quantised)."""
        w = self.weight
        if self.rotate:
            w = w @ self.rotation
        return self.weight_quantizer(w)

    def quantize_input(self, x: torch.Tensor) -> torch.Tensor:
        """The input as the forward pass sees it (rotated, then fake-quantised)."""
        if self.rotate:
            x = x @ self.rotation
        return self.input_quantizer(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``fq_a(x) @ fq_w(W)^T + b``."""
        if not (self.rotate or self.weight_quantizer.enabled or self.input_quantizer.enabled):
            return F.linear(x, self.weight, self.bias)
        return F.linear(self.quantize_input(x), self.quantized_weight(), self.bias)

    def extra_repr(self) -> str:
        return (
            f"{super().extra_repr()}, w_bits={self.weight_quantizer.bits}, "
            f"a_bits={self.input_quantizer.bits}, group_size={self.weight_quantizer.group_size}"
            + (", rotate=True" if self.rotate else "")
        )


@dataclass(frozen=True)
class QATScheme:
    """Bits and group size of every decoder-block linear layer, with per-layer overrides.

    Args:
        w_bits, a_bits: Default bits of weights and input activations.
        group_size: G.
        overrides: ``{block-relative layer name: {key: value}}``, keys among
            ``w_bits, a_bits, group_size, rotate``; e.g. ``{"mlp.down_proj": {"a_bits": 8}}``.
        scale_rule, ste: Quantiser conventions.

    Examples:
        >>> s = QATScheme.preset("W16A4-FC2A8", group_size=16)
        >>> s.settings("mlp.down_proj")["a_bits"], s.settings("mlp.up_proj")["a_bits"]
        (8, 4)
        >>> s.name
        'W16A4-FC2A8'
    """

    w_bits: int = 4
    a_bits: int = 4
    group_size: int = 32
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    scale_rule: ScaleRule = "absmax"
    ste: SteRule = "identity"
    name: str = ""

    def __post_init__(self) -> None:
        check_bits(self.w_bits)
        check_bits(self.a_bits)
        check_group_size(self.group_size)
        for layer, values in self.overrides.items():
            if layer not in LLAMA_LINEARS:
                raise ValueError(
                    f"unknown override layer {layer!r}; valid names: {', '.join(LLAMA_LINEARS)}"
                )
            bad = set(values) - set(OVERRIDE_KEYS)
            if bad:
                raise ValueError(
                    f"unknown override key(s) {sorted(bad)} for {layer!r}; valid: {OVERRIDE_KEYS}"
                )
            for key in ("w_bits", "a_bits"):
                if key in values:
                    check_bits(values[key])
            if "group_size" in values:
                check_group_size(values["group_size"])

    @classmethod
    def preset(cls, name: str, group_size: int = 32, **kwargs: Any) -> QATScheme:
        """One of :data:`SCHEMES` (``FP``, ``W4A4``, ``W4A16``, ``W16A4``, ``...-FC2A8``, ...)."""
        if name not in SCHEMES:
            raise ValueError(f"unknown scheme {name!r}; choose from {', '.join(SCHEMES)}")
        return replace(SCHEMES[name], group_size=group_size, name=name, **kwargs)

    @property
    def is_fp(self) -> bool:
        """True when nothing is quantised."""
        return (
            self.w_bits == 16
            and self.a_bits == 16
            and all(
                v.get("w_bits", 16) == 16 and v.get("a_bits", 16) == 16
                for v in self.overrides.values()
            )
        )

    def settings(self, layer: str) -> dict[str, Any]:
        """The ``QuantLinear`` keyword arguments for one block-relative layer name."""
        base = {
            "w_bits": self.w_bits,
            "a_bits": self.a_bits,
            "group_size": self.group_size,
            "rotate": False,
            "scale_rule": self.scale_rule,
            "ste": self.ste,
        }
        base.update(self.overrides.get(layer, {}))
        return base


_FC2_A8 = {"mlp.down_proj": {"a_bits": 8}}
_FC2_HAD = {"mlp.down_proj": {"rotate": True}}
#: The schemes used in the paper's experiments (plus the Hadamard anchor).
SCHEMES: dict[str, QATScheme] = {
    "FP": QATScheme(16, 16),
    "W4A4": QATScheme(4, 4),
    "W4A16": QATScheme(4, 16),
    "W16A4": QATScheme(16, 4),
    "W4A4-FC2A8": QATScheme(4, 4, overrides=_FC2_A8),
    "W16A4-FC2A8": QATScheme(16, 4, overrides=_FC2_A8),
    "W16A4-FC2had": QATScheme(16, 4, overrides=_FC2_HAD),
}


def apply_qat(model: nn.Module, scheme: QATScheme) -> nn.Module:
    """Replace every linear layer of the decoder blocks of ``model`` by a :class:`QuantLinear`.

    Works in place on a ``transformers`` Llama-style model (``model.model.layers[i]``);
    embeddings and ``lm_head`` are left in full precision. Returns ``model``.
    """
    blocks = _decoder_blocks(model)
    for block in blocks:
        for name in LLAMA_LINEARS:
            parent_name, attr = name.split(".")
            parent = getattr(block, parent_name)
            linear = getattr(parent, attr)
            if isinstance(linear, QuantLinear):  # re-applying: start from the plain layer
                linear = _plain(linear)
            settings = scheme.settings(name)
            check_group_size(settings["group_size"], linear.in_features)
            setattr(parent, attr, QuantLinear.from_linear(linear, **settings))
    return model


def _plain(layer: QuantLinear) -> nn.Linear:
    plain = nn.Linear(
        layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta"
    )
    plain.weight = layer.weight
    plain.bias = layer.bias
    return plain


def _decoder_blocks(model: nn.Module) -> list[nn.Module]:
    inner = getattr(model, "model", model)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(
            f"{type(model).__name__} is not a Llama-style model (no .model.layers); "
            "apply_qat expects a transformers LlamaForCausalLM or LlamaModel"
        )
    return list(layers)


def quant_layers(model: nn.Module) -> dict[str, QuantLinear]:
    """All :class:`QuantLinear` modules of ``model`` by their full name."""
    return {n: m for n, m in model.named_modules() if isinstance(m, QuantLinear)}
