"""What ``asymp-gda solve --out DIR`` writes: the strategies, the exploitability trace, a plot.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026. The paper's quality measure is NashConv (the duality gap,
Sec. 2): ``max_j (A^T x)_j - min_i (A y)_i`` for matrix games, the sum of both best-response
gains in sequence form. A solution is ``converged`` exactly when its reported NashConv is
``<= eps`` -- for every method and every ``side`` (:func:`solution_record`).

Files (all written atomically, so an interrupted run leaves no partial file):

- ``result.json`` -- game, method, settings, ``nash_conv``, ``eps``, ``converged``;
- ``strategies.json`` -- ``x`` and ``y`` (matrix games: mixed strategies of the row and the
  column player; OpenSpiel games: the behavioural policy per information state);
- ``trace.json`` -- ``{"updates": [...], "nash_conv": [...]}`` (strategy updates, NashConv);
- ``convergence.png`` -- NashConv against strategy updates, log scale.

- :func:`solution_record` -- the ``result.json`` content;
- :func:`write_solution` -- all four files.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["solution_record", "write_solution"]


def solution_record(nash_conv: float, eps: float, **settings) -> dict:
    """``result.json``: the settings, ``nash_conv`` and ``converged = nash_conv <= eps``.

    Examples
    --------
    >>> solution_record(3e-7, 1e-6, method="param_free")["converged"]
    True
    >>> solution_record(1.4e-8, 1e-8, method="asymp", side="both")["converged"]
    False
    """
    nash_conv, eps = float(nash_conv), float(eps)
    return {**settings, "nash_conv": nash_conv, "eps": eps, "converged": nash_conv <= eps}


def write_solution(
    out: str | Path, record: dict, strategies: dict, updates: list[int], nash_conv: list[float]
) -> Path:
    """Write ``result.json``, ``strategies.json``, ``trace.json`` and ``convergence.png`` to ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import atomic_write_figure, atomic_write_text, ensure_writable_dir

    out = ensure_writable_dir(out)
    trace = {"updates": [int(u) for u in updates], "nash_conv": [float(v) for v in nash_conv]}
    atomic_write_text(out / "trace.json", json.dumps(trace, indent=1) + "\n")
    atomic_write_text(out / "strategies.json", json.dumps(strategies, indent=1) + "\n")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(trace["updates"], [max(v, 1e-16) for v in trace["nash_conv"]])
    ax.axhline(record["eps"], color="grey", ls=":", label=f"eps = {record['eps']:g}")
    ax.set_yscale("log")
    ax.set_xlabel("strategy updates")
    ax.set_ylabel("NashConv")
    ax.set_title(f"{record.get('game', '')}: {record.get('method', '')}")
    ax.legend(fontsize=8)
    atomic_write_figure(out / "convergence.png", fig, dpi=110)
    atomic_write_text(out / "result.json", json.dumps(record, indent=1) + "\n")
    return out
