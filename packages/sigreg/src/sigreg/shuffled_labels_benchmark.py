"""The shuffled-label benchmark: every plasticity method through the same phases.

The paper's non-stationary CIFAR protocol (labels re-permuted across samples every phase,
so every phase after the first is random-label memorisation) at CPU scale on scikit-learn's
digits, one row per method:

* one seeded run of a method through all phases, through
  :class:`~sigreg.lightning.ShuffledLabelClassifier` and the quiet Trainer
  -> :func:`run_shuffled_labels`
* the compared methods (row label, method, lambda, SIGReg layer) -> :data:`DIGIT_METHODS`
* the table over methods and seeds: end-of-phase accuracy ``acc_p``, the AUC over the
  shuffled phases ``mean_{p >= 2} acc_p`` with its interval over seeds, the ratio
  ``acc_P / acc_2``, the diagnostics of the classifier input at the end of the last phase
  (dormant fraction, srank, isotropy gap and its top-eigenvalue share, SIGReg statistic;
  :mod:`sigreg.plasticity_metrics`), and the fresh-init reference (a new network per
  shuffled phase: the plasticity a continually trained network should keep)
  -> :func:`shuffled_labels_table`
* the per-phase accuracy curves -> :func:`shuffled_labels_figure`
"""

from __future__ import annotations

import time

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table

DIGIT_METHODS = [
    # (row label, method, lambda, sigreg layer)
    ("none", "none", 0.0, "post-relu"),
    ("LayerNorm", "layernorm", 0.0, "post-relu"),
    ("ReDo", "redo", 0.0, "post-relu"),
    ("Shrink & Perturb", "shrink-perturb", 0.0, "post-relu"),
    ("L2-init", "l2-init", 0.0, "post-relu"),
    ("SIGReg isogaussian-drl l=1 (post-ReLU, paper)", "sigreg", 1.0, "post-relu"),
    ("SIGReg isogaussian-drl l=1 (pre-ReLU)", "sigreg", 1.0, "pre-relu"),
    ("SIGReg lejepa l=0.05", "sigreg-lejepa", 0.05, "post-relu"),
    ("lightly SIGReg l=0.05 (anchor)", "lightly-sigreg", 0.05, "post-relu"),
]


def run_shuffled_labels(
    method: str,
    *,
    phases: int = 10,
    epochs_per_phase: int = 30,
    hidden: int = 256,
    depth: int = 3,
    batch_size: int = 128,
    lr: float = 1e-3,
    sigreg_lambda: float = 1.0,
    n_samples: int | None = None,
    sigreg_layer: str = "post-relu",
    sigreg_slices: int | None = None,
    seed: int = 0,
    dataset: str = "digits",
    start_phase: int = 0,
) -> dict:
    """Train one method through all phases; per-phase end accuracy and diagnostics.

    ``start_phase`` > 0 trains a new network on phase ``start_phase``'s labels only (for
    ``epochs_per_phase`` epochs): the fresh-init reference of that phase.

    Returns ``{"method", "phases": [per-phase dict of accuracy and diagnostics], "wall_s",
    "reg_s"}`` (``reg_s``: wall time spent in the SIGReg forward).
    """
    import lightning.pytorch as pl
    from icml26_shared.trainer import quiet_trainer

    from sigreg.lightning import DigitsShuffleDataModule, ShuffledLabelClassifier

    pl.seed_everything(seed, verbose=False)
    dm = DigitsShuffleDataModule(
        phases, epochs_per_phase, batch_size, n_samples, seed, dataset, start_phase
    )
    dm.setup("fit")
    model = ShuffledLabelClassifier(
        dm.x.shape[1],
        10,
        hidden,
        depth,
        method,
        sigreg_lambda,
        lr=lr,
        epochs_per_phase=epochs_per_phase,
        sigreg_layer=sigreg_layer,
        sigreg_slices=sigreg_slices,
    )
    trainer = quiet_trainer(
        max_epochs=(phases - start_phase) * epochs_per_phase,
        reload_dataloaders_every_n_epochs=1,
        limit_val_batches=0,
    )
    t0 = time.perf_counter()
    trainer.fit(model, datamodule=dm)
    wall = time.perf_counter() - t0
    return {"method": method, "phases": model.phase_end, "wall_s": wall, "reg_s": model.reg_time}


def has_lightly() -> bool:
    """Whether ``lightly`` (the reference SIGReg, ``sigreg[bench]``) can be imported."""
    try:
        import lightly  # noqa: F401
    except ImportError:
        return False
    return True


FRESH = "fresh init (reference)"


