"""Rate-distortion curves of one synthetic layer: every method against the IT limit.

Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), the claim behind benchmark (a): for
Gaussian weights W (a x n, i.i.d. N(0, 1)) and an input second moment Sigma with eigenvalues
lambda_i, the Gaussian reverse-waterfilling limit R_IT(D) (:func:`watersic.theory.rate_gap`)
is the least rate any code can reach at distortion D. WaterSIC stays within
1/2 log2(pi e / 6) ~= 0.2546 bits of it at high rate whatever Sigma is; Huffman-GPTQ's gap is
0.2546 + 1/2 log2(AM/GM) of the squared Cholesky diagonal (unbounded); the fixed grids (GPTQ,
RTN, and the HQQ / optimum-quanto anchors) pay log-cardinality.

* :func:`rd_rows` -- one layer, one target rate: a row per method (rate, side information,
  real bitstream size, distortion in dB, gap, predicted gap);
* :func:`rd_table` -- those rows over spectra and rates, as the report's table;
* :func:`rd_figure` -- gap against rate, one panel per spectrum.

``watersic rd-curve`` prints :func:`rd_rows`; nothing here imports Lightning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import torch
from icml26_shared.results import Table

from watersic import anchors, theory
from watersic.gptq import gptq_quantize, huffman_gptq
from watersic.layer_quantizer import quantize_matrix
from watersic.rtn import rtn_quantize
from watersic.synthetic import eigenvalues, gaussian_weights, spectrum_covariance

__all__ = ["RD_COLUMNS", "rd_figure", "rd_rows", "rd_table"]

RD_COLUMNS = ["spectrum", "target", "method", "rate", "side", "coded_rate", "D_dB", "gap",
              "gap_total", "predicted_gap"]  # fmt: skip
_UNITS = {"rate": "bits/w", "side": "bits/w", "coded_rate": "bits/w", "D_dB": "dB",
          "gap": "bits", "gap_total": "bits", "predicted_gap": "bits"}  # fmt: skip
_NOTES = (
    "rate: bits per weight with side information (entropy of the codes for WaterSIC and "
    "Huffman-GPTQ, b bits for fixed grids) plus scales/zeros/indices; side: that side "
    "information; coded_rate: size of the real ANS bitstream (constriction); D_dB: "
    "10 log10 of E||Wx - What x||^2 / E||Wx||^2; gap: (rate - side) - R_IT(D), the "
    "code's distance to the Gaussian reverse-waterfilling limit; gap_total: the same "
    "with everything stored (coded_rate where there is a bitstream); predicted_gap: "
    "0.2546 bits for WaterSIC, 0.2546 + 1/2 log2(AM/GM) for Huffman-GPTQ (high-rate "
    "theory)."
)


def _db(x: float) -> float:
    return 10 * math.log10(x) if x > 0 else float("-inf")


def rd_rows(
    spectrum: str, rate: int, a: int, n: int, seed: int = 0, with_anchors: bool = True
) -> list[dict]:
    """Every method on one synthetic ``a x n`` layer at target ``rate`` bits: one row each.

    Args:
        spectrum: Covariance family of :func:`watersic.synthetic.spectrum_covariance`.
        rate: Target bits per weight (entropy methods) and grid bits (fixed grids).
        a, n: Output and input features of the layer.
        seed: Seed of W and of the covariance.
        with_anchors: Add the HQQ / optimum-quanto rows when installed.

    Returns:
        Dicts with the keys :data:`RD_COLUMNS`.
    """
    g = torch.Generator().manual_seed(seed)
    W = gaussian_weights(a, n, g)
    S = spectrum_covariance(spectrum, n, g)
    lam = eigenvalues(S)
    numel = a * n
    rows: list[dict] = []

    def row(method, q, side_bits_pw, coded=None, predicted=None):
        code_rate = q.rate - side_bits_pw
        total = coded if coded is not None else q.rate
        rows.append(
            {"spectrum": spectrum, "target": rate, "method": method, "rate": q.rate,
             "side": side_bits_pw, "coded_rate": coded, "D_dB": _db(q.relative_distortion),
             "gap": theory.rate_gap(code_rate, q.distortion, lam),
             "gap_total": theory.rate_gap(total, q.distortion, lam), "predicted_gap": predicted}
        )  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rate-search resolution warnings at tiny sizes
        for acc in ("pooled", "per_column"):
            q = quantize_matrix(W, S, rate=float(rate), accounting=acc)
            coded = q.coded_rate("per_column") if acc == "per_column" else None
            row(f"watersic ({acc.replace('_', '-')})", q, q.side_bits / numel, coded,
                theory.WATERSIC_HIGH_RATE_GAP)  # fmt: skip
        h = huffman_gptq(W, S, rate=float(rate))
        row("huffman-gptq", h, h.side_bits / numel, h.coded_rate("pooled"),
            theory.predicted_huffman_gptq_gap(S, damping=0.01))  # fmt: skip
        for gs, label in ((None, "gptq (per row)"), (min(128, n), f"gptq (g{min(128, n)})")):
            q = gptq_quantize(W, S, bits=rate, group_size=gs)
            row(label, q, q.rate - rate)
        q = rtn_quantize(W, S, bits=rate)
        row("rtn (per row)", q, q.rate - rate)
        gs = min(64, n)
        if with_anchors and anchors.supports("hqq", rate):
            q = anchors.hqq_quantize(W, S, bits=rate, group_size=gs)
            row(f"hqq (g{gs}, anchor)", q, q.rate - rate)
        if with_anchors and anchors.supports("quanto", rate):
            q = anchors.quanto_quantize(W, S, bits=rate)
            row(f"quanto (g{q.group_size}, anchor)", q, q.rate - rate)
    return rows


def rd_table(
    spectra: Sequence[str], rates: Sequence[int], a: int, n: int, seed: int = 0,
    with_anchors: bool = True,
) -> Table:  # fmt: skip
    """:func:`rd_rows` over ``spectra`` x ``rates``: the gap-to-the-limit table of benchmark (a)."""
    table = Table(
        f"(a) Synthetic layers: gap to the Gaussian rate-distortion limit (W ~ N(0,1), {a}x{n})",
        RD_COLUMNS, units=_UNITS, notes=_NOTES,
    )  # fmt: skip
    for spectrum in spectra:
        for rate in rates:
            table.extend(rd_rows(spectrum, rate, a, n, seed, with_anchors))
    return table


def rd_figure(table: Table, spectra: Sequence[str]):
    """Gap to R(D) against rate, one panel per spectrum (dotted: WaterSIC's 0.255 bits)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(4, len(spectra))
    rows = math.ceil(len(spectra) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    methods = list(dict.fromkeys(r["method"] for r in table.rows))
    for ax, spectrum in zip(axes.flat, spectra, strict=False):
        for m in methods:
            pts = [(r["rate"], r["gap"]) for r in table.rows
                   if r["spectrum"] == spectrum and r["method"] == m]  # fmt: skip
            if pts:
                xs, ys = zip(*pts, strict=True)
                ax.plot(xs, ys, "o-", label=m, ms=3)
        ax.axhline(theory.WATERSIC_HIGH_RATE_GAP, color="k", ls=":", lw=1)
        ax.set_title(spectrum)
        ax.set_xlabel("bits / weight")
        ax.set_ylabel("gap to R(D) (bits)")
        ax.set_yscale("symlog", linthresh=1)
    for ax in list(axes.flat)[len(spectra) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=6)
    fig.suptitle("Gap to the information-theoretic limit (dotted: 0.255 bits)")
    return fig
