"""Numerics cross-check of our fake quantisers against torchao's QAT fake quantisers.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (W4A4
QAT with per-group weights and per-token, per-group activations). torchao is the maintained
PyTorch QAT library; its ``IntxFakeQuantizer`` with a symmetric per-group config is the
same quantiser as :func:`~qat_scaling.fake_quant.fake_quantize` with ``scale_rule="torchao"``
(``s = absmax / ((2^b - 1) / 2)``, integers in ``[-2^(b-1), 2^(b-1) - 1]``).

Both round ``x * (1 / s)`` (not ``x / s``: the two can differ in the last bit, which flips
the rounding of half-way points such as a group's negative extreme at ``-(2^b - 1)/2``
steps), so the quantised weights, inputs and outputs agree bit for bit.

- :func:`torchao_linear`: torchao's ``FakeQuantizedLinear`` with the weights and config of a
  :class:`~qat_scaling.quant_linear.QuantLinear`
- :func:`compare`: our and torchao's quantised weights and inputs of one layer on a batch
- :func:`parity_table`: :func:`compare` at W4A4 / W8A8 and several G, on Gaussian and
  heavy-tailed (Student t, 3 dof) inputs (the ``reproduce`` anchor table)
"""

from __future__ import annotations

import torch

from .quant_linear import QuantLinear

__all__ = ["compare", "parity_table", "torchao_available", "torchao_linear"]


def torchao_available() -> bool:
    """Whether torchao (the ``bench`` extra) can be imported."""
    try:
        import torchao.quantization.qat  # noqa: F401
    except ImportError:
        return False
    return True


def _config(bits: int, group_size: int):
    from torchao.quantization.qat import IntxFakeQuantizeConfig

    if bits == 16:
        return None
    dtype = getattr(torch, f"int{bits}")
    return IntxFakeQuantizeConfig(dtype, group_size=group_size, is_symmetric=True)


def torchao_linear(layer: QuantLinear):
    """torchao's ``FakeQuantizedLinear`` equivalent to ``layer`` (weights copied).

    Only the ``torchao`` scale rule without rotation has a torchao counterpart.
    """
    from torchao.quantization.qat.linear import FakeQuantizedLinear

    wq, aq = layer.weight_quantizer, layer.input_quantizer
    if wq.scale_rule != "torchao" or layer.rotate:
        raise ValueError(
            "only scale_rule='torchao' without rotation has a torchao counterpart, got "
            f"scale_rule={wq.scale_rule!r}, rotate={layer.rotate}"
        )
    ref = FakeQuantizedLinear(
        layer.in_features,
        layer.out_features,
        bias=layer.bias is not None,
        activation_config=_config(aq.bits, aq.group_size),
        weight_config=_config(wq.bits, wq.group_size),
    )
    with torch.no_grad():
        ref.weight.copy_(layer.weight)
        if layer.bias is not None:
            ref.bias.copy_(layer.bias)
    return ref


def _mismatched(ours: torch.Tensor, theirs: torch.Tensor) -> str:
    return f"{int((ours != theirs).sum())}/{ours.numel()}"


def compare(layer: QuantLinear, x: torch.Tensor) -> dict:
    """Quantised weight, quantised input and output of ``layer`` against torchao's, on ``x``.

    Args:
        layer: A :class:`QuantLinear` with ``scale_rule="torchao"``.
        x: Inputs ``(N, in_features)``.

    Returns:
        ``weight`` / ``input``: mismatched entries of the quantised tensors (``"k/n"``);
        ``output_max_abs_diff``.
    """
    if x.dim() != 2 or x.shape[1] != layer.in_features:
        raise ValueError(f"x must be (N, {layer.in_features}), got {tuple(x.shape)}")
    ref = torchao_linear(layer)
    with torch.no_grad():
        w_ours = layer.quantized_weight()
        w_ref = ref.weight_fake_quantizer(ref.weight) if ref.weight_fake_quantizer else ref.weight
        x_ours = layer.quantize_input(x)
        x_ref = ref.activation_fake_quantizer(x) if ref.activation_fake_quantizer else x
        y_ours, y_ref = layer(x), ref(x)
    return {
        "weight": _mismatched(w_ours, w_ref),
        "input": _mismatched(x_ours, x_ref),
        "output_max_abs_diff": float((y_ours - y_ref).abs().max()),
    }


def parity_table(groups, seed: int = 0, features: int = 256, rows: int = 512):
    """Our fake quantisers vs torchao's on Gaussian and Student t (3 dof) inputs, as a table.

    Args:
        groups: Group sizes G to check (each must divide ``features``).
        seed: Seed of the inputs and the layers' weights.
        features: Square layer size.
        rows: Input rows.

    Returns:
        A :class:`~icml26_shared.results.Table`, one row per (bits, G, input).
    """
    from icml26_shared.results import Table

    table = Table(
        "Anchor: our fake quantisers vs torchao's FakeQuantizedLinear (scale_rule='torchao')",
        ["bits", "G", "input", "weight mismatched", "input mismatched", "output max |diff|"],
        notes=(
            f"A {features} x {features} layer (Kaiming-uniform weights) on {rows} input rows; "
            "mismatched = entries whose quantised value differs from torchao's "
            "(IntxFakeQuantizer, symmetric per-group weights and per-token per-group "
            "activations). Same convention: s = absmax / ((2^b - 1)/2), integers in "
            "[-2^(b-1), 2^(b-1) - 1]."
        ),
    )  # fmt: skip
    torch.manual_seed(seed)
    inputs = {
        "Gaussian": torch.randn(rows, features),
        "Student t (3)": torch.distributions.StudentT(3.0).sample((rows, features)),
    }
    for bits in (4, 8):
        for G in groups:
            layer = QuantLinear(features, features, w_bits=bits, a_bits=bits, group_size=G,
                                scale_rule="torchao")  # fmt: skip
            for name, x in inputs.items():
                r = compare(layer, x)
                table.add_row(**{
                    "bits": f"W{bits}A{bits}", "G": G, "input": name,
                    "weight mismatched": r["weight"], "input mismatched": r["input"],
                    "output max |diff|": r["output_max_abs_diff"],
                })  # fmt: skip
    return table
