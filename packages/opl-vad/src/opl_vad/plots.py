"""Figures of ``opl-vad reproduce`` (matplotlib, Agg backend).

Paper: Wang et al., ICML 2026.

- :func:`tradeoff_figure`: frame AUC against face-probe accuracy (lower = more private) for
  G-OPL over its face-loss weight and G-OPL+C over its contrast weight
  (:func:`opl_vad.comparison.weight_sweep_table`), with the other methods' MIL rows of the
  same seed as reference points (:func:`opl_vad.comparison.planted_table`).
"""

from __future__ import annotations

from collections.abc import Sequence


def tradeoff_figure(points: dict[str, list], reference_rows: Sequence[dict]):
    """The privacy-utility trade-off plot; ``reference_rows`` are result rows (one per method)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for method, label, style in (("G-OPL", "G-OPL (face weight)", "o-"),
                                 ("G-OPL+C", "G-OPL+C (contrast weight)", "^-")):  # fmt: skip
        pts = points[method]
        ax.plot([p[2] for p in pts], [p[1] for p in pts], style, label=label)
        for w, auc, probe in pts:
            ax.annotate(f"{w:g}", (probe, auc), textcoords="offset points", xytext=(4, 4))
    for r in reference_rows:
        ax.plot(r["face_probe_acc"], r["auc"], "s", label=r["method"])
    ax.set_xlabel("face-probe accuracy (lower = more private)")
    ax.set_ylabel("frame AUC")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
