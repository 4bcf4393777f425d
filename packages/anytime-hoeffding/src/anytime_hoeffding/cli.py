"""Command line of anytime-hoeffding: ``anytime-hoeffding --help``.

``fit/validate/test/predict`` (LightningCLI on :class:`StreamLearnerModule` /
:class:`StreamDataModule`), ``reproduce``, and the package commands ``benchmark``,
``null-check``, ``evaluate`` and ``inspect``.
"""

from __future__ import annotations

import json
import sys
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


def evaluate(
    stream: str = "sea", n: int = 20_000, methods: list[str] | None = None,
    csv: Path | None = None, arff: Path | None = None, target: str | None = None,
    missing: str = "error", seed: int = 0, save: Path | None = None, out: Path | None = None,
) -> None:  # fmt: skip
    """Prequential (test-then-train) accuracy, kappa and size of ours and anchors on a stream.

    Args:
        stream: Named stream (sea, agrawal, hyperplane, rbf, rbf_drift, led, led_drift,
            stagger, phishing, bananas, image_segments, shuttle, digits, elec2, covtype, airlines,
            noise, ...); replaced by --csv/--arff.
        n: Instances (at most).
        methods: Methods to run (default: ours and river HT).
        csv: CSV file with a header row, read in file order (numeric features; empty cells
            are missing values).
        arff: ARFF file (nominal features become integer codes); instead of --csv.
        target: Label column of the file (default: the last one).
        missing: 'error' (missing/NaN features are rejected) or 'route' (our learners send
            them left; river's anchors do not accept missing values).
        seed: Stream and learner seed.
        save: Save our fitted tree here (a pickle for 'predict --model' and 'inspect --model').
        out: Folder for result.json, results.md and prequential.png.
    """
    import numpy as np
    from icml26_shared.results import (
        Table,
        atomic_write_figure,
        atomic_write_text,
        ensure_writable_dir,
    )

    from .anchors import make_method
    from .prequential import prequential
    from .streams import make_stream
    from .tabular import SavedModel, TableError, read_table, save_model

    if n < 1:
        raise UsageError(f"n must be >= 1, got {n}")
    if csv is not None and arff is not None:
        raise UsageError("give --csv or --arff, not both")
    if missing not in ("error", "route"):
        raise UsageError(f"missing must be 'error' or 'route', got {missing!r}")
    methods = methods or ["ours", "river HT"]
    if save is not None and not any(m == "ours" for m in methods):
        raise UsageError("--save saves the 'ours' tree: include 'ours' in --methods")
    if out is not None:
        ensure_writable_dir(out)
    table = None
    path = csv if csv is not None else arff
    if path is not None:
        try:
            s, table = read_table(path, target)
        except TableError as exc:
            raise UsageError(str(exc)) from None
        if len(s) > n:
            s = type(s)(s.name, s.X[:n], s.y[:n], s.n_classes)
    else:
        s = make_stream(stream, n, seed)
    params = {"missing": missing}
    built = [make_method(m, s.X.shape[1], s.n_classes, seed=seed,
                         **(params if m.startswith("ours") else {})) for m in methods]  # fmt: skip
    if not np.isfinite(s.X).all():
        if missing == "error":
            raise UsageError(
                f"{s.name}: the features contain missing (empty, NaN) or infinite values; pass "
                "--missing route to route them (our learners only)"
            )
        anchors = [m for m in methods if not m.startswith("ours")]
        if anchors:
            raise UsageError(
                f"{s.name}: the features contain missing values, which river's anchors "
                f"{anchors} do not accept: pass --methods '[ours]' or complete the data"
            )
    rows = Table(
        f"Prequential evaluation on {s.name}",
        [
            "stream",
            "method",
            "instances",
            "accuracy",
            "kappa",
            "nodes",
            "depth",
            "first_split",
            "inst_per_s",
        ],  # fmt: skip
        units={"inst_per_s": "1/s"},
        notes="Test-then-train, instance by instance, in file (stream) order.",
    )
    curves = {}
    for m, model in zip(methods, built, strict=True):
        r = prequential(model, s)
        curves[m] = r
        print(
            f"{s.name:>16} | {m:>16} | acc {r.accuracy:.4f} | kappa {r.kappa:.4f} | "
            f"nodes {r.n_nodes:4d} | first split {r.first_split} | {r.inst_per_s:,.0f} inst/s"
        )
        rows.add_row(stream=s.name, method=m, instances=len(s), accuracy=r.accuracy,
                     kappa=r.kappa, nodes=r.n_nodes, depth=r.depth, first_split=r.first_split,
                     inst_per_s=r.inst_per_s)  # fmt: skip
    if save is not None:
        ours = built[methods.index("ours")].model
        if table is not None:
            ours.feature_names_ = list(table.features)
            saved = SavedModel(ours, list(table.features), table.target,
                               sorted(set(table.labels)), table.categories, str(Path(path).name))  # fmt: skip
        else:
            names = [f"x{j}" for j in range(s.X.shape[1])]
            ours.feature_names_ = names
            saved = SavedModel(ours, names, "y", [str(k) for k in range(s.n_classes)],
                               source=f"stream {stream}")  # fmt: skip
        save_model(save, saved)
        print(f"saved our tree to {save}")
    if out is not None:
        from .plots import prequential_figure

        out = Path(out)
        atomic_write_text(out / "result.json", json.dumps(rows.to_dict(), indent=2))
        atomic_write_text(out / "results.md", rows.to_markdown() + "\n")
        fig = prequential_figure({s.name: curves}, {s.name: s.drifts})
        atomic_write_figure(out / "prequential.png", fig, dpi=110)
        print(f"wrote {out / 'result.json'}, {out / 'results.md'}, {out / 'prequential.png'}")


