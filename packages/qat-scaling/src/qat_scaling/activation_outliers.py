"""Input outliers of the linear layers: the FC2 (down_proj) input as the activation bottleneck.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (the
activation part of the W4A4 error is dominated by the FC2 input, whose entries have heavy tails).

1. Tail weight of a layer input x: Pearson kurtosis E[(x - mu)^4] / Var(x)^2 (3 for a Gaussian)
   -> :func:`kurtosis`.
2. Per layer, averaged over blocks: kurtosis, max |x| / RMS(x) and the relative 4-bit error
   ||Q(x) - x||^2 / ||x||^2 of per-token per-group fake quantisation -> :func:`activation_statistics`.
3. The table of (2) for the FP models of a paired grid -> :func:`outlier_table`.
4. Per layer, averaged over blocks, the relative error that W-bit / A-bit per-group
   quantisation injects: into the weight ``||Q(W) - W||^2 / ||W||^2``, into the input
   ``||Q(x) - x||^2 / ||x||^2`` and into the layer's output
   ``||Q(x) Q(W)^T - x W^T||^2 / ||x W^T||^2`` -> :func:`quantisation_errors` (the check of
   whether the per-element quantisation noise at a fixed G depends on the model's width).

The layer inputs (and weights) of (2) and (4) come from one hooked forward pass,
:func:`capture_linear_inputs`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import torch
from icml26_shared.results import Table
from torch import nn

from .fake_quant import fake_quantize
from .quant_linear import LLAMA_LINEARS, QuantLinear


def kurtosis(x: torch.Tensor) -> float:
    """Pearson kurtosis E[(x - mu)^4] / var^2 of all entries (3 for a Gaussian).

    >>> round(kurtosis(torch.randn(200_000, generator=torch.Generator().manual_seed(0))), 1)
    3.0
    """
    x = x.double().flatten()
    c = x - x.mean()
    var = (c**2).mean()
    return float((c**4).mean() / var.clamp_min(1e-30) ** 2)


@torch.no_grad()
def capture_linear_inputs(
    model: nn.Module, tokens: torch.Tensor, full_precision: bool = False
) -> dict[str, list[tuple[torch.Tensor, torch.Tensor]]]:
    """``{layer name: [(input, weight) per block]}`` of every block linear layer of ``model``.

    One forward pass over ``tokens`` ``(batch, seq)`` in eval mode with forward hooks on the
    ``LLAMA_LINEARS`` of each block; inputs are captured before the layer's own quantiser.
    ``full_precision``: switch every :class:`~qat_scaling.quant_linear.QuantLinear`'s weight
    and input quantisers off during the pass, so that upstream layers are not quantised either.
    The model's mode and quantiser bits are restored afterwards.
    """
    inner = model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model
    captured: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = defaultdict(list)
    hooks, quantisers = [], []
    for block in inner.layers:
        for name in LLAMA_LINEARS:
            parent, attr = name.split(".")
            module = getattr(getattr(block, parent), attr)
            if full_precision and isinstance(module, QuantLinear):
                quantisers.append(module)
            hooks.append(
                module.register_forward_hook(
                    lambda mod, inp, out, name=name: captured[name].append(
                        (inp[0].detach(), mod.weight.detach())
                    )
                )
            )
    saved = [(q.weight_quantizer.bits, q.input_quantizer.bits) for q in quantisers]
    for q in quantisers:
        q.weight_quantizer.bits = q.input_quantizer.bits = 16
    was_training = model.training
    model.eval()
    try:
        model(input_ids=tokens) if hasattr(model, "config") else model(tokens)
    finally:
        for h in hooks:
            h.remove()
        for q, (wb, ab) in zip(quantisers, saved, strict=True):
            q.weight_quantizer.bits, q.input_quantizer.bits = wb, ab
        model.train(was_training)
    return captured


@torch.no_grad()
def activation_statistics(
    model: nn.Module, tokens: torch.Tensor, bits: int = 4, group_size: int = 32
) -> dict[str, dict[str, float]]:
    """Input statistics of every block linear layer, averaged over blocks, by layer name.

    For each of ``q/k/v/o_proj, gate/up/down_proj`` returns ``kurtosis``, ``max_over_rms``
    (max |x| / RMS of the input) and ``rel_mse`` (``||Q(x) - x||^2 / ||x||^2`` with ``bits``
    per-token per-group fake quantisation). The statistics are of the raw input (before the
    layer's own quantiser).
    """
    captured = capture_linear_inputs(model, tokens)
    stats: dict[str, dict[str, float]] = {}
    for name in LLAMA_LINEARS:
        rows = []
        for x, _ in captured[name]:
            g = group_size if x.shape[-1] % group_size == 0 else x.shape[-1]
            q = fake_quantize(x, bits, g)
            rows.append(
                (
                    kurtosis(x),
                    float(x.abs().max() / x.pow(2).mean().sqrt().clamp_min(1e-30)),
                    float((q - x).pow(2).sum() / x.pow(2).sum().clamp_min(1e-30)),
                )
            )
        k, m, r = (sum(v) / len(rows) for v in zip(*rows, strict=True))
        stats[name] = {"kurtosis": k, "max_over_rms": m, "rel_mse": r}
    return stats


def _rel(err: torch.Tensor, ref: torch.Tensor) -> float:
    return float(err.double().pow(2).sum() / ref.double().pow(2).sum().clamp_min(1e-30))


@torch.no_grad()
def quantisation_errors(
    model: nn.Module,
    tokens: torch.Tensor,
    bits: int = 4,
    group_size: int = 16,
    scale_rule: str = "absmax",
) -> dict[str, dict[str, float]]:
    """Relative quantisation error of every block linear layer, averaged over blocks.

    The layer inputs are captured in a full-precision forward pass of ``model`` (the layers'
    own quantisers, if any, are not applied to the captured inputs); each layer is then
    quantised in isolation, as the paper's W4A4 scheme does (per-group weights along
    ``in_features``, dynamic per-token per-group inputs, one ``group_size`` for both).

    Args:
        model: A Llama-style model (or a :class:`~qat_scaling.lightning.QATLanguageModel`'s
            ``model``) with plain or :class:`~qat_scaling.quant_linear.QuantLinear` layers.
        tokens: Input ids ``(batch, seq)``.
        bits: Bits of weights and inputs.
        group_size: G; a layer whose input width G does not divide uses one group per row.
        scale_rule: ``absmax`` or ``torchao`` (:func:`qat_scaling.fake_quant.fake_quantize`).

    Returns:
        ``{layer: {"weight": ..., "input": ..., "output": ...}}``: the relative squared errors
        ``||Q(W) - W||^2 / ||W||^2``, ``||Q(x) - x||^2 / ||x||^2`` and
        ``||Q(x) Q(W)^T - x W^T||^2 / ||x W^T||^2`` (no bias), means over blocks.

    Reference: Chen et al., "Scaling Law for Quantization-Aware Training", arXiv 2505.14302
    (per-group W4A4 fake quantisation of every linear layer in the blocks).

    Examples:
        >>> from qat_scaling.tiny_llama import tiny_llama
        >>> m = tiny_llama(16, 1, 32, 2, vocab_size=256, max_seq_len=8, seed=0)
        >>> e = quantisation_errors(m, torch.randint(0, 256, (2, 8)), bits=4, group_size=16)
        >>> sorted(e["mlp.down_proj"])
        ['input', 'output', 'weight']
        >>> 0 < e["mlp.down_proj"]["weight"] < 0.05
        True
    """
    captured = capture_linear_inputs(model, tokens, full_precision=True)
    out: dict[str, dict[str, float]] = {}
    for name in LLAMA_LINEARS:
        rows = []
        for x, w in captured[name]:
            g = group_size if x.shape[-1] % group_size == 0 else x.shape[-1]
            qx = fake_quantize(x, bits, g, scale_rule)
            qw = fake_quantize(w, bits, g, scale_rule)
            y = x @ w.T
            rows.append((_rel(qw - w, w), _rel(qx - x, x), _rel(qx @ qw.T - y, y)))
        wr, xr, yr = (sum(v) / len(rows) for v in zip(*rows, strict=True))
        out[name] = {"weight": wr, "input": xr, "output": yr}
    return out


def outlier_table(records: Sequence[Mapping], seed: int = 0) -> Table:
    """Input statistics of each linear layer of the FP runs of a grid (their ``act_stats``).

    One row per (size, statistic); ``records`` are :func:`qat_scaling.grid.run_grid` records,
    of which the FP runs of ``seed`` at the largest D carry ``act_stats``.
    """
    table = Table(
        "Input statistics of each linear layer (FP models, largest D, mean over blocks)",
        ["size", "stat", *[n.split(".")[-1] for n in LLAMA_LINEARS]],
        notes=(
            "kurtosis: Pearson kurtosis of the layer's input entries (3 = Gaussian); max/RMS; "
            "A4 rel. MSE: ||Q(x) - x||^2 / ||x||^2 for 4-bit per-token per-group quantisation "
            "at the grid's largest G. q/k/v share one input (after the attention norm), gate/up "
            "another; down_proj's input is the SwiGLU product silu(gate) * up (FC2 input)."
        ),
    )
    for r in records:
        if r["scheme"] != "FP" or r["seed"] != seed or "act_stats" not in r:
            continue
        for stat, label in (
            ("kurtosis", "kurtosis"),
            ("max_over_rms", "max/RMS"),
            ("rel_mse", "A4 rel. MSE"),
        ):
            table.add_row(
                size=r["size"],
                stat=label,
                **{n.split(".")[-1]: r["act_stats"][n][stat] for n in LLAMA_LINEARS},
            )
    return table
