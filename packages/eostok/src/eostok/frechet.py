"""Fréchet distance between Gaussian fits of two feature sets (the FID formula).

``FD = |mu_1 - mu_2|^2 + Tr(S_1 + S_2 - 2 (S_1 S_2)^{1/2})``: :func:`frechet_distance`
(closed form on given moments) and :func:`proxy_fid` (on features of the package-trained
metric CNN, not Inception: an offline proxy). Inception FID needs downloaded weights:
:func:`inception_fid` raises a clear error when it cannot load them.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import linalg


def frechet_distance(mu1, sigma1, mu2, sigma2) -> float:
    """Closed-form Fréchet distance between N(mu1, sigma1) and N(mu2, sigma2).

    >>> round(frechet_distance(np.zeros(2), np.eye(2), np.ones(2), 4 * np.eye(2)), 6)
    4.0
    """
    mu1, mu2 = np.asarray(mu1, float), np.asarray(mu2, float)
    s1, s2 = np.atleast_2d(sigma1).astype(float), np.atleast_2d(sigma2).astype(float)
    covmean = linalg.sqrtm(s1 @ s2)
    if not np.isfinite(covmean).all():
        eps = 1e-6 * np.eye(len(s1))
        covmean = linalg.sqrtm((s1 + eps) @ (s2 + eps))
    covmean = np.real(covmean)
    diff = mu1 - mu2
    return float(diff @ diff + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(covmean))


def feature_moments(feats: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of ``(N, D)`` features; needs ``N > D`` (else the covariance is singular)."""
    n, d = feats.shape
    if n < 2 or n <= d:
        raise ValueError(
            f"Fréchet distance needs more samples than feature dimensions: got {n} samples of dim {d}"
        )
    f = feats.double().cpu().numpy()
    return f.mean(0), np.cov(f, rowvar=False)


def proxy_fid(feats_a: torch.Tensor, feats_b: torch.Tensor) -> float:
    """Fréchet distance between two feature sets ``(N, D)``."""
    return frechet_distance(*feature_moments(feats_a), *feature_moments(feats_b))


INCEPTION_OFFLINE = (
    "Inception FID needs torch-fidelity's Inception-v3 weights, downloaded on first use, "
    "and they could not be loaded ({cause}); offline, use proxy_fid on the package-trained "
    "metric CNN (what `eostok reproduce` reports)"
)


def inception_fid(real: torch.Tensor, fake: torch.Tensor, batch_size: int = 64) -> float:
    """The paper's gFID: torchmetrics' Inception-v3 FID (2048-d pool features).

    ``real``, ``fake``: images ``(N, C, H, W)`` in [0, 1] (grey images are repeated to RGB).
    Needs the ``real`` extra (torch-fidelity) and the Inception weights it downloads on first
    use; without them one ``RuntimeError`` says so and names the offline proxy.
    """
    for name, x in (("real", real), ("fake", fake)):
        if x.ndim != 4 or len(x) < 2:
            raise ValueError(f"{name} images must be (N>=2, C, H, W), got {tuple(x.shape)}")
    try:
        from torchmetrics.image.fid import FrechetInceptionDistance

        fid = FrechetInceptionDistance(feature=2048, normalize=True)
    except (ImportError, ModuleNotFoundError) as exc:
        raise RuntimeError(
            INCEPTION_OFFLINE.format(cause=f"pip install 'eostok[real]': {exc}")
        ) from None
    except Exception as exc:  # noqa: BLE001 - a failed weight download surfaces as many types
        raise RuntimeError(INCEPTION_OFFLINE.format(cause=f"{type(exc).__name__}: {exc}")) from None
    for flag, x in ((True, real), (False, fake)):
        x = x.expand(-1, 3, -1, -1) if x.shape[1] == 1 else x
        for i in range(0, len(x), batch_size):
            fid.update(x[i : i + batch_size].clamp(0, 1), real=flag)
    return float(fid.compute())