def shuffled_labels_table(
    seeds: list[int],
    *,
    phases: int,
    epochs_per_phase: int,
    n_samples: int,
    lejepa_slices: int,
    methods: list[tuple[str, str, float, str]] | None = None,
    dataset: str = "digits",
    fresh: bool = True,
) -> tuple[Table, dict[str, np.ndarray]]:
    """Run every method of ``methods`` (default :data:`DIGIT_METHODS`) for each seed.

    With ``fresh`` a reference row is added: for every shuffled phase ``p >= 2`` a *new*
    network (the ``none`` method) is trained on phase ``p``'s labels only, for the same
    ``epochs_per_phase``; a continually trained method below it has lost plasticity.

    Returns the table (one row per method: means over seeds, the AUC's IQM and 95 % bootstrap
    interval over seeds and its verdict against the fresh-init interval) and ``{row label:
    mean per-phase accuracy}`` for :func:`shuffled_labels_figure`. The ``lightly`` row is left
    out when ``lightly`` is not installed.
    """
    from sigreg.optimiser_study import interval_verdict
    from sigreg.rl_benchmark import interval_estimate

    methods = [m for m in (methods or DIGIT_METHODS) if has_lightly() or m[1] != "lightly-sigreg"]
    data = f"scikit-learn digits, first {n_samples} images" if dataset == "digits" else (
        f"CIFAR-10, first {n_samples} training images (flattened pixels)")  # fmt: skip
    table = Table(
        "Shuffled-label digits: memorisation accuracy across label re-permutations",
        ["method", "acc phase 1", "acc last phase", "AUC (mean acc phases 2..P)", "AUC CI low",
         "AUC CI high", "vs fresh init (AUC)", "last/first (phases 2..P)", "dormant % tau=0",
         "dormant % tau=0.025", "srank", "isotropy gap", "gap^2 share of top eigenvalue",
         "SIGReg stat", "wall"],
        units={"wall": "s"},
        notes=(
            f"{data}, {phases} phases x "
            f"{epochs_per_phase} epochs; phase 1 = true labels, later phases = labels permuted "
            "across samples (random-label memorisation, the paper's CIFAR protocol). MLP 3x256 "
            "ReLU, Adam 1e-3, batch 128. Accuracy = train accuracy on the current phase's labels "
            "at the end of the phase. 'fresh init': a new network trained on each shuffled "
            "phase alone for the same epochs (its 'acc last phase' is on the last phase's "
            "labels); 'vs fresh init': the row's AUC interval against the fresh-init row's "
            "(below = plasticity lost, overlap (null) = not resolved). AUC: IQM and 95 % "
            f"bootstrap CI over {len(seeds)} seed(s) (rliable); other columns: means. "
            "Diagnostics at the end of the last phase, all read at the same layer for every "
            "row: the classifier's input (trunk output after its final ReLU; dormancy over "
            "every ReLU of the trunk). 'gap^2 share of top eigenvalue' = the part of the "
            "isotropy gap^2 carried by the largest covariance eigenvalue. lejepa / lightly: "
            f"{lejepa_slices} slices, 17 knots on [0, 3], x N scaling (hence lambda 0.05, "
            "LeJEPA's default). Released preset: 16 slices, 8 frequencies on [-5, 5]."
        ),
    )  # fmt: skip
    common = dict(
        phases=phases, epochs_per_phase=epochs_per_phase, n_samples=n_samples, dataset=dataset
    )
    jobs = [(m, s, 0) for m in methods for s in seeds]
    if fresh and phases > 1:
        jobs += [((FRESH, "none", 0.0, "post-relu"), s, p) for s in seeds for p in range(1, phases)]
    results: dict[str, list] = {}
    fresh_runs: dict[int, list] = {}
    for (label, method, lam, layer), s, start in progress(jobs, desc="digits", total=len(jobs)):
        lejepa = method in ("sigreg-lejepa", "lightly-sigreg")
        res = run_shuffled_labels(
            method,
            sigreg_lambda=lam,
            sigreg_layer=layer,
            sigreg_slices=lejepa_slices if lejepa else None,
            seed=s,
            start_phase=start,
            **common,
        )
        if label == FRESH:
            fresh_runs.setdefault(s, []).append(res["phases"][0])
        else:
            results.setdefault(label, []).append(res)
    rows = {}
    for label, runs in results.items():
        acc = np.array([[p["accuracy"] for p in r["phases"]] for r in runs])  # (seeds, P)
        rows[label] = (acc, [r["phases"][-1] for r in runs], [r["wall_s"] for r in runs])
    if fresh_runs:
        acc = np.array([[np.nan] + [p["accuracy"] for p in fresh_runs[s]] for s in seeds])
        rows[FRESH] = (acc, [fresh_runs[s][-1] for s in seeds], [np.nan])
    auc = {}
    for label, (acc, _, _) in rows.items():
        later = acc[:, 1:] if acc.shape[1] > 1 else acc
        auc[label] = interval_estimate(later.mean(1))
    curves = {}
    for label, (acc, last, walls) in rows.items():
        later = acc[:, 1:] if acc.shape[1] > 1 else acc
        point, lo, hi, _ = auc[label]
        verdict = ""
        if label != FRESH and FRESH in auc:
            verdict = interval_verdict(lo, hi, auc[FRESH][1], auc[FRESH][2])

        def mean(key: str, scale: float = 1.0, last=last) -> float:
            return scale * float(np.mean([d[key] for d in last]))

        table.add_row(
            method=label,
            **{
                "acc phase 1": None if label == FRESH else float(acc[:, 0].mean()),
                "acc last phase": float(acc[:, -1].mean()),
                "AUC (mean acc phases 2..P)": point,
                "AUC CI low": lo,
                "AUC CI high": hi,
                "vs fresh init (AUC)": verdict,
                "last/first (phases 2..P)": float(
                    (later[:, -1] / np.maximum(later[:, 0], 1e-9)).mean()
                ),
                "dormant % tau=0": mean("dormant_tau0", 100),
                "dormant % tau=0.025": mean("dormant_tau0.025", 100),
                "srank": mean("srank"),
                "isotropy gap": mean("isotropy_gap"),
                "gap^2 share of top eigenvalue": mean("gap_top_share"),
                "SIGReg stat": mean("sigreg_stat"),
                "wall": None if label == FRESH else float(np.mean(walls)),
            },
        )
        curves[label] = acc.mean(0)
    return table, curves


def shuffled_labels_figure(curves: dict[str, np.ndarray]):
    """End-of-phase train accuracy against the phase, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, acc in curves.items():
        ax.plot(np.arange(1, len(acc) + 1), acc, marker="o", label=label)
    ax.set_xlabel("phase")
    ax.set_ylabel("end-of-phase train accuracy")
    ax.set_title("shuffled-label digits")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
