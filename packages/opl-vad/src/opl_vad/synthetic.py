"""Planted snippet features for privacy-aware VAD, generated offline.

Each video has ``T`` snippet features of size ``D`` (research notes, Sec. 4)::

    x_t = B_m m_t + f_t B_f s_v + a_t amp B_a + B_n n_v + eps_t

- ``m_t``: AR(1) motion / pose latent (``k_m`` dims);
- ``f_t in {0, 1}``: face presence, a per-video on/off Markov chain; ``s_v`` is the
  person's face code, a common face component plus the identity's own prototype
  (identity labels are kept for the audit only);
- ``a_t``: the anomaly interval (abnormal videos only) along the unit direction ``B_a``;
- ``n_v``: per-video scene nuisance with large variance (``k_n`` dims);
- ``B_m, B_f, B_a, B_n``: disjoint blocks of one random orthonormal basis of ``R^D``.

Training sees the face signal with each snippet flipped with probability ``face_flip``
(weak, noisy face presence); ``face_anomaly_coupling`` raises face presence inside anomalies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PlantedVAD", "make_planted_vad"]


@dataclass
class PlantedVAD:
    """Videos with planted structure; arrays are float32 / int64 numpy.

    ``features`` ``(V, T, D)``, ``video_labels`` ``(V,)``, ``snippet_labels`` ``(V, T)``
    (ground-truth anomaly per snippet), ``face`` ``(V, T)`` (true presence), ``face_signal``
    ``(V, T)`` (noisy, what training sees), ``identity`` ``(V,)``, and the planted bases
    ``face_basis`` ``(D, k_f)``, ``anomaly_direction`` ``(D,)``, ``nuisance_basis`` ``(D, k_n)``.
    """

    features: np.ndarray
    video_labels: np.ndarray
    snippet_labels: np.ndarray
    face: np.ndarray
    face_signal: np.ndarray
    identity: np.ndarray
    face_basis: np.ndarray
    anomaly_direction: np.ndarray
    nuisance_basis: np.ndarray

    def __len__(self) -> int:
        return len(self.features)

    def subset(self, idx) -> PlantedVAD:
        idx = np.asarray(idx)
        return PlantedVAD(
            self.features[idx], self.video_labels[idx], self.snippet_labels[idx],
            self.face[idx], self.face_signal[idx], self.identity[idx],
            self.face_basis, self.anomaly_direction, self.nuisance_basis,
        )  # fmt: skip


def make_planted_vad(
    n_videos: int = 200,
    n_snippets: int = 32,
    dim: int = 128,
    motion_rank: int = 8,
    face_rank: int = 4,
    nuisance_rank: int = 8,
    n_identities: int = 10,
    abnormal_fraction: float = 0.5,
    anomaly_amplitude: float = 2.0,
    face_strength: float = 3.0,
    identity_strength: float = 0.5,
    nuisance_scale: float = 3.0,
    noise_scale: float = 0.3,
    face_flip: float = 0.1,
    face_anomaly_coupling: float = 0.0,
    seed: int = 0,
    basis_seed: int | None = None,
) -> PlantedVAD:
    """Generate ``n_videos`` videos of ``n_snippets`` snippets (see the module docstring).

    ``basis_seed`` fixes the planted bases (default: ``seed``) so that train and test sets
    drawn with different ``seed`` share them. ``identity_strength``: the spread of the
    identity prototypes relative to ``face_strength`` (each prototype coordinate has standard
    deviation ``face_strength * identity_strength``). Since 0.2 the prototypes are centred and
    whitened (their sample covariance is exactly ``(face_strength * identity_strength)^2 I``
    when ``n_identities > face_rank``): every planted face direction then carries the same
    within-video face contrast. With raw Gaussian prototypes (0.1) the weakest of the four
    directions of 10 identities carried so little that it could not be told from the motion
    contrast, even with the true face labels.

    Examples
    --------
    >>> d = make_planted_vad(20, 16, 32, seed=0)
    >>> d.features.shape, d.face_basis.shape, int(d.video_labels.sum())
    ((20, 16, 32), (32, 4), 10)
    >>> bool((d.snippet_labels.sum(1) > 0).astype(int).tolist() == d.video_labels.tolist())
    True
    """
    k = motion_rank + face_rank + 1 + nuisance_rank
    if k >= dim:
        raise ValueError(f"planted ranks ({k}) must be below dim={dim}")
    if not 0 <= face_flip < 0.5 or not 0 <= face_anomaly_coupling <= 1:
        raise ValueError("face_flip must be in [0, 0.5) and face_anomaly_coupling in [0, 1]")
    if n_videos < 2 or n_snippets < 4:
        raise ValueError(f"need n_videos >= 2 and n_snippets >= 4, got {n_videos}, {n_snippets}")
    gb = np.random.default_rng(seed if basis_seed is None else basis_seed)
    basis, _ = np.linalg.qr(gb.standard_normal((dim, k)))
    B_m = basis[:, :motion_rank]
    B_f = basis[:, motion_rank : motion_rank + face_rank]
    B_a = basis[:, motion_rank + face_rank]
    B_n = basis[:, motion_rank + face_rank + 1 :]
    face_mean = gb.standard_normal(face_rank)
    face_mean *= face_strength / np.linalg.norm(face_mean)
    prototypes = gb.standard_normal((n_identities, face_rank))
    if n_identities > face_rank:  # centred and whitened: every face direction carries contrast
        prototypes -= prototypes.mean(0)
        cov = prototypes.T @ prototypes / n_identities
        prototypes = prototypes @ np.linalg.inv(np.linalg.cholesky(cov)).T
    prototypes *= face_strength * identity_strength

    rng = np.random.default_rng(seed)
    V, T = int(n_videos), int(n_snippets)
    n_abn = int(round(abnormal_fraction * V))
    labels = np.r_[np.ones(n_abn, np.int64), np.zeros(V - n_abn, np.int64)]
    labels = labels[rng.permutation(V)]
    X = np.empty((V, T, dim))
    snip = np.zeros((V, T), np.int64)
    face = np.zeros((V, T), np.int64)
    ident = rng.integers(n_identities, size=V)
    for v in range(V):
        m = np.empty((T, motion_rank))
        m[0] = rng.standard_normal(motion_rank)
        for t in range(1, T):  # AR(1), stationary variance 1
            m[t] = 0.9 * m[t - 1] + np.sqrt(1 - 0.81) * rng.standard_normal(motion_rank)
        if labels[v]:
            length = int(rng.integers(max(2, T // 8), max(3, T // 3)))
            start = int(rng.integers(0, T - length + 1))
            snip[v, start : start + length] = 1
        on = rng.random() < 0.5
        for t in range(T):  # on/off Markov chain, switch probability 0.15
            p_on = face_anomaly_coupling if snip[v, t] and face_anomaly_coupling > 0 else None
            on = (rng.random() < p_on) if p_on is not None else (on ^ (rng.random() < 0.15))
            face[v, t] = int(on)
        s_v = face_mean + prototypes[ident[v]]
        n_v = nuisance_scale * rng.standard_normal(nuisance_rank)
        X[v] = (
            m @ B_m.T
            + face[v][:, None] * (s_v @ B_f.T)[None, :]
            + anomaly_amplitude * snip[v][:, None] * B_a[None, :]
            + (n_v @ B_n.T)[None, :]
            + noise_scale * rng.standard_normal((T, dim))
        )
    flips = rng.random((V, T)) < face_flip
    signal = np.where(flips, 1 - face, face)
    return PlantedVAD(
        X.astype(np.float32), labels, snip, face, signal.astype(np.float32), ident,
        B_f, B_a, B_n,
    )  # fmt: skip
