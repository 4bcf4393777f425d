"""A secondary modality from your own encoder: a feature bank loaded from ``.npz``.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit
Dynamics in Modern Transformers", Huang et al., ICML 2026 (arXiv 2601.20796). The paper
feeds real images (Omniglot, Mini-ImageNet) through an encoder and a projector into the
pretrained decoder (its stages 2 and 3). Here the encoder is yours: embed your images (or
audio, text, ...) once, save ``features`` (n, d) and integer ``labels`` (n,) in a ``.npz``
file, and the stage-2 data module draws bursty sequences of real examples from it.

1. the file format and its checks -> :func:`load_feature_bank`;
2. the modality (training classes = the first ``K2`` distinct labels, the others novel,
   used by the IC split; items = random real examples of the class) -> :class:`FeatureBank`;
3. an example bank from an image set shipped inside scikit-learn (the 8x8 handwritten
   digits, embedded by a PCA fitted on them) -> :func:`digits_features`,
   :func:`save_feature_bank`.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

FEATURES_KEY, LABELS_KEY = "features", "labels"


def load_feature_bank(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``features`` (n, d) float and ``labels`` (n,) int from an ``.npz`` file.

    Raises a one-line ``ValueError`` for a missing or unreadable file, missing keys,
    mismatched lengths, non-finite features or non-integer labels.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"feature bank {str(p)!r} does not exist")
    try:
        with np.load(p, allow_pickle=False) as z:
            keys = set(getattr(z, "files", ()))
            arrays = {k: np.asarray(z[k]) for k in (FEATURES_KEY, LABELS_KEY) if k in keys}
    except Exception as err:  # a corrupt, truncated, pickled or foreign file: one line
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"cannot read feature bank {str(p)!r}: {detail}") from None
    if len(arrays) != 2:
        raise ValueError(
            f"feature bank {p.name} needs arrays 'features' (n, d) and 'labels' (n,); "
            f"it has {sorted(keys)}"
        )
    x, y = arrays[FEATURES_KEY], arrays[LABELS_KEY]
    if x.ndim != 2 or y.ndim != 1 or len(x) != len(y) or len(y) == 0:
        raise ValueError(
            f"feature bank {p.name}: features must be (n, d) and labels (n,), got "
            f"{x.shape} and {y.shape}"
        )
    if not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
        raise ValueError(f"feature bank {p.name}: features must be finite numbers")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"feature bank {p.name}: labels must be integers, got {y.dtype}")
    return x.astype(np.float32), y.astype(np.int64)


class FeatureBank:
    """Real examples as a secondary modality (duck-types :class:`~mmicl.gmm_data.GMMBank`).

    Parameters
    ----------
    features, labels:
        (n, d) embeddings and (n,) integer class ids (any integers; sorted, the first ``K2``
        distinct ones are the training classes, the rest the novel classes of the IC split).
    K2:
        Number of training classes (``None``: all but ``min_novel``).
    min_novel:
        Novel classes required (the IC split draws ``N/B`` distinct ones per sequence).
    standardize:
        Centre each dimension and scale the vectors to unit mean norm (the scale of the GMM
        items), with statistics of the training classes only.

    Items are random examples of the class; ``eps`` is ignored (the noise is the data's).

    Examples
    --------
    >>> x = torch.randn(60, 5).numpy(); y = (torch.arange(60) % 6).numpy()
    >>> bank = FeatureBank(x, y, K2=2)
    >>> bank.K, bank.L, bank.D, bank.n_novel
    (2, 2, 5, 4)
    >>> bank.items(torch.tensor([[0, 1]]), 0.0, torch.Generator().manual_seed(0), None).shape
    torch.Size([1, 2, 5])
    """

    def __init__(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        K2: int | None = None,
        min_novel: int = 4,
        standardize: bool = True,
    ) -> None:
        x = torch.as_tensor(np.asarray(features, dtype=np.float32))
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        classes = torch.unique(y)  # sorted
        n_cls = len(classes)
        K2 = n_cls - min_novel if K2 is None else int(K2)
        if K2 < 2:
            raise ValueError(
                f"the feature bank needs K2 >= 2 training classes plus {min_novel} novel ones; "
                f"it has {n_cls} classes"
            )
        if K2 + min_novel > n_cls:
            raise ValueError(
                f"K2={K2} training classes leave {n_cls - K2} novel classes for the IC split; "
                f"it needs {min_novel} (the bank has {n_cls} classes)"
            )
        train, novel = classes[:K2], classes[K2:]
        pools = [x[y == c] for c in (*train.tolist(), *novel.tolist())]
        if standardize:
            xt = torch.cat(pools[:K2])
            mean = xt.mean(0)
            scale = (xt - mean).norm(dim=1).mean().clamp_min(1e-12)
            pools = [(p - mean) / scale for p in pools]
        self.class_ids = (*train.tolist(), *novel.tolist())
        self.K = self.L = K2
        self.D, self.n_novel = x.shape[1], len(novel)
        self.class_label = torch.arange(K2)
        self._sizes = torch.tensor([len(p) for p in pools])
        self._offsets = torch.cumsum(torch.cat([torch.tensor([0]), self._sizes[:-1]]), 0)
        self._flat = torch.cat(pools)

    @classmethod
    def from_npz(cls, path: str | Path, K2: int | None = None, **kw) -> FeatureBank:
        """A bank from a ``.npz`` file with ``features`` and ``labels``
        (:func:`load_feature_bank`)."""
        return cls(*load_feature_bank(path), K2=K2, **kw)

    def items(self, classes, eps, g, novel):
        """Random examples of the given classes (``novel`` picks the novel classes)."""
        idx = classes.clone()
        if novel is not None:
            idx = torch.where(novel, classes % max(self.n_novel, 1) + self.K, classes)
        idx = idx.clamp_max(len(self._sizes) - 1)
        pick = (torch.rand(idx.shape, generator=g) * self._sizes[idx]).long()
        return self._flat[self._offsets[idx] + pick]


def digits_features(dim: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 handwritten 8x8 digits embedded by a ``dim``-component PCA
    (fitted on all images): an offline stand-in for an image encoder's embeddings.

    >>> x, y = digits_features(8)
    >>> x.shape, sorted(set(y.tolist())) == list(range(10))
    ((1797, 8), True)
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    if not 1 <= dim <= 64:
        raise ValueError(f"dim must be between 1 and 64 (8x8 pixels), got {dim}")
    digits = load_digits()
    x = PCA(n_components=dim, random_state=seed).fit_transform(digits.data / 16.0)
    return x.astype(np.float32), digits.target.astype(np.int64)


def save_feature_bank(path: str | Path, features: np.ndarray, labels: np.ndarray) -> Path:
    """Write ``features`` and ``labels`` to ``path`` (``.npz``) atomically (a temporary file
    in the same folder, then a rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".npz")
    os.close(fd)
    try:
        np.savez(tmp, **{FEATURES_KEY: features, LABELS_KEY: labels})
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return p


def mean_norm(bank: FeatureBank) -> float:
    """Mean Euclidean norm of the bank's training examples (1 after standardising).

    >>> x = torch.randn(40, 3).numpy() * 7; y = (torch.arange(40) % 8).numpy()
    >>> round(mean_norm(FeatureBank(x, y, K2=4)), 4)
    1.0
    """
    n = int(bank._sizes[: bank.K].sum())
    return float(bank._flat[:n].norm(dim=1).mean()) if n else math.nan