def predict_csv(
    model: Path, csv: Path | None = None, arff: Path | None = None, out: Path | None = None,
) -> None:  # fmt: skip
    """Apply a tree saved by 'evaluate --save' to a new file: predictions and probabilities.

    Args:
        model: Model file written by 'evaluate --save'.
        csv: CSV file with the model's feature columns (any order; other columns ignored).
        arff: ARFF file instead of --csv.
        out: Output CSV (columns: prediction, then one probability per label); default: stdout.
    """
    import csv as csvlib
    import io

    import numpy as np
    from icml26_shared.results import atomic_write_text

    from .tabular import TableError, load_model, read_features

    if (csv is None) == (arff is None):
        raise UsageError("give exactly one of --csv or --arff")
    try:
        saved = load_model(model)
        t = read_features(csv if csv is not None else arff, saved.features, saved.target,
                          saved.categories)  # fmt: skip
    except TableError as exc:
        raise UsageError(str(exc)) from None
    tree = saved.model
    X = t.X
    if not np.isfinite(X).all() and tree.missing == "error":
        raise UsageError(
            "the file has missing (empty, NaN) feature values and the model was fitted with "
            "--missing error; refit with 'evaluate --missing route'"
        )
    proba = tree.predict_proba_many(X)
    names = [saved.label_names[int(c)] for c in tree.classes_]
    pred = [names[k] for k in np.argmax(proba, axis=1)]
    buf = io.StringIO()
    w = csvlib.writer(buf, lineterminator="\n")
    w.writerow(["prediction", *[f"p({c})" for c in names]])
    for p, row in zip(pred, proba, strict=True):
        w.writerow([p, *[f"{v:.6g}" for v in row]])
    if out is None:
        print(buf.getvalue(), end="")
    else:
        atomic_write_text(Path(out), buf.getvalue())
        print(f"wrote {len(pred)} predictions to {out}")
    if t.labels is not None:
        acc = float(np.mean([a == b for a, b in zip(pred, t.labels, strict=True)]))
        print(f"accuracy against the file's {saved.target!r} column: {acc:.4f}", file=sys.stderr)


