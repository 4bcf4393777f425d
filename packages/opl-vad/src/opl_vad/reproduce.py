"""``opl-vad reproduce``: the privacy-utility comparison on planted features, offline.

Paper: Wang et al., ICML 2026. Table: rows = head (MIL, RTFM, MGFN) x {none, OPL, G-OPL,
G-OPL+C, LEACE, INLP}; columns = frame AUC / AP, face-probe accuracy (linear SVM, with chance), identity-probe
accuracy, the largest per-feature mutual information with face presence, the largest principal
angle between the planted face subspace and the removed one, the joint utility-privacy scores
(:func:`~opl_vad.privacy_audit.privacy_utility`: AUC change and share of the face leakage
removed, against the unprotected row of the same head and seed), training time; medians over
seeds with the min-max range. A second table and a figure sweep G-OPL's face-loss weight and
G-OPL+C's contrast weight (the privacy-utility trade-off). A third table runs the same methods
(RTFM head) on the image variant (:class:`~opl_vad.face_frames.FaceFrameVADDataModule`: LFW
face crops in moving-shape frames, features from a small package-trained CNN), where the face
subspace is not planted; G-OPL's face rank there is chosen from the weak signal
(:func:`~opl_vad.face_guidance.suggest_face_rank`). A fourth table diagnoses that variant's face
signal: linear vs MLP probe, the rank of the within-video face contrast, and how much of the
anomaly direction lies inside the face-contrast subspace, for the default rendering and for
intensity-matched crops.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .benchmark import METHODS, run_method
from .erasure import leace_available
from .face_guidance import face_contrast_basis, face_contrast_spectrum, suggest_face_rank
from .privacy_audit import PrivacyAudit, privacy_utility
from .vad_data import SyntheticVADDataModule

SETTINGS = {
    "quick": {"dim": 64, "n_train": 120, "n_test": 60, "epochs": 15, "seeds": 1,
              "batch_pairs": 4, "weights": [0.0, 1.0, 5.0], "contrast_weights": [1.0, 5.0],
              "image": {"n_train": 120, "n_test": 60, "dim": 64, "n_snippets": 16,
                        "encoder_epochs": 4, "epochs": 15}},
    "full": {"dim": 128, "n_train": 200, "n_test": 100, "epochs": 20, "seeds": 3,
             "batch_pairs": 8, "weights": [0.0, 1.0, 5.0], "contrast_weights": [1.0, 5.0, 20.0],
             "image": {"n_train": 120, "n_test": 60, "dim": 64, "n_snippets": 16,
                       "encoder_epochs": 4, "epochs": 20}},
}  # fmt: skip
HEADS = ("mil", "rtfm", "mgfn")
GUIDED_LR = 1e-2  # subspace / face-readout learning rate of both G-OPL rows (ours; not public)
CONTRAST_WEIGHT = 5.0  # G-OPL+C's contrast weight in the main table (ours)
IMAGE_FACE_ENERGY = 0.9  # image variant: G-OPL's face rank keeps this share of the contrast


def _spread(values) -> str:
    v = np.asarray(values, float)
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


COLUMNS = ["head", "method", "frame AUC", "frame AP", "face probe", "face chance",
           "identity probe", "identity chance", "face MI", "face angle (deg)", "dAUC",
           "leak removed", "train (s)"]  # fmt: skip


def _add_joint_scores(rows: list[dict]) -> None:
    """Add ``delta_auc`` / ``leak_removed`` against the ``none`` row of each (head, seed)."""
    ref = {(r["head"], r["seed"]): r for r in rows if r["method"] == "none"}
    for r in rows:
        base = ref[(r["head"], r["seed"])]
        r.update(privacy_utility(r["auc"], r["face_probe_acc"], r["face_chance"],
                                 base["auc"], base["face_probe_acc"]))  # fmt: skip


def _table_row(head: str, method: str, rs: list[dict]) -> dict:
    angle = [r["face_angle_deg"] for r in rs if "face_angle_deg" in r]
    return {
        "head": head.upper(), "method": method,
        "frame AUC": _spread([r["auc"] for r in rs]),
        "frame AP": _spread([r["ap"] for r in rs]),
        "face probe": _spread([r["face_probe_acc"] for r in rs]),
        "face chance": float(np.median([r["face_chance"] for r in rs])),
        "identity probe": _spread([r["identity_probe_acc"] for r in rs]),
        "identity chance": float(np.median([r["identity_chance"] for r in rs])),
        "face MI": _spread([r["face_mi"] for r in rs]),
        "face angle (deg)": _spread(angle) if angle else None,
        "dAUC": None if method == "none" else _spread([r["delta_auc"] for r in rs]),
        "leak removed": None if method == "none" else _spread([r["leak_removed"] for r in rs]),
        "train (s)": _spread([r["seconds"] for r in rs]),
    }  # fmt: skip


def _image_section(report: Report, icfg: dict, methods: list[str], seed: int) -> None:
    """The same comparison (RTFM head, one seed) on the image variant's CNN features."""
    from .face_frames import FaceFrameVADDataModule

    dm = FaceFrameVADDataModule(
        icfg["n_train"], icfg["n_test"], icfg["dim"], icfg["n_snippets"],
        encoder_epochs=icfg["encoder_epochs"], batch_pairs=4, seed=seed,
    )  # fmt: skip
    dm.setup()
    tr = dm.train_data  # G-OPL's face rank from the weak training signal (no true labels)
    k_face = min(suggest_face_rank(tr.features, tr.face_signal, IMAGE_FACE_ENERGY),
                 icfg["dim"] // 4)  # fmt: skip
    rows = []
    for method in progress(methods, desc="image variant"):
        plr = GUIDED_LR if method.startswith("G-OPL") else None
        rows.append(run_method(method, "rtfm", dm, epochs=icfg["epochs"], seed=seed,
                               rank_face=k_face, contrast_weight=CONTRAST_WEIGHT,
                               projection_lr=plr))  # fmt: skip
    _add_joint_scores(rows)
    table = Table(
        f"Image variant: LFW faces in moving-shape frames, CNN features (D = {icfg['dim']}, "
        "RTFM head, 1 seed)",
        COLUMNS,
        notes=(
            f"{icfg['n_train']} training / {icfg['n_test']} test videos of "
            f"{icfg['n_snippets']} snippets x 4 frames (32 x 32 px): a bright square in "
            "motion, a faster larger square during the anomaly, and at a per-video place the "
            "video's person (one of 8 scikit-image LFW faces) while a face is present, a "
            "non-face crop otherwise; snippet features = mean code of a small CNN "
            f"auto-encoder trained without labels on the training frames ({icfg['encoder_epochs']} "
            "epochs), z-scored per dimension with the training split's statistics. "
            f"{icfg['epochs']} epochs of training, otherwise as in the first table, except "
            f"G-OPL's face rank: {k_face}, the number of directions carrying "
            f"{IMAGE_FACE_ENERGY:.0%} of the within-video face contrast of the noisy training "
            f"signal (suggest_face_rank, at most D/4). "
            "No face subspace is planted: the face angle is to the 1-D difference of the "
            "face-present and face-absent mean test features (estimated with the true labels)."
        ),
    )  # fmt: skip
    for method in methods:
        table.add_row(**_table_row("rtfm", method, [r for r in rows if r["method"] == method]))
    report.add_table(table)
    _image_diagnosis(report, icfg, dm, seed)


def _image_diagnosis(report: Report, icfg: dict, dm, seed: int) -> None:
    """Why a linear face eraser costs detection on the image variant (fourth table)."""
    from .face_frames import FaceFrameVADDataModule

    matched = FaceFrameVADDataModule(
        icfg["n_train"], icfg["n_test"], icfg["dim"], icfg["n_snippets"],
        encoder_epochs=icfg["encoder_epochs"], match_intensity=True, batch_pairs=4, seed=seed,
    )  # fmt: skip
    matched.setup()
    table = Table(
        "Image variant: what carries the face signal (test probes, training-split spectra)",
        ["rendering", "linear face probe", "MLP face probe", "face chance",
         "face rank (90%)", "contrast in top 4", "anomaly in face subspace",
         "random subspace"],
        notes=(
            "Probes: 5-fold video-grouped accuracy on the unprotected test snippet features "
            "(linear SVM as in the tables above; MLP: one hidden layer of 128). Face rank (90%): "
            "directions carrying 90% of the within-video face contrast of the noisy training "
            "signal (suggest_face_rank); contrast in top 4: the share a 4-dimensional face block "
            "could capture at best. Anomaly in face subspace: share of the unit anomaly "
            "direction (mean anomalous minus mean normal training snippet, true labels; a "
            "diagnostic only) inside that face-contrast subspace; random subspace: the share a "
            "random subspace of that rank holds on average (rank / D). Intensity-matched: every "
            "pasted crop, face or not, rescaled to mean 0.4 and standard deviation 0.15."
        ),
    )  # fmt: skip
    for name, d in (("default", dm), ("intensity-matched", matched)):
        tr, te = d.train_data, d.test_data
        V, T, D = te.features.shape
        X, f, g = te.features.reshape(-1, D), te.face.reshape(-1), np.repeat(np.arange(V), T)
        lin = PrivacyAudit(max_samples=2000, seed=seed).run(X, f, groups=g)
        mlp = PrivacyAudit(max_samples=2000, seed=seed, probe="mlp").run(X, f, groups=g)
        share = face_contrast_spectrum(tr.features, tr.face_signal)
        k = suggest_face_rank(tr.features, tr.face_signal, IMAGE_FACE_ENERGY)
        U = face_contrast_basis(tr.features, tr.face_signal, k)
        Xt, a = tr.features.reshape(-1, D).astype(float), tr.snippet_labels.reshape(-1) == 1
        adir = Xt[a].mean(0) - Xt[~a].mean(0)
        adir /= np.linalg.norm(adir)
        table.add_row(**{
            "rendering": name, "linear face probe": lin["face_probe_acc"],
            "MLP face probe": mlp["face_probe_acc"], "face chance": lin["face_chance"],
            "face rank (90%)": k, "contrast in top 4": float(share[min(3, len(share) - 1)]),
            "anomaly in face subspace": float(np.sum((U.T @ adir) ** 2)),
            "random subspace": k / D,
        })  # fmt: skip
    report.add_table(table)


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the comparison (anchors in the same run) and return its report."""
    cfg = SETTINGS["quick" if quick else "full"]
    report = Report("opl-vad", out)
    methods = [m for m in METHODS if m != "LEACE" or leace_available()]
    rows = []
    jobs = [(h, m, s) for h in HEADS for m in methods
            for s in range(seed, seed + cfg["seeds"])]  # fmt: skip
    data = {}
    for head, method, s in progress(jobs, desc="methods"):
        if s not in data:
            data[s] = SyntheticVADDataModule(cfg["n_train"], cfg["n_test"], cfg["dim"],
                                             batch_pairs=cfg["batch_pairs"], seed=s)  # fmt: skip
        plr = GUIDED_LR if method.startswith("G-OPL") else None
        rows.append(run_method(method, head, data[s], epochs=cfg["epochs"], seed=s,
                               contrast_weight=CONTRAST_WEIGHT, projection_lr=plr))  # fmt: skip
    _add_joint_scores(rows)
    table = Table(
        f"Privacy-utility on planted features (D = {cfg['dim']}, {cfg['seeds']} seed(s))",
        COLUMNS,
        notes=(
            "Median over seeds [min, max]. Face / identity probe: 5-fold linear-SVM accuracy on "
            "the test snippets' features as the head sees them (identity: face-present "
            "snippets only); chance = majority rate. face MI: largest per-feature mutual information with face presence (nats). dAUC / leak removed: the joint utility-privacy scores against the none row of the same head and seed (frame AUC change; share of the none row's above-chance face-probe accuracy removed, 1 = chance). Face angle: largest principal angle between "
            "the planted face subspace (4 dims) and the removed one (G-OPL: its face block; OPL "
            "and INLP: everything removed; LEACE: its 1-D erased direction; smaller = inside "
            "the planted face subspace). G-OPL trains with a face signal flipped on 10% of "
            "snippets; G-OPL+C adds our within-video face-contrast term (weight "
            f"{CONTRAST_WEIGHT:g}), same face signal; LEACE and INLP use the true face labels "
            "(upper references). "
            f"{cfg['epochs']} epochs of {cfg['n_train']} training videos in batches of "
            f"{cfg['batch_pairs']} abnormal + {cfg['batch_pairs']} normal, Adam lr 1e-3, "
            f"weight decay 5e-4 (G-OPL subspace and readout: lr {GUIDED_LR:g}, no decay); OPL "
            "rank 8, G-OPL 8 + 4. Heads: MIL (Sultani et al.), RTFM (one dilated-convolution "
            "block), MGFN (one glance and one focus block, width 64)."
        ),
    )  # fmt: skip
    for head in HEADS:
        for method in methods:
            rs = [r for r in rows if r["head"] == head and r["method"] == method]
            table.add_row(**_table_row(head, method, rs))
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
    if cfg.get("image"):
        _image_section(report, cfg["image"], methods, seed)
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
