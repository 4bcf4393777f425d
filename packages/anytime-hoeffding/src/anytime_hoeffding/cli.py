"""Command line of anytime-hoeffding: ``anytime-hoeffding --help``.

``fit/validate/test/predict`` (LightningCLI on :class:`StreamLearnerModule` /
:class:`StreamDataModule`), ``reproduce``, and the package commands ``benchmark``,
``null-check``, ``evaluate`` and ``inspect``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def benchmark(
    n_tree: int = 50_000, n_river_tree: int = 20_000, n_forest: int = 5_000, repeats: int = 3,
    seed: int = 0, out: Path | None = None,
) -> None:  # fmt: skip
    """Learning throughput of our tree and ARF(10) against river's on the same stream.

    Args:
        n_tree: Instances for our single tree.
        n_river_tree: Instances for river's Hoeffding tree (slower; same stream prefix).
        n_forest: Instances for both forests.
        repeats: Timed repeats (median reported).
        seed: Stream seed.
        out: Optional folder for benchmark.json and benchmark.md.
    """
    from icml26_shared.results import atomic_write_text, ensure_writable_dir

    from .benchmark import throughput_table

    for name, v in (("n_tree", n_tree), ("n_river_tree", n_river_tree), ("n_forest", n_forest),
                    ("repeats", repeats)):  # fmt: skip
        if v < 1:
            raise UsageError(f"{name} must be >= 1, got {v}")
    if out is not None:
        ensure_writable_dir(out)
    table = throughput_table(n_tree, n_river_tree, n_forest, repeats, seed)
    print(table.to_markdown())
    if out is not None:
        atomic_write_text(Path(out) / "benchmark.md", table.to_markdown() + "\n")
        atomic_write_text(Path(out) / "benchmark.json", json.dumps(table.to_dict(), indent=2))


def null_check(
    stream: str = "noise", method: str = "ours", runs: int = 100, n: int = 10_000,
    alpha: float = 0.05, alpha_spending: str = "tree", loss: str = "brier",
    betting: str = "agrapa", bet_cap: float = 0.5, n_bins: int = 16, seed: int = 0,
) -> None:  # fmt: skip
    """Monte Carlo false-split rate on a null stream (with a Clopper-Pearson interval).

    Args:
        stream: Null stream: 'noise' or 'drifting_prior'.
        method: 'ours', 'ours ARF(10)' or an anchor ('river HT', 'river HT (tau=0)', ...).
        runs: Independent streams.
        n: Instances per stream.
        alpha: Level of our tree (the tree options are ignored by the anchors).
        alpha_spending: 'tree' (P(any false split) <= alpha) or 'node'.
        loss: 'brier', 'zero_one' or 'log'.
        betting: 'agrapa', 'ons' or 'mixture'.
        bet_cap: Bet cap in (0, 1).
        n_bins: Bins per feature (>= 2).
        seed: Seed of the first stream.
    """
    from .anchors import make_method
    from .prequential import false_split_rate
    from .streams import drifting_prior, noise

    makers = {"noise": noise, "drifting_prior": drifting_prior}
    if stream not in makers:
        raise UsageError(f"stream must be one of {sorted(makers)} (a null stream), got {stream!r}")
    if runs < 1 or n < 1:
        raise UsageError("runs and n must be >= 1")
    params = {}
    if method.startswith("ours"):
        params = dict(alpha=alpha, alpha_spending=alpha_spending, loss=loss, betting=betting,
                      bet_cap=bet_cap, n_bins=n_bins)  # fmt: skip
    make_method(method, 10, 2, **params)  # validate the method and its options up front
    r = false_split_rate(method, lambda sd: makers[stream](n, seed=sd), runs, seed, **params)
    print(
        f"{method} on {stream}: {r.n_split}/{r.runs} runs split "
        f"(rate {r.rate:.3f}, 95% CI [{r.low:.3f}, {r.high:.3f}]), mean nodes {r.mean_nodes:.1f}"
    )


def _read_csv(path: Path, label: str | None):
    import numpy as np

    from .streams import Stream

    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise UsageError(f"{path}: expected a header row and at least one data row")
    header, body = rows[0], [r for r in rows[1:] if r]
    for i, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise UsageError(
                f"{path}: line {i} has {len(r)} fields but the header has {len(header)}"
            )
    col = len(header) - 1 if label is None else (header.index(label) if label in header else -1)
    if col < 0:
        raise UsageError(f"{path}: no column named {label!r}; columns are {header}")
    try:
        X = np.array([[float(v) for i, v in enumerate(r) if i != col] for r in body])
    except ValueError as exc:
        raise UsageError(f"{path}: non-numeric feature value ({exc})") from None
    labels = [r[col] for r in body]
    uniq = sorted(set(labels))
    y = np.array([uniq.index(v) for v in labels], dtype=np.int64)
    return Stream(path.stem, X, y, len(uniq))


def evaluate(
    stream: str = "sea", n: int = 20_000, methods: list[str] | None = None,
    csv_path: Path | None = None, label: str | None = None, missing: str = "error",
    seed: int = 0,
) -> None:  # fmt: skip
    """Prequential accuracy, kappa and size of ours and anchors on a named stream or a CSV.

    Args:
        stream: Named stream (sea, agrawal, hyperplane, rbf, rbf_drift, led, led_drift,
            stagger, phishing, bananas, image_segments, shuttle, digits, elec2, covtype, airlines,
            noise, ...).
        n: Instances (at most).
        methods: Methods to run (default: ours and river HT).
        csv_path: CSV file with a header row (numeric features); replaces --stream.
        label: Label column of the CSV (default: the last one).
        missing: 'error' (NaN/inf features are rejected) or 'route' (our learners send NaN
            left; river's anchors do not accept missing values).
        seed: Stream and learner seed.
    """
    import numpy as np

    from .anchors import make_method
    from .prequential import prequential
    from .streams import make_stream

    if n < 1:
        raise UsageError(f"n must be >= 1, got {n}")
    s = _read_csv(Path(csv_path), label) if csv_path is not None else make_stream(stream, n, seed)
    methods = methods or ["ours", "river HT"]
    params = {"missing": missing}
    built = [make_method(m, s.X.shape[1], s.n_classes, seed=seed,
                         **(params if m.startswith("ours") else {})) for m in methods]  # fmt: skip
    if not np.isfinite(s.X).all():
        if missing == "error":
            raise UsageError(
                f"{s.name}: the features contain NaN or inf values; pass --missing route "
                "to route them (our learners only)"
            )
        anchors = [m for m in methods if not m.startswith("ours")]
        if anchors:
            raise UsageError(
                f"{s.name}: the features contain NaN or inf values, which river's anchors "
                f"{anchors} do not accept; run them on complete data"
            )
    for m, model in zip(methods, built, strict=True):
        r = prequential(model, s)
        print(
            f"{s.name:>16} | {m:>16} | acc {r.accuracy:.4f} | kappa {r.kappa:.4f} | "
            f"nodes {r.n_nodes:4d} | first split {r.first_split} | {r.inst_per_s:,.0f} inst/s"
        )


def inspect(
    stream: str = "planted_tree", n: int = 20_000, alpha: float = 0.05,
    alpha_spending: str = "tree", loss: str = "brier", betting: str = "agrapa",
    bet_cap: float = 0.5, n_bins: int = 16, seed: int = 0, export: Path | None = None,
) -> None:  # fmt: skip
    """Grow our tree on a stream, print it and its split log (optionally export as JSON).

    Args:
        stream: Named stream.
        n: Instances.
        alpha: Level of the tree.
        alpha_spending: 'tree' or 'node'.
        loss: 'brier', 'zero_one' or 'log'.
        betting: 'agrapa', 'ons' or 'mixture'.
        bet_cap: Bet cap in (0, 1).
        n_bins: Bins per feature (>= 2).
        seed: Stream seed.
        export: Optional JSON file for the tree structure and split log.
    """
    from icml26_shared.results import atomic_write_text

    from .streams import make_stream
    from .tree import AnytimeHoeffdingTreeClassifier

    tree = AnytimeHoeffdingTreeClassifier(
        alpha=alpha, alpha_spending=alpha_spending, loss=loss, betting=betting,
        bet_cap=bet_cap, n_bins=n_bins, seed=seed,
    )  # fmt: skip
    s = make_stream(stream, n, seed)
    tree.learn_many(s.X, s.y)
    print(tree.describe())
    for e in tree.split_log:
        print(
            f"t={e['t']:>7} node={e['node']:>4} depth={e['depth']} feature={e['feature']} "
            f"threshold={e['threshold']:.4g} e-value={e['e_value']:.3g}"
        )
    if export is not None:
        payload = {"tree": tree.to_dict(), "split_log": tree.split_log}
        atomic_write_text(Path(export), json.dumps(payload, indent=2, default=float))


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="anytime_hoeffding.lightning:StreamLearnerModule",
        datamodule_class="anytime_hoeffding.lightning:StreamDataModule",
        commands={
            "benchmark": "anytime_hoeffding.cli:benchmark",
            "null-check": "anytime_hoeffding.cli:null_check",
            "evaluate": "anytime_hoeffding.cli:evaluate",
            "inspect": "anytime_hoeffding.cli:inspect",
        },  # fmt: skip
        trainer_defaults={
            "max_epochs": 1,
            "num_sanity_val_steps": 0,
            "logger": False,
            "enable_checkpointing": False,
        },  # fmt: skip
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``anytime-hoeffding`` console script."""
    return build_cli().main(args)
