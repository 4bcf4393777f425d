"""``opl-vad reproduce``: the privacy-utility comparison on planted features, offline.

Paper: Wang et al., ICML 2026. Table: rows = head (MIL, RTFM) x {none, OPL, G-OPL, G-OPL+C,
LEACE, INLP}; columns = frame AUC / AP, face-probe accuracy (linear SVM, with chance), identity-probe
accuracy, the largest principal angle between the planted face subspace and the removed one,
training time; medians over seeds with the min-max range. A second table and a figure sweep
G-OPL's face-loss weight and G-OPL+C's contrast weight (the privacy-utility trade-off).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .benchmark import METHODS, run_method
from .erasure import leace_available
from .vad_data import SyntheticVADDataModule

SETTINGS = {
    "quick": {"dim": 64, "n_train": 120, "n_test": 60, "epochs": 15, "seeds": 1,
              "batch_pairs": 4, "weights": [0.0, 1.0, 5.0], "contrast_weights": [1.0, 5.0]},
    "full": {"dim": 128, "n_train": 300, "n_test": 150, "epochs": 30, "seeds": 3,
             "batch_pairs": 8, "weights": [0.0, 0.3, 1.0, 3.0, 10.0],
             "contrast_weights": [0.5, 1.0, 5.0, 20.0]},
}  # fmt: skip
GUIDED_LR = 1e-2  # subspace / face-readout learning rate of both G-OPL rows (ours; not public)
CONTRAST_WEIGHT = 5.0  # G-OPL+C's contrast weight in the main table (ours)


def _spread(values) -> str:
    v = np.asarray(values, float)
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the comparison (anchors in the same run) and return its report."""
    cfg = SETTINGS["quick" if quick else "full"]
    report = Report("opl-vad", out)
    methods = [m for m in METHODS if m != "LEACE" or leace_available()]
    rows = []
    jobs = [(h, m, s) for h in ("mil", "rtfm") for m in methods
            for s in range(seed, seed + cfg["seeds"])]  # fmt: skip
    data = {}
    for head, method, s in progress(jobs, desc="methods"):
        if s not in data:
            data[s] = SyntheticVADDataModule(cfg["n_train"], cfg["n_test"], cfg["dim"],
                                             batch_pairs=cfg["batch_pairs"], seed=s)  # fmt: skip
        plr = GUIDED_LR if method.startswith("G-OPL") else None
        rows.append(run_method(method, head, data[s], epochs=cfg["epochs"], seed=s,
                               contrast_weight=CONTRAST_WEIGHT, projection_lr=plr))  # fmt: skip
    table = Table(
        f"Privacy-utility on planted features (D = {cfg['dim']}, {cfg['seeds']} seed(s))",
        ["head", "method", "frame AUC", "frame AP", "face probe", "face chance",
         "identity probe", "identity chance", "face angle (deg)", "train (s)"],
        notes=(
            "Median over seeds [min, max]. Face / identity probe: 5-fold linear-SVM accuracy on "
            "the test snippets' features as the head sees them (identity: face-present "
            "snippets only); chance = majority rate. Face angle: largest principal angle between "
            "the planted face subspace (4 dims) and the removed one (G-OPL: its face block; OPL "
            "and INLP: everything removed; LEACE: its 1-D erased direction; smaller = inside "
            "the planted face subspace). G-OPL trains with a face signal flipped on 10% of "
            "snippets; G-OPL+C adds our within-video face-contrast term (weight "
            f"{CONTRAST_WEIGHT:g}), same face signal; LEACE and INLP use the true face labels "
            "(upper references). "
            f"{cfg['epochs']} epochs of {cfg['n_train']} training videos in batches of "
            f"{cfg['batch_pairs']} abnormal + {cfg['batch_pairs']} normal, Adam lr 1e-3, "
            f"weight decay 5e-4 (G-OPL subspace and readout: lr {GUIDED_LR:g}, no decay); OPL "
            "rank 8, G-OPL 8 + 4."
        ),
    )  # fmt: skip
    for head in ("mil", "rtfm"):
        for method in methods:
            rs = [r for r in rows if r["head"] == head and r["method"] == method]
            angle = [r["face_angle_deg"] for r in rs if "face_angle_deg" in r]
            table.add_row(**{
                "head": head.upper(), "method": method,
                "frame AUC": _spread([r["auc"] for r in rs]),
                "frame AP": _spread([r["ap"] for r in rs]),
                "face probe": _spread([r["face_probe_acc"] for r in rs]),
                "face chance": float(np.median([r["face_chance"] for r in rs])),
                "identity probe": _spread([r["identity_probe_acc"] for r in rs]),
                "identity chance": float(np.median([r["identity_chance"] for r in rs])),
                "face angle (deg)": _spread(angle) if angle else None,
                "train (s)": _spread([r["seconds"] for r in rs]),
            })  # fmt: skip
    report.add_table(table)

    sweep = Table(
        "G-OPL trade-off over the face-loss and contrast weights (MIL head, first seed)",
        ["method", "face weight", "contrast weight", "frame AUC", "face probe",
         "identity probe", "face angle (deg)"],
    )  # fmt: skip
    points: dict[str, list] = {"G-OPL": [], "G-OPL+C": []}
    grid = [("G-OPL", w, 0.0) for w in cfg["weights"]]
    grid += [("G-OPL+C", 1.0, c) for c in cfg["contrast_weights"]]
    for method, w, c in progress(grid, desc="weights"):
        r = run_method(method, "mil", data[seed], epochs=cfg["epochs"], face_weight=w,
                       contrast_weight=c, projection_lr=GUIDED_LR, seed=seed)  # fmt: skip
        points[method].append((w if method == "G-OPL" else c, r["auc"], r["face_probe_acc"]))
        sweep.add_row(**{"method": method, "face weight": w, "contrast weight": c,
                         "frame AUC": r["auc"], "face probe": r["face_probe_acc"],
                         "identity probe": r["identity_probe_acc"],
                         "face angle (deg)": r["face_angle_deg"]})  # fmt: skip
    report.add_table(sweep)

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
    for r in rows:
        if r["head"] == "mil" and r["seed"] == seed and not r["method"].startswith("G-OPL"):
            ax.plot(r["face_probe_acc"], r["auc"], "s", label=r["method"])
    ax.set_xlabel("face-probe accuracy (lower = more private)")
    ax.set_ylabel("frame AUC")
    ax.legend(fontsize=7)
    fig.tight_layout()
    report.save_figure(fig, "tradeoff.png")
    plt.close(fig)
    if not leace_available():
        report.note(
            "LEACE skipped: concept-erasure is not installed (pip install 'opl-vad[bench]')."
        )
    report.note(
        "Synthetic planted features (opl_vad.synthetic): the paper's datasets (UCF-Crime, "
        "ShanghaiTech, XD-Violence, MSAD, CHAD, UCSD Ped2) and its numbers are not reproduced; "
        "the layer and G-OPL losses are a reconstruction (the authors' code is not released)."
    )
    return report
