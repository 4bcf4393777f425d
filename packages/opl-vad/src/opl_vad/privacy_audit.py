"""Privacy audit of the kept features: what a linear attacker can still read from them.

Paper: Wang et al., ICML 2026, evaluate privacy leakage with a linear SVM probe for facial
attributes next to the detection metrics. :class:`PrivacyAudit` runs on snippet features
(those the anomaly head consumes) and reports:

- ``face_probe_acc``: k-fold accuracy of a linear SVM (scikit-learn ``LinearSVC``) predicting
  face presence, with ``face_chance`` (the majority rate) next to it. Given ``groups`` (the
  video of each snippet) the folds are grouped by video (``StratifiedGroupKFold``): snippets
  of one video share its scene and its face-presence rate, so a probe scored on snippets of
  videos it was fitted on can read face presence from per-video cues alone;
- ``identity_probe_acc``: the same for the person's identity on face-present snippets, with
  ``identity_chance``;
- ``face_mi``: the largest per-feature mutual information with face presence (nats,
  scikit-learn's ``mutual_info_classif``);
- ``face_angle_deg``: when a planted face basis and a learned removed basis are given, the
  largest principal angle between the planted face subspace and the learned one
  (``scipy.linalg.subspace_angles``), in degrees.

:func:`privacy_utility` turns two audits (a method's and the unprotected model's, same head,
data and seed) into the joint utility-privacy report: the AUC change and the fraction of the
above-chance face leakage the method removed. (The paper's own four privacy metrics, SSC /
ARD / PD / FPD, are not publicly defined; these two are ours and say what they measure.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PrivacyAudit", "largest_angle_deg", "privacy_utility"]


def largest_angle_deg(planted: np.ndarray, learned: np.ndarray) -> float:
    """Largest principal angle (degrees) between ``span(planted)`` and ``span(learned)``.

    There are ``min(dim planted, dim learned)`` principal angles: 0 means the smaller subspace
    lies inside the larger one, 90 that some direction of the smaller is orthogonal to it.

    Examples
    --------
    >>> import numpy as np
    >>> e = np.eye(4)
    >>> largest_angle_deg(e[:, :2], e[:, :3]), largest_angle_deg(e[:, :1], e[:, 1:2])
    (0.0, 90.0)
    """
    from scipy.linalg import subspace_angles

    return float(np.degrees(subspace_angles(planted, learned).max()))


def privacy_utility(
    auc: float, probe: float, chance: float, auc_ref: float, probe_ref: float
) -> dict[str, float]:
    """Joint utility-privacy scores of a method against the unprotected reference.

    - ``delta_auc = auc - auc_ref`` (utility kept; 0 = unchanged, positive = better);
    - ``leak_removed = (probe_ref - probe) / (probe_ref - chance)``: the share of the
      reference's above-chance face-probe accuracy that is gone (1 = probe at chance,
      0 = no change, negative = more leakage; NaN when the reference does not leak).

    Examples
    --------
    >>> r = privacy_utility(auc=0.95, probe=0.55, chance=0.5, auc_ref=0.97, probe_ref=0.9)
    >>> round(r["delta_auc"], 3), round(r["leak_removed"], 3)
    (-0.02, 0.875)
    """
    gap = probe_ref - chance
    leak = (probe_ref - probe) / gap if gap > 1e-9 else float("nan")
    return {"delta_auc": float(auc - auc_ref), "leak_removed": float(leak)}


@dataclass
class PrivacyAudit:
    """Linear probes and subspace angles on snippet features.

    Parameters
    ----------
    folds:
        Cross-validation folds of the probes.
    max_samples:
        Snippets used per probe (a seeded subsample; the SVM is quadratic in them).
    seed:
        Seed of the subsample and the folds.
    probe:
        ``linear_svm`` (the paper's attacker, scikit-learn ``LinearSVC``) or ``mlp`` (one
        hidden layer of 128 ReLU units, ``MLPClassifier``): a nonlinear attacker, to tell
        leakage a linear eraser cannot reach from leakage it left behind.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> face = rng.integers(0, 2, 400)
    >>> X = rng.standard_normal((400, 6)); X[:, 0] += 3 * face
    >>> r = PrivacyAudit(folds=3).run(X, face)
    >>> r["face_probe_acc"] > 0.9, r["face_chance"] < 0.6
    (True, True)
    >>> r = PrivacyAudit(folds=3).run(X[:, 1:], face)
    >>> r["face_probe_acc"] < 0.6
    True
    """

    folds: int = 5
    max_samples: int = 4000
    seed: int = 0
    probe: str = "linear_svm"

    def __post_init__(self) -> None:
        if self.probe not in ("linear_svm", "mlp"):
            raise ValueError(f"unknown probe {self.probe!r}; choose 'linear_svm' or 'mlp'")

    def _probe(
        self, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None
    ) -> tuple[float, float]:
        from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold, cross_val_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import LinearSVC

        rng = np.random.default_rng(self.seed)
        if len(y) > self.max_samples:
            keep = rng.choice(len(y), self.max_samples, replace=False)
            X, y = X[keep], y[keep]
            groups = None if groups is None else groups[keep]
        counts = np.bincount(y)
        chance = float(counts.max() / counts.sum())
        folds = int(min(self.folds, counts[counts > 0].min()))
        if len(np.unique(y)) < 2 or folds < 2:
            return float("nan"), chance
        if self.probe == "mlp":
            from sklearn.neural_network import MLPClassifier

            clf = MLPClassifier((128,), max_iter=500, random_state=self.seed)
        else:
            clf = LinearSVC(C=1.0, max_iter=5000)
        probe = make_pipeline(StandardScaler(), clf)
        if groups is None:
            cv = StratifiedKFold(folds, shuffle=True, random_state=self.seed)
        else:
            folds = min(folds, len(np.unique(groups)))
            if folds < 2:
                return float("nan"), chance
            cv = StratifiedGroupKFold(folds, shuffle=True, random_state=self.seed)
        scores = cross_val_score(probe, X, y, cv=cv, groups=groups)
        return float(scores.mean()), chance

    def run(
        self,
        features: np.ndarray,
        face: np.ndarray,
        identity: np.ndarray | None = None,
        planted_face_basis: np.ndarray | None = None,
        removed_basis: np.ndarray | None = None,
        groups: np.ndarray | None = None,
    ) -> dict[str, float]:
        """Audit ``features`` ``(N, D)`` against face presence ``(N,)`` (and identity ``(N,)``).

        ``groups`` ``(N,)``: the video of each snippet; the probes' folds then keep every
        video's snippets together.
        """
        from sklearn.feature_selection import mutual_info_classif

        X = np.asarray(features, dtype=np.float64)
        face = np.asarray(face).astype(np.int64).reshape(-1)
        if X.ndim != 2 or len(X) != len(face):
            raise ValueError(f"features must be (N, D) with N = len(face); got {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("features contain NaN or inf")
        out: dict[str, float] = {}
        if groups is not None:
            groups = np.asarray(groups).reshape(-1)
            if len(groups) != len(face):
                raise ValueError(f"groups has {len(groups)} entries, expected {len(face)}")
        out["face_probe_acc"], out["face_chance"] = self._probe(X, face, groups)
        if identity is not None:
            identity = np.asarray(identity).astype(np.int64).reshape(-1)
            present = face == 1
            out["identity_probe_acc"], out["identity_chance"] = self._probe(
                X[present], identity[present], None if groups is None else groups[present]
            )
        rng = np.random.default_rng(self.seed)
        sub = rng.choice(len(X), min(len(X), 2000), replace=False)
        mi = mutual_info_classif(X[sub], face[sub], random_state=self.seed)
        out["face_mi"] = float(mi.max())
        if planted_face_basis is not None and removed_basis is not None:
            out["face_angle_deg"] = largest_angle_deg(planted_face_basis, removed_basis)
        return out
