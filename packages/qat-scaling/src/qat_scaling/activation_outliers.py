"""Input outliers of the linear layers: the FC2 (down_proj) input as the activation bottleneck.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (the
activation part of the W4A4 error is dominated by the FC2 input, whose entries have heavy tails).

1. Tail weight of a layer input x: Pearson kurtosis E[(x - mu)^4] / Var(x)^2 (3 for a Gaussian)
   -> :func:`kurtosis`.
2. Per layer, averaged over blocks: kurtosis, max |x| / RMS(x) and the relative 4-bit error
   ||Q(x) - x||^2 / ||x||^2 of per-token per-group fake quantisation -> :func:`activation_statistics`.
3. The table of (2) for the FP models of a paired grid -> :func:`outlier_table`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import torch
from icml26_shared.results import Table
from torch import nn

from .fake_quant import fake_quantize
from .quant_linear import LLAMA_LINEARS


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
def activation_statistics(
    model: nn.Module, tokens: torch.Tensor, bits: int = 4, group_size: int = 32
) -> dict[str, dict[str, float]]:
    """Input statistics of every block linear layer, averaged over blocks, by layer name.

    For each of ``q/k/v/o_proj, gate/up/down_proj`` returns ``kurtosis``, ``max_over_rms``
    (max |x| / RMS of the input) and ``rel_mse`` (``||Q(x) - x||^2 / ||x||^2`` with ``bits``
    per-token per-group fake quantisation). The statistics are of the raw input (before the
    layer's own quantiser).
    """
    inner = model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model
    captured: dict[str, list[torch.Tensor]] = defaultdict(list)
    hooks = []
    for block in inner.layers:
        for name in LLAMA_LINEARS:
            parent, attr = name.split(".")
            module = getattr(getattr(block, parent), attr)
            hooks.append(
                module.register_forward_hook(
                    lambda mod, inp, out, name=name: captured[name].append(inp[0].detach())
                )
            )
    was_training = model.training
    model.eval()
    try:
        model(input_ids=tokens) if hasattr(model, "config") else model(tokens)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    stats: dict[str, dict[str, float]] = {}
    for name in LLAMA_LINEARS:
        rows = []
        for x in captured[name]:
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