def inspect(
    stream: str = "planted_tree", n: int = 20_000, model: Path | None = None,
    alpha: float = 0.05, alpha_spending: str = "tree", loss: str = "brier",
    betting: str = "agrapa", bet_cap: float = 0.5, n_bins: int = 16, seed: int = 0,
    out: Path | None = None,
) -> None:  # fmt: skip
    """Print a tree and its split log: a saved model (--model) or one grown on a named stream.

    Args:
        stream: Named stream to grow a tree on (ignored with --model).
        n: Instances.
        model: Model file written by 'evaluate --save'.
        alpha: Level of the tree.
        alpha_spending: 'tree' or 'node'.
        loss: 'brier', 'zero_one' or 'log'.
        betting: 'agrapa', 'ons' or 'mixture'.
        bet_cap: Bet cap in (0, 1).
        n_bins: Bins per feature (>= 2).
        seed: Stream seed.
        out: Folder for tree.png (the drawing) and tree.json (structure and split log).
    """
    from icml26_shared.results import atomic_write_figure, atomic_write_text, ensure_writable_dir

    if out is not None:
        ensure_writable_dir(out)
    if model is not None:
        from .tabular import TableError, load_model

        try:
            saved = load_model(model)
        except TableError as exc:
            raise UsageError(str(exc)) from None
        tree = saved.model
        labels = [saved.label_names[int(c)] for c in tree.classes_]
        title = f"{Path(model).name}: {saved.target} from {saved.source}"
    else:
        from .streams import make_stream
        from .tree import AnytimeHoeffdingTreeClassifier

        tree = AnytimeHoeffdingTreeClassifier(
            alpha=alpha, alpha_spending=alpha_spending, loss=loss, betting=betting,
            bet_cap=bet_cap, n_bins=n_bins, seed=seed,
        )  # fmt: skip
        s = make_stream(stream, n, seed)
        tree.learn_many(s.X, s.y)
        labels = [str(c) for c in tree.classes_]
        title = f"stream {stream}, {n} instances"
    print(tree.describe(labels))
    for e in tree.split_log:
        print(
            f"t={e['t']:>7} tree={e['tree']} depth={e['depth']} "
            f"feature={e['feature']} threshold={e['threshold']:.4g} e-value={e['e_value']:.3g}"
        )
    for e in tree.drift_log:
        print(f"t={e['t']:>7} drift: {e['event']}")
    if out is not None:
        from .plots import tree_figure

        out = Path(out)
        payload = {"tree": tree.to_dict(), "labels": labels, "split_log": tree.split_log,
                   "drift_log": tree.drift_log}  # fmt: skip
        atomic_write_text(out / "tree.json", json.dumps(payload, indent=2, default=str))
        atomic_write_figure(out / "tree.png", tree_figure(tree.to_dict(), labels, title), dpi=110)
        print(f"wrote {out / 'tree.png'} and {out / 'tree.json'}")


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
            "predict-csv": "anytime_hoeffding.cli:predict_csv",
        },  # fmt: skip
        trainer_defaults={
            "max_epochs": 1,
            "num_sanity_val_steps": 0,
            "logger": False,
            "enable_checkpointing": False,
        },  # fmt: skip
    )


LIGHTNING_EXTRA = "pip install 'anytime-hoeffding[lightning]'"


def _lightning_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("torch", "lightning"))


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``anytime-hoeffding`` console script.

    ``predict --model FILE ...`` applies a saved tree to a file (:func:`predict_csv`); the
    other ``predict`` and ``fit/validate/test`` run through Lightning, which is the optional
    ``lightning`` extra.
    """
    argv = list(sys.argv[1:] if args is None else args)
    if argv and argv[0] == "predict" and any(a == "--model" or a.startswith("--model=")
                                             for a in argv[1:]):  # fmt: skip
        argv[0] = "predict-csv"
        return build_cli().main(argv)
    if argv and argv[0] in ("fit", "validate", "test", "predict") and not _lightning_installed():
        print(
            f"anytime-hoeffding: error: '{argv[0]}' needs Lightning and torch: {LIGHTNING_EXTRA}",
            file=sys.stderr,
        )
        return 2
    return build_cli().main(args)
