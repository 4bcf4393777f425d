"""Image-based offline variant: real face crops pasted into moving-shape frames, CNN features.

Where :mod:`opl_vad.synthetic` plants the face directions in feature space, here the faces
are pixels: the 100 face crops that scikit-image ships (``skimage.data.lfw_subset``, LFW
faces followed by 100 non-face crops) are pasted into small synthetic scenes, and the
snippet features come from a small CNN the package trains, so the face subspace is not known
and has to be found.

Each video (``T`` snippets of ``frames_per_snippet`` frames, ``size x size`` pixels):

- background noise plus a bright square moving at constant velocity (bouncing off the
  borders): the normal motion;
- abnormal videos: inside one interval of snippets a second, larger square crosses the
  frame fast (the anomaly, ``snippet_labels``);
- face presence ``f_t in {0, 1}`` per snippet (an on/off Markov chain); while on, the
  video's person (one of ``n_identities`` LFW faces, ``identity``) is pasted at a per-video
  place, while off a per-video non-face crop is pasted there instead, so "a patch is there"
  does not reveal a face.

:class:`FrameEncoder` (two conv blocks + a linear map to ``dim``) is trained as a small
auto-encoder (linear decoder to a 16 x 16 thumbnail of the frame, MSE), without any label;
a snippet feature is the mean code of its frames. :func:`make_face_frame_vad` returns a
:class:`~opl_vad.synthetic.PlantedVAD`; there are no planted bases, so ``face_basis`` holds
the unit difference of the face-present and face-absent mean features (a 1-D reference for
the subspace angle, estimated with the true face labels) and ``nuisance_basis`` is empty.
:class:`~opl_vad.lightning.FaceFrameVADDataModule` is the Lightning DataModule of this variant (the encoder is
trained on the training split's frames and reused for the test split); ``reproduce`` runs
its comparison section on it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .synthetic import PlantedVAD

__all__ = ["FrameEncoder", "make_face_frame_vad", "render_face_videos"]


PATCH_MEAN, PATCH_STD = 0.4, 0.15  # common intensity of every pasted crop (match_intensity)


def _lfw_crops(patch: int, match_intensity: bool = False) -> tuple[np.ndarray, np.ndarray]:
    try:
        from skimage import data
        from skimage.transform import resize
    except ImportError as e:  # pragma: no cover
        raise ImportError(
            "the image variant needs scikit-image: pip install 'opl-vad[faces]'"
        ) from e
    imgs = data.lfw_subset()  # (200, 25, 25): 100 faces, then 100 non-faces
    crops = np.stack([resize(im, (patch, patch), anti_aliasing=True) for im in imgs]).astype(
        np.float32
    )
    if match_intensity:  # every crop gets the same mean and contrast: only its structure differs
        mu = crops.mean(axis=(1, 2), keepdims=True)
        sd = crops.std(axis=(1, 2), keepdims=True).clip(min=1e-3)
        crops = np.clip(PATCH_MEAN + PATCH_STD * (crops - mu) / sd, 0.0, 1.0).astype(np.float32)
    return crops[:100], crops[100:]


def render_face_videos(
    n_videos: int,
    n_snippets: int = 16,
    frames_per_snippet: int = 4,
    size: int = 32,
    patch: int = 12,
    n_identities: int = 8,
    face_flip: float = 0.1,
    match_intensity: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Frames ``(V, T * F, size, size)`` in [0, 1] and the per-snippet labels (see module doc).

    The LFW face crops are brighter than the non-face crops (mean 0.455 vs 0.300 at 12 px), so
    in the default rendering a face shows partly as a brighter patch, the cue the anomaly's
    bright square also moves. ``match_intensity`` gives every crop the same mean and contrast
    (``PATCH_MEAN``, ``PATCH_STD``), so only a crop's structure tells a face.

    Examples
    --------
    >>> v = render_face_videos(4, n_snippets=6, frames_per_snippet=2, seed=0)
    >>> v["frames"].shape, v["face"].shape, sorted(set(v["video_labels"].tolist()))
    ((4, 12, 32, 32), (4, 6), [0, 1])
    """
    if patch >= size:
        raise ValueError(f"patch ({patch}) must be smaller than the frame size ({size})")
    if not 1 <= n_identities <= 100:
        raise ValueError(f"n_identities must be in [1, 100], got {n_identities}")
    rng = np.random.default_rng(seed)
    faces, nonfaces = _lfw_crops(patch, match_intensity)
    people = np.random.default_rng(1234).choice(100, n_identities, replace=False)  # fixed cast
    T, F = n_snippets, frames_per_snippet
    frames = np.zeros((n_videos, T * F, size, size), np.float32)
    face = np.zeros((n_videos, T), np.int64)
    labels = np.zeros((n_videos, T), np.int64)
    video_labels = (np.arange(n_videos) % 2).astype(np.int64)
    identity = rng.integers(0, n_identities, n_videos)
    yy, xx = np.mgrid[0:size, 0:size]
    for v in range(n_videos):
        # face presence: Markov chain per snippet
        on = rng.random() < 0.5
        for t in range(T):
            face[v, t] = on
            if rng.random() < 0.2:
                on = not on
        if video_labels[v]:
            length = rng.integers(max(1, T // 4), max(2, T // 2) + 1)
            start = rng.integers(0, T - length + 1)
            labels[v, start : start + length] = 1
        py, px = rng.integers(0, size - patch, 2)
        nonface = nonfaces[rng.integers(0, 100)]
        pos = rng.uniform(3, size - 3, 2)
        vel = rng.uniform(-1.5, 1.5, 2)
        apos, avel = np.array([0.0, rng.uniform(0, size)]), np.array([4.0, rng.uniform(-1, 1)])
        for j in range(T * F):
            t = j // F
            img = rng.normal(0.15, 0.05, (size, size)).astype(np.float32)
            img[py : py + patch, px : px + patch] = (
                faces[people[identity[v]]] if face[v, t] else nonface
            )
            pos += vel
            for a in range(2):
                if not 3 <= pos[a] <= size - 3:
                    vel[a] = -vel[a]
                    pos[a] = np.clip(pos[a], 3, size - 3)
            img[(np.abs(yy - pos[0]) < 3) & (np.abs(xx - pos[1]) < 3)] = 1.0
            if labels[v, t]:
                apos = (apos + avel) % size
                img[(np.abs(yy - apos[0]) < 5) & (np.abs(xx - apos[1]) < 5)] = 0.9
            frames[v, j] = np.clip(img, 0, 1)
    flip = rng.random(face.shape) < face_flip
    return {
        "frames": frames, "face": face, "face_signal": np.where(flip, 1 - face, face).astype(np.float32),
        "identity": identity.astype(np.int64), "snippet_labels": labels, "video_labels": video_labels,
    }  # fmt: skip


class FrameEncoder(nn.Module):
    """Small CNN mapping a ``(N, 1, size, size)`` frame batch to ``(N, dim)`` codes.

    Examples
    --------
    >>> import torch
    >>> FrameEncoder(dim=16, size=32)(torch.zeros(3, 1, 32, 32)).shape
    torch.Size([3, 16])
    """

    def __init__(self, dim: int = 64, size: int = 32):
        super().__init__()
        if size % 4:
            raise ValueError(f"size must be a multiple of 4, got {size}")
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(16 * (size // 4) ** 2, dim),
        )  # fmt: skip
        # per-dimension statistics of the training snippet features (set by
        # make_face_frame_vad when it trains the encoder; identity until then)
        self.register_buffer("feature_mean", torch.zeros(dim))
        self.register_buffer("feature_std", torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _train_encoder(frames: np.ndarray, dim: int, epochs: int, seed: int) -> FrameEncoder:
    torch.manual_seed(seed)
    size = frames.shape[-1]
    enc = FrameEncoder(dim, size)
    dec = nn.Linear(dim, 16 * 16)
    x = torch.from_numpy(frames.reshape(-1, 1, size, size))
    target = nn.functional.adaptive_avg_pool2d(x, 16).flatten(1)
    opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=2e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=g).split(256):
            loss = nn.functional.mse_loss(dec(enc(x[idx])), target[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return enc.eval()


def make_face_frame_vad(
    n_videos: int,
    dim: int = 64,
    n_snippets: int = 16,
    frames_per_snippet: int = 4,
    encoder_epochs: int = 3,
    encoder: FrameEncoder | None = None,
    face_flip: float = 0.1,
    standardize: bool = True,
    match_intensity: bool = False,
    seed: int = 0,
) -> tuple[PlantedVAD, FrameEncoder]:
    """Render videos, train (or reuse) the frame CNN, and return snippet features.

    Pass the ``encoder`` of the training split when building the test split. With
    ``standardize`` the snippet features are z-scored per dimension with the statistics of the
    split the encoder was trained on (stored in the encoder, reused for the test split): the
    auto-encoder's codes have an arbitrary, small scale under which the heads' default
    learning rates barely move (``reproduce --quick``, RTFM head: frame AUC 0.711 on the raw
    codes in the table of commit fe5cb44, 0.963 standardized).
    """
    v = render_face_videos(n_videos, n_snippets, frames_per_snippet, face_flip=face_flip,
                           match_intensity=match_intensity, seed=seed)  # fmt: skip
    trained_here = encoder is None
    if trained_here:
        encoder = _train_encoder(v["frames"], dim, encoder_epochs, seed)
    size = v["frames"].shape[-1]
    with torch.no_grad():
        codes = encoder(torch.from_numpy(v["frames"].reshape(-1, 1, size, size)))
    feats = codes.reshape(n_videos, n_snippets, frames_per_snippet, -1).mean(2)  # (V, T, D)
    if standardize:
        if trained_here:
            flat_t = feats.reshape(-1, feats.shape[-1])
            encoder.feature_mean.copy_(flat_t.mean(0))
            encoder.feature_std.copy_(flat_t.std(0).clamp(min=1e-6))
        feats = (feats - encoder.feature_mean) / encoder.feature_std
    feats = feats.numpy().astype(np.float32)
    flat, f = feats.reshape(-1, feats.shape[-1]), v["face"].reshape(-1).astype(bool)
    ref = flat[f].mean(0) - flat[~f].mean(0) if f.any() and (~f).any() else np.ones(flat.shape[1])
    lab = v["snippet_labels"].reshape(-1).astype(bool)
    adir = (
        flat[lab].mean(0) - flat[~lab].mean(0)
        if lab.any() and (~lab).any()
        else np.ones(flat.shape[1])
    )
    data = PlantedVAD(
        feats, v["video_labels"], v["snippet_labels"], v["face"], v["face_signal"], v["identity"],
        (ref / np.linalg.norm(ref))[:, None].astype(np.float32), (adir / np.linalg.norm(adir)).astype(np.float32),
        np.zeros((feats.shape[-1], 0), np.float32),
    )  # fmt: skip
    return data, encoder
