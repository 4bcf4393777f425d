"""The comparison tables of ``opl-vad reproduce``: privacy-utility rows, weight sweep, image variant.

Paper: Wang et al., ICML 2026. Each function trains through the package's own
:class:`~opl_vad.lightning.VADModule` (:func:`~opl_vad.benchmark.run_method`) and returns a
:class:`~icml26_shared.results.Table`:

1. :func:`planted_table`: rows = head (MIL, RTFM, MGFN) x method (none, OPL, G-OPL, G-OPL+C,
   LEACE, INLP) on planted features; columns = frame AUC / AP, face-probe accuracy (linear SVM,
   with chance), identity-probe accuracy, the largest per-feature mutual information with face
   presence, the largest principal angle between the planted face subspace and the removed one,
   the joint utility-privacy scores (:func:`~opl_vad.privacy_audit.privacy_utility`: AUC change
   and share of the face leakage removed, against the unprotected row of the same head and
   seed) and training time; medians over seeds with the min-max range (:func:`spread`).
2. :func:`weight_sweep_table`: G-OPL's face-loss weight and G-OPL+C's contrast weight (the
   privacy-utility trade-off, MIL head).
3. :func:`image_table`: the same methods (RTFM head) on the image variant
   (:class:`~opl_vad.lightning.FaceFrameVADDataModule`), G-OPL's face rank chosen from the weak
   signal (:func:`~opl_vad.face_guidance.suggest_face_rank`).
4. :func:`image_diagnosis_table`: what carries the image variant's face signal (linear vs MLP
   probe, rank of the within-video face contrast, the anomaly direction inside it), for the
   default rendering and intensity-matched crops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table

from .benchmark import METHODS, run_method
from .erasure import leace_available
from .face_guidance import face_contrast_basis, face_contrast_spectrum, suggest_face_rank
from .lightning import FaceFrameVADDataModule, SyntheticVADDataModule
from .privacy_audit import PrivacyAudit, privacy_utility

COLUMNS = ["head", "method", "frame AUC", "frame AP", "face probe", "face chance",
           "identity probe", "identity chance", "face MI", "face angle (deg)", "dAUC",
           "leak removed", "train (s)"]  # fmt: skip


def available_methods() -> list[str]:
    """:data:`~opl_vad.benchmark.METHODS`, without LEACE when concept-erasure is not installed."""
    return [m for m in METHODS if m != "LEACE" or leace_available()]


def spread(values) -> str:
    """Median and ``[min, max]`` of ``values`` (a single value as it is).

    >>> spread([0.5, 0.7, 0.6])
    '0.600 [0.500, 0.700]'
    """
    v = np.asarray(values, float)
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{np.median(v):.3f} [{v.min():.3f}, {v.max():.3f}]"


def add_joint_scores(rows: list[dict]) -> None:
    """Add ``delta_auc`` / ``leak_removed`` against the ``none`` row of each (head, seed)."""
    ref = {(r["head"], r["seed"]): r for r in rows if r["method"] == "none"}
    for r in rows:
        base = ref[(r["head"], r["seed"])]
        r.update(privacy_utility(r["auc"], r["face_probe_acc"], r["face_chance"],
                                 base["auc"], base["face_probe_acc"]))  # fmt: skip


def comparison_row(head: str, method: str, rs: list[dict]) -> dict:
    """One table row (:data:`COLUMNS`) from the result rows of one (head, method) over seeds."""
    angle = [r["face_angle_deg"] for r in rs if "face_angle_deg" in r]
    return {
        "head": head.upper(), "method": method,
        "frame AUC": spread([r["auc"] for r in rs]),
        "frame AP": spread([r["ap"] for r in rs]),
        "face probe": spread([r["face_probe_acc"] for r in rs]),
        "face chance": float(np.median([r["face_chance"] for r in rs])),
        "identity probe": spread([r["identity_probe_acc"] for r in rs]),
        "identity chance": float(np.median([r["identity_chance"] for r in rs])),
        "face MI": spread([r["face_mi"] for r in rs]),
        "face angle (deg)": spread(angle) if angle else None,
        "dAUC": None if method == "none" else spread([r["delta_auc"] for r in rs]),
        "leak removed": None if method == "none" else spread([r["leak_removed"] for r in rs]),
        "train (s)": spread([r["seconds"] for r in rs]),
    }  # fmt: skip


def planted_table(
    heads: Sequence[str], seeds: Sequence[int], dim: int, n_train: int, n_test: int,
    epochs: int, batch_pairs: int, guided_lr: float, contrast_weight: float,
) -> tuple[Table, list[dict], dict[int, SyntheticVADDataModule]]:  # fmt: skip
    """Every (head, method, seed) on planted features; returns the table, rows and data modules."""
    methods = available_methods()
    rows, data = [], {}
    jobs = [(h, m, s) for h in heads for m in methods for s in seeds]
    for head, method, s in progress(jobs, desc="methods"):
        if s not in data:
            data[s] = SyntheticVADDataModule(n_train, n_test, dim, batch_pairs=batch_pairs,
                                             seed=s)  # fmt: skip
        plr = guided_lr if method.startswith("G-OPL") else None
        rows.append(run_method(method, head, data[s], epochs=epochs, seed=s,
                               contrast_weight=contrast_weight, projection_lr=plr))  # fmt: skip
    add_joint_scores(rows)
    table = Table(
        f"Privacy-utility on planted features (D = {dim}, {len(seeds)} seed(s))", COLUMNS,
        notes=(
            "Median over seeds [min, max]. Face / identity probe: 5-fold linear-SVM accuracy on "
            "the test snippets' features as the head sees them (identity: face-present "
            "snippets only); chance = majority rate. face MI: largest per-feature mutual "
            "information with face presence (nats). dAUC / leak removed: the joint "
            "utility-privacy scores against the none row of the same head and seed (frame AUC "
            "change; share of the none row's above-chance face-probe accuracy removed, 1 = "
            "chance). Face angle: largest principal angle between the planted face subspace "
            "(4 dims) and the removed one (G-OPL: its face block; OPL and INLP: everything "
            "removed; LEACE: its 1-D erased direction; smaller = inside the planted face "
            "subspace). G-OPL trains with a face signal flipped on 10% of snippets; G-OPL+C adds "
            f"our within-video face-contrast term (weight {contrast_weight:g}), same face "
            "signal; LEACE and INLP use the true face labels (upper references). "
            f"{epochs} epochs of {n_train} training videos in batches of {batch_pairs} abnormal "
            f"+ {batch_pairs} normal, Adam lr 1e-3, weight decay 5e-4 (G-OPL subspace and "
            f"readout: lr {guided_lr:g}, no decay); OPL rank 8, G-OPL 8 + 4. Heads: MIL (Sultani "
            "et al.), RTFM (one dilated-convolution block), MGFN (one glance and one focus "
            "block, width 64)."
        ),
    )  # fmt: skip
    for head in heads:
        for method in methods:
            rs = [r for r in rows if r["head"] == head and r["method"] == method]
            table.add_row(**comparison_row(head, method, rs))
    return table, rows, data


def weight_sweep_table(
    data: SyntheticVADDataModule, weights: Sequence[float], contrast_weights: Sequence[float],
    epochs: int, guided_lr: float, seed: int,
) -> tuple[Table, dict[str, list]]:  # fmt: skip
    """G-OPL over its face-loss weight and G-OPL+C over its contrast weight (MIL head).

    Returns the table and ``{method: [(weight, AUC, face probe), ...]}`` for the figure.
    """
    sweep = Table(
        "G-OPL trade-off over the face-loss and contrast weights (MIL head, first seed)",
        ["method", "face weight", "contrast weight", "frame AUC", "face probe",
         "identity probe", "face angle (deg)"],
    )  # fmt: skip
    points: dict[str, list] = {"G-OPL": [], "G-OPL+C": []}
    grid = [("G-OPL", w, 0.0) for w in weights]
    grid += [("G-OPL+C", 1.0, c) for c in contrast_weights]
    for method, w, c in progress(grid, desc="weights"):
        r = run_method(method, "mil", data, epochs=epochs, face_weight=w,
                       contrast_weight=c, projection_lr=guided_lr, seed=seed)  # fmt: skip
        points[method].append((w if method == "G-OPL" else c, r["auc"], r["face_probe_acc"]))
        sweep.add_row(**{"method": method, "face weight": w, "contrast weight": c,
                         "frame AUC": r["auc"], "face probe": r["face_probe_acc"],
                         "identity probe": r["identity_probe_acc"],
                         "face angle (deg)": r["face_angle_deg"]})  # fmt: skip
    return sweep, points


def image_table(
    dm: FaceFrameVADDataModule, epochs: int, face_energy: float, guided_lr: float,
    contrast_weight: float, seed: int,
) -> Table:  # fmt: skip
    """The comparison (RTFM head, one seed) on the image variant's CNN features."""
    h = dm.hparams
    dm.setup()
    tr = dm.train_data  # G-OPL's face rank from the weak training signal (no true labels)
    k_face = min(suggest_face_rank(tr.features, tr.face_signal, face_energy), h.dim // 4)
    methods = available_methods()
    rows = []
    for method in progress(methods, desc="image variant"):
        plr = guided_lr if method.startswith("G-OPL") else None
        rows.append(run_method(method, "rtfm", dm, epochs=epochs, seed=seed, rank_face=k_face,
                               contrast_weight=contrast_weight, projection_lr=plr))  # fmt: skip
    add_joint_scores(rows)
    table = Table(
        f"Image variant: LFW faces in moving-shape frames, CNN features (D = {h.dim}, "
        "RTFM head, 1 seed)",
        COLUMNS,
        notes=(
            f"{h.n_train} training / {h.n_test} test videos of "
            f"{h.n_snippets} snippets x 4 frames (32 x 32 px): a bright square in "
            "motion, a faster larger square during the anomaly, and at a per-video place the "
            "video's person (one of 8 scikit-image LFW faces) while a face is present, a "
            "non-face crop otherwise; snippet features = mean code of a small CNN "
            f"auto-encoder trained without labels on the training frames ({h.encoder_epochs} "
            "epochs), z-scored per dimension with the training split's statistics. "
            f"{epochs} epochs of training, otherwise as in the first table, except "
            f"G-OPL's face rank: {k_face}, the number of directions carrying "
            f"{face_energy:.0%} of the within-video face contrast of the noisy training "
            f"signal (suggest_face_rank, at most D/4). "
            "No face subspace is planted: the face angle is to the 1-D difference of the "
            "face-present and face-absent mean test features (estimated with the true labels)."
        ),
    )  # fmt: skip
    for method in methods:
        table.add_row(**comparison_row("rtfm", method, [r for r in rows if r["method"] == method]))
    return table


def image_diagnosis_table(
    dm: FaceFrameVADDataModule, matched: FaceFrameVADDataModule, face_energy: float, seed: int
) -> Table:
    """Why a linear face eraser costs detection on the image variant (default vs matched crops)."""
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
        d.setup()
        tr, te = d.train_data, d.test_data
        V, T, D = te.features.shape
        X, f, g = te.features.reshape(-1, D), te.face.reshape(-1), np.repeat(np.arange(V), T)
        lin = PrivacyAudit(max_samples=2000, seed=seed).run(X, f, groups=g)
        mlp = PrivacyAudit(max_samples=2000, seed=seed, probe="mlp").run(X, f, groups=g)
        share = face_contrast_spectrum(tr.features, tr.face_signal)
        k = suggest_face_rank(tr.features, tr.face_signal, face_energy)
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
    return table


ABLATION_COLUMNS = ["variant", "readout", "cosine", "face rank", "frame AUC", "dAUC",
                    "face probe", "face chance", "leak removed", "identity probe",
                    "face angle (deg)", "meets target"]  # fmt: skip


def meets_target(row: dict, probe_margin: float = 0.05, auc_loss: float = 0.01) -> bool:
    """The issue's bar for a privacy method: face probe <= chance + 0.05, AUC loss <= 1 point.

    >>> meets_target({"face_probe_acc": 0.54, "face_chance": 0.5, "delta_auc": -0.005})
    True
    >>> meets_target({"face_probe_acc": 0.56, "face_chance": 0.5, "delta_auc": 0.0})
    False
    """
    return bool(row["face_probe_acc"] <= row["face_chance"] + probe_margin
                and row["delta_auc"] >= -auc_loss)  # fmt: skip


def ablation_table(
    head: str, seeds: Sequence[int], dim: int, n_train: int, n_test: int, epochs: int,
    batch_pairs: int, readouts: Sequence[str], anchors: Sequence[str], ranks: Sequence[int],
    guided_lr: float, contrast_weight: float, references: Sequence[str] = ("G-OPL+C", "LEACE"),
) -> tuple[Table, list[dict]]:  # fmt: skip
    """G-OPL's two losses alone over readout x cosine anchor x face rank, against references.

    Every variant trains with the face-presence BCE (weight 1) and, unless its cosine is
    ``off``, the cosine alignment (weight 0.1), noisy face signal only (no identity labels, no
    adversary); references: ``none`` always, and from ``references`` G-OPL+C (our contrast
    term, default readout / anchor, rank 4) and LEACE (true face labels, when installed). ``meets target`` counts the seeds
    with face probe <= chance + 0.05 and AUC loss <= 1 point (:func:`meets_target`).
    """
    grid = [("none", None, None, None)]
    if "G-OPL+C" in references:
        grid.append(("G-OPL+C", "mlp", "ema", 4))
    if "LEACE" in references and leace_available():
        grid.append(("LEACE", None, None, None))
    grid += [("G-OPL", r, a, k) for k in ranks for r in readouts for a in anchors]
    data = {s: SyntheticVADDataModule(n_train, n_test, dim, batch_pairs=batch_pairs, seed=s)
            for s in seeds}  # fmt: skip
    rows = []
    for (method, readout, anchor, k), s in progress(
        [(g, s) for g in grid for s in seeds], desc="ablation"
    ):
        kw = {}
        if method.startswith("G-OPL"):
            kw = dict(rank_face=k, face_readout=readout, projection_lr=guided_lr,
                      cos_anchor="ema" if anchor == "off" else anchor,
                      cos_weight=0.0 if anchor == "off" else 0.1)  # fmt: skip
        r = run_method(method, head, data[s], epochs=epochs, seed=s,
                       contrast_weight=contrast_weight, **kw)  # fmt: skip
        r.update(readout=readout, anchor=anchor, rank=k)
        rows.append(r)
    add_joint_scores(rows)
    table = Table(
        f"Ablation of G-OPL's two losses on planted features ({head.upper()} head, D = {dim}, "
        f"{len(seeds)} seeds)",
        ABLATION_COLUMNS,
        notes=(
            "Median over seeds [min, max]; columns as in the first table. Readout of the "
            "face-presence BCE: linear (one presence logit from the face coefficients), mlp "
            "(one logit from a small MLP on the coefficients and their squares; the default), "
            "per_direction (every face coefficient predicts presence on its own, BCE averaged "
            "over the directions). Cosine: the alignment term's anchor, ema (one global moving "
            "mean of the removed face component), video (the mean over the face-present "
            "snippets of the same video) or off (weight 0). Face rank: the face block's "
            "dimension (4 = the planted rank). Every G-OPL row uses only the noisy face-presence "
            "signal and these two terms (face weight 1, cosine weight 0.1), no identity labels, "
            "no adversary. meets target: seeds with face probe <= chance + 0.05 and frame AUC "
            "at most 1 point below the none row of the same seed. G-OPL+C adds our "
            f"within-video contrast term (weight {contrast_weight:g}); LEACE uses the true face "
            f"labels. {epochs} epochs of {n_train} training videos, batches of {batch_pairs} "
            f"abnormal + {batch_pairs} normal, subspace / readout lr {guided_lr:g}, task rank 8."
        ),
    )  # fmt: skip
    for method, readout, anchor, k in grid:
        rs = [r for r in rows if r["method"] == method and r["readout"] == readout
              and r["anchor"] == anchor and r["rank"] == k]  # fmt: skip
        base = comparison_row(head, method, rs)
        hits = sum(meets_target(r) for r in rs)
        table.add_row(**{
            "variant": method, "readout": readout or "", "cosine": anchor or "",
            "face rank": k, "frame AUC": base["frame AUC"], "dAUC": base["dAUC"],
            "face probe": base["face probe"], "face chance": base["face chance"],
            "leak removed": base["leak removed"], "identity probe": base["identity probe"],
            "face angle (deg)": base["face angle (deg)"],
            "meets target": None if method == "none" else f"{hits}/{len(rs)}",
        })  # fmt: skip
    return table, rows


def ablation_verdict(rows: list[dict]) -> str:
    """One sentence: do the paper's two terms alone (any G-OPL variant) meet the target?"""
    keys = sorted({(r["readout"], r["anchor"], r["rank"]) for r in rows if r["method"] == "G-OPL"})
    best, best_hits, best_leak = None, -1, -np.inf
    for key in keys:
        rs = [
            r
            for r in rows
            if r["method"] == "G-OPL" and (r["readout"], r["anchor"], r["rank"]) == key
        ]
        hits, leak = (
            sum(meets_target(r) for r in rs),
            float(np.median([r["leak_removed"] for r in rs])),
        )
        if (hits, leak) > (best_hits, best_leak):
            best, best_hits, best_leak, n = key, hits, leak, len(rs)
    if best is None:
        return "No G-OPL variant ran."
    rs = [
        r for r in rows if r["method"] == "G-OPL" and (r["readout"], r["anchor"], r["rank"]) == best
    ]
    probe = spread([r["face_probe_acc"] for r in rs])
    dauc = spread([r["delta_auc"] for r in rs])
    chance = float(np.median([r["face_chance"] for r in rs]))
    yes = best_hits == n
    return (
        f"Verdict: the paper's two terms alone {'DO' if yes else 'do NOT'} reach a face probe "
        f"<= chance + 0.05 at an AUC loss <= 1 point on planted features in every seed. Best "
        f"variant (readout {best[0]}, cosine {best[1]}, face rank {best[2]}): meets the target "
        f"in {best_hits}/{n} seeds, face probe {probe} (chance {chance:.3f}), dAUC {dauc}, "
        f"{best_leak:.0%} of the leakage removed (median)."
    )
