"""In-context classification episodes (the task of Lutz et al., ICML 2026, Sec. 2).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz, Haris, Chandra, Gangrade, Saligrama (arXiv 2604.11613).

One episode is a multi-class linear classification problem in the *hard no-margin*
regime: features ``x ~ N(0, I_d)``, a random linear map ``W ~ N(0, I)`` of shape
``(C, d)`` and labels ``y = argmax_c (W x)_c`` with no margin filtering, so points
arbitrarily close to a decision boundary are kept. ``N`` labelled context points and one
probe ``x_q`` form the episode; the probe's label is the target.

Map of this module:

* linear task ``y = argmax W x``                      -> :class:`LinearTaskSampler` ``kind="linear"``
* robustness variants (label noise, semi-supervised
  contexts, a nonlinear task, longer contexts)         -> ``noise``, ``unlabeled``,
  ``kind="quadratic"``, ``n_context``
* token labels as one-hot rows, unlabeled = zero row   -> :func:`one_hot_labels`
* user episodes from an ``.npz`` file (validated)       -> :func:`load_episodes`

Batches are dicts of tensors::

    x        (B, N, d)  float32   context features
    y        (B, N)     int64     context labels as seen by the learner (-1 = unlabeled)
    y_clean  (B, N)     int64     noise-free context labels (for the analysis only)
    xq       (B, d)     float32   probe features
    yq       (B,)       int64     probe label (always clean)
    w        (B, C, d)  float32   the episode's linear map (``v`` too for the quadratic task)
"""

from __future__ import annotations

import math

import numpy as np
import torch

KINDS = ("linear", "quadratic")


def _f32(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32).astype(np.float64)


def check_task_sizes(d: int, n_classes: int, n_context: int | None = None) -> None:
    """Raise ``ValueError`` unless ``d >= 1``, ``C >= 2`` and ``N >= 1``."""
    if not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"feature dimension d must be an integer >= 1, got {d!r}")
    if not isinstance(n_classes, int | np.integer) or n_classes < 2:
        raise ValueError(f"number of classes C must be an integer >= 2, got {n_classes!r}")
    if n_context is not None and (not isinstance(n_context, int | np.integer) or n_context < 1):
        raise ValueError(f"context length N must be an integer >= 1, got {n_context!r}")


def one_hot_labels(y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Integer labels ``(B, N)`` with ``-1`` for unlabeled -> one-hot rows ``(B, N, C)``.

    Unlabeled points get an all-zero label row (the semi-supervised token of the paper).

    >>> one_hot_labels(torch.tensor([[0, 2, -1]]), 3)
    tensor([[[1., 0., 0.],
             [0., 0., 1.],
             [0., 0., 0.]]])
    """
    if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"integer labels expected, got dtype {y.dtype}")
    if y.numel() and (int(y.min()) < -1 or int(y.max()) >= n_classes):
        raise ValueError(
            f"labels must lie in [0, {n_classes - 1}] (or -1 for unlabeled), "
            f"got range [{int(y.min())}, {int(y.max())}]"
        )
    out = torch.zeros(*y.shape, n_classes, dtype=torch.float32)
    mask = y >= 0
    out[mask] = torch.nn.functional.one_hot(y[mask].long(), n_classes).float()
    return out


def load_episodes(path, n_classes: int) -> dict[str, torch.Tensor]:
    """Read episodes ``x``, ``y``, ``xq`` from an ``.npz`` file and validate them.

    ``x`` is ``(N, d)`` or ``(B, N, d)``, ``xq`` is ``(d,)`` or ``(B, d)``; ``y`` holds
    integer labels ``(B, N)`` (``-1`` = unlabeled) or one-hot rows ``(B, N, C)`` (all-zero
    row = unlabeled). An optional ``yq`` ``(B,)`` (or scalar) holds the probes' true classes,
    needed to train or score on the file. Returns a batch with integer ``y`` (and ``yq``,
    ``y_clean = y`` when ``yq`` is given); raises ``ValueError`` with one line on NaN/inf,
    labels out of range, rows that are not one-hot or mismatched shapes.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in ("x", "y", "xq", "yq") if k in data}
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot read episodes from {str(path)!r}: {err}") from err
    missing = {"x", "y", "xq"} - set(arrays)
    if missing:
        raise ValueError(f"episode file {str(path)!r} lacks the arrays {sorted(missing)}")
    x, y, xq = arrays["x"], arrays["y"], arrays["xq"]
    if x.ndim == 2:  # a single episode
        x, xq = x[None], xq[None]
        y = y[None]
    if x.ndim != 3 or xq.ndim != 2 or y.ndim not in (2, 3):
        raise ValueError(
            f"expected x (B, N, d), y (B, N) or (B, N, C) and xq (B, d); got shapes "
            f"{x.shape}, {y.shape}, {xq.shape}"
        )
    for name, arr in (("x", x), ("xq", xq), ("y", y)):
        if not np.issubdtype(arr.dtype, np.number):
            raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} contains NaN or inf")
    if y.ndim == 3:
        if y.shape[-1] != n_classes:
            raise ValueError(
                f"one-hot labels have {y.shape[-1]} columns but the model has C={n_classes}"
            )
        if not (np.isin(y, (0, 1)).all() and (y.sum(-1) <= 1).all()):
            raise ValueError("labels y must be one-hot rows (or all-zero rows for unlabeled)")
        y = np.where(y.sum(-1) > 0, y.argmax(-1), -1)
    elif not np.equal(np.mod(y, 1), 0).all():
        raise ValueError("integer class labels expected in y")
    if y.shape != x.shape[:2] or xq.shape[0] != x.shape[0] or xq.shape[1] != x.shape[2]:
        raise ValueError(
            f"shapes disagree: x {x.shape}, y {y.shape}, xq {xq.shape} (need y (B, N), xq (B, d))"
        )
    labels = torch.from_numpy(y.astype(np.int64))
    one_hot_labels(labels, n_classes)  # range check: [0, C-1] or -1
    out = {
        "x": torch.from_numpy(x.astype(np.float32)),
        "y": labels,
        "xq": torch.from_numpy(xq.astype(np.float32)),
    }
    if "yq" in arrays:
        yq = np.atleast_1d(arrays["yq"])
        if yq.shape != (x.shape[0],) or not np.isfinite(yq).all():
            raise ValueError(f"yq must hold one class per episode, shape ({x.shape[0]},)")
        if not np.equal(np.mod(yq, 1), 0).all() or yq.min() < 0 or yq.max() >= n_classes:
            raise ValueError(f"probe labels yq must be integers in [0, {n_classes - 1}]")
        out["yq"] = torch.from_numpy(yq.astype(np.int64))
        out["y_clean"] = labels.clone()
    return out


class LinearTaskSampler:
    """Seeded generator of in-context classification episodes.

    Parameters
    ----------
    d
        Feature dimension (``d >= 1``).
    n_classes
        Number of classes ``C >= 2``.
    n_context
        Number of context points ``N >= 1``.
    noise
        Probability in ``[0, 1]`` that a context label is replaced by a uniformly drawn
        *different* class (the probe label stays clean).
    unlabeled
        Fraction in ``[0, 1)`` of context points whose label is hidden (``y = -1``,
        a zero label row in the token); ``floor(unlabeled * N)`` points per episode.
    kind
        ``"linear"``: ``y = argmax W x``. ``"quadratic"``: ``y = argmax (W x + V (x*x - 1)/sqrt 2)``
        with a second Gaussian map ``V``, a nonlinear task no linear rule solves.
    seed
        Base seed. Episode ``i`` of :meth:`sample` uses its own generator seeded with
        ``(seed, i)``, so an episode does not depend on the batch it is drawn in;
        :meth:`batch` draws a whole training batch from one generator seeded with
        ``(seed, index)`` (cheaper, for the training stream).

    References
    ----------
    Lutz et al., "Symmetry Reveals Layerwise Dynamics: How Transformers Perform
    In-Context Classification", ICML 2026 (arXiv 2604.11613).

    Examples
    --------
    >>> sampler = LinearTaskSampler(d=4, n_classes=3, n_context=8, seed=0)
    >>> ep = sampler.sample(2)
    >>> tuple(ep["x"].shape), tuple(ep["y"].shape), tuple(ep["xq"].shape)
    ((2, 8, 4), (2, 8), (2, 4))
    >>> bool(torch.equal(ep["x"], sampler.sample(2)["x"]))
    True
    >>> bool(torch.equal(sampler.sample(1, start=1)["x"][0], ep["x"][1]))
    True
    """

    def __init__(
        self,
        d: int,
        n_classes: int,
        n_context: int,
        noise: float = 0.0,
        unlabeled: float = 0.0,
        kind: str = "linear",
        seed: int = 0,
    ) -> None:
        check_task_sizes(d, n_classes, n_context)
        if not (isinstance(noise, int | float) and 0.0 <= float(noise) <= 1.0):
            raise ValueError(f"label noise must be a probability in [0, 1], got {noise!r}")
        if not (isinstance(unlabeled, int | float) and 0.0 <= float(unlabeled) < 1.0):
            raise ValueError(f"unlabeled fraction must lie in [0, 1), got {unlabeled!r}")
        if kind not in KINDS:
            raise ValueError(f"unknown task kind {kind!r}; expected one of {KINDS}")
        if math.floor(unlabeled * n_context) >= n_context:
            raise ValueError("at least one context point must stay labeled")
        self.d, self.n_classes, self.n_context = int(d), int(n_classes), int(n_context)
        self.noise, self.unlabeled, self.kind, self.seed = (
            float(noise),
            float(unlabeled),
            kind,
            seed,
        )

    def __repr__(self) -> str:
        return (
            f"LinearTaskSampler(d={self.d}, n_classes={self.n_classes}, "
            f"n_context={self.n_context}, noise={self.noise}, unlabeled={self.unlabeled}, "
            f"kind={self.kind!r}, seed={self.seed})"
        )

    def _draw(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        d, c, big_n = self.d, self.n_classes, self.n_context
        # rounded to float32 first, so the labels are exactly argmax of the stored tensors
        w = _f32(rng.standard_normal((n, c, d)))  # (B, C, d) random linear map
        feats = _f32(rng.standard_normal((n, big_n + 1, d)))  # (B, N+1, d) context + probe
        scores = np.einsum("bcd,bnd->bnc", w, feats)  # (B, N+1, C)
        if self.kind == "quadratic":
            v = _f32(rng.standard_normal((n, c, d)))
            scores = scores + np.einsum("bcd,bnd->bnc", v, (feats**2 - 1.0) / math.sqrt(2.0))
        labels = scores.argmax(-1)  # (B, N+1) hard no-margin labels: no filtering
        y_clean = labels[:, :big_n]
        y = y_clean.copy()
        if self.noise > 0:
            flip = rng.random((n, big_n)) < self.noise
            shift = rng.integers(1, c, size=(n, big_n))  # a uniformly drawn *other* class
            y = np.where(flip, (y + shift) % c, y)
        n_unl = math.floor(self.unlabeled * big_n)
        if n_unl:
            hidden = np.argsort(rng.random((n, big_n)), axis=1)[:, :n_unl]
            np.put_along_axis(y, hidden, -1, axis=1)
        out = {
            "x": feats[:, :big_n],
            "y": y,
            "y_clean": y_clean,
            "xq": feats[:, big_n],
            "yq": labels[:, big_n],
            "w": w,
        }
        if self.kind == "quadratic":
            out["v"] = v
        return out

    @staticmethod
    def _to_torch(parts: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        out = {}
        for key, val in parts.items():
            t = torch.from_numpy(np.ascontiguousarray(val))
            out[key] = t.float() if t.is_floating_point() else t.long()
        return out

    def sample(self, n_episodes: int, start: int = 0) -> dict[str, torch.Tensor]:
        """Episodes ``start .. start + n_episodes - 1``, each from its own seeded generator."""
        if n_episodes < 1:
            raise ValueError(f"n_episodes must be >= 1, got {n_episodes}")
        draws = [
            self._draw(np.random.default_rng([self.seed, start + i]), 1) for i in range(n_episodes)
        ]
        return self._to_torch({k: np.concatenate([p[k] for p in draws]) for k in draws[0]})

    def batch(self, batch_size: int, index: int) -> dict[str, torch.Tensor]:
        """Training batch number ``index``: ``batch_size`` episodes from one generator."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        rng = np.random.default_rng([self.seed, 2**31 + index])
        return self._to_torch(self._draw(rng, batch_size))


#: scikit-learn's bundled tables (shipped inside its wheel: no download)
SKLEARN_TABLES = ("digits", "wine", "iris", "breast_cancer")


def read_table(source: str, label_column: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(n, p)`` and integer class codes ``(n,)`` of a table.

    ``source`` is ``"sklearn:<name>"`` (one of :data:`SKLEARN_TABLES`) or the path of a CSV
    file with a header row, numeric feature columns and one label column (``label_column``,
    default: the last column; its values may be any strings or numbers). Raises
    ``ValueError`` with one line on a missing file, a missing label column, non-numeric or
    missing feature values, or fewer than two classes.

    >>> feats, labels = read_table("sklearn:wine")
    >>> feats.shape, sorted(set(labels.tolist()))
    ((178, 13), [0, 1, 2])
    """
    source = str(source)
    if source.startswith("sklearn:"):
        name = source.split(":", 1)[1]
        if name not in SKLEARN_TABLES:
            raise ValueError(f"unknown sklearn table {name!r}; expected one of {SKLEARN_TABLES}")
        import sklearn.datasets

        data = getattr(sklearn.datasets, f"load_{name}")()
        feats, raw = np.asarray(data.data, dtype=np.float64), np.asarray(data.target)
    else:
        import csv
        from pathlib import Path

        path = Path(source)
        if not path.is_file():
            raise ValueError(f"table file {source!r} does not exist")
        try:
            with path.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
        except (OSError, UnicodeDecodeError, csv.Error) as err:
            raise ValueError(f"cannot read table {source!r}: {err}") from err
        if len(rows) < 2:
            raise ValueError(f"table {source!r} needs a header row and at least one data row")
        header, body = rows[0], [r for r in rows[1:] if r]
        col = len(header) - 1 if label_column is None else None
        if label_column is not None:
            if label_column not in header:
                raise ValueError(f"label column {label_column!r} not in the header of {source!r}")
            col = header.index(label_column)
        if any(len(r) != len(header) for r in body):
            raise ValueError(f"table {source!r}: every row needs {len(header)} fields")
        raw = np.asarray([r[col] for r in body])
        try:
            feats = np.asarray(
                [[float(v) for i, v in enumerate(r) if i != col] for r in body], dtype=np.float64
            )
        except ValueError as err:
            raise ValueError(f"table {source!r}: non-numeric feature value ({err})") from err
    if not np.isfinite(feats).all():
        raise ValueError(f"table {source!r} has missing (NaN) or infinite feature values")
    classes, labels = np.unique(raw, return_inverse=True)
    if len(classes) < 2:
        raise ValueError(f"table {source!r} has fewer than two classes")
    return feats, labels.astype(np.int64)


class TableEpisodeSampler:
    """Episodes built from a real table: random feature subsets, standardised, N context points.

    Episode ``i`` (its own generator seeded with ``(seed, i)``) draws ``n_classes`` of the
    table's classes and relabels them ``0..C-1`` in random order, ``d`` random feature columns,
    and ``n_context + 1`` distinct rows of those classes (the last is the probe). Features are
    standardised with the context points' mean and standard deviation (the probe is not used
    for them; constant columns become 0). The same batch format as :class:`LinearTaskSampler`
    (``y_clean = y``), so models, anchors and the analysis run on it unchanged.

    Parameters
    ----------
    features, labels
        Table ``(n, p)`` and integer class codes ``(n,)`` (see :func:`read_table`).
    d, n_classes, n_context
        Episode size; needs ``d <= p``, at least ``n_classes`` classes and ``n_context + 1``
        rows in every draw of ``n_classes`` classes.
    seed
        Base seed of the episodes.
    name
        Shown in messages (``"digits"``, a file name).

    References
    ----------
    Lutz et al., ICML 2026 (arXiv 2604.11613): the real-data episodes of its robustness study;
    built here from scikit-learn's bundled tables or a user's CSV.

    Examples
    --------
    >>> sampler = TableEpisodeSampler.from_source("sklearn:digits", d=8, n_classes=2,
    ...                                          n_context=32, seed=0)
    >>> ep = sampler.sample(4)
    >>> tuple(ep["x"].shape), tuple(ep["xq"].shape), int(ep["y"].max()) <= 1
    ((4, 32, 8), (4, 8), True)
    """

    def __init__(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        d: int,
        n_classes: int,
        n_context: int,
        seed: int = 0,
        name: str = "table",
    ) -> None:
        check_task_sizes(d, n_classes, n_context)
        features, labels = np.asarray(features, dtype=np.float64), np.asarray(labels)
        if features.ndim != 2 or labels.shape != (len(features),):
            raise ValueError(f"{name}: need features (n, p) and labels (n,)")
        if d > features.shape[1]:
            raise ValueError(f"{name} has {features.shape[1]} feature columns, fewer than d={d}")
        classes, counts = np.unique(labels, return_counts=True)
        if len(classes) < n_classes:
            raise ValueError(f"{name} has {len(classes)} classes, fewer than C={n_classes}")
        smallest = int(np.sort(counts)[:n_classes].sum())
        if smallest < n_context + 1:
            raise ValueError(
                f"{name}: the {n_classes} smallest classes hold {smallest} rows, fewer than "
                f"the N+1={n_context + 1} an episode needs"
            )
        self.features, self.labels, self.classes = features, labels, classes
        self.d, self.n_classes, self.n_context = int(d), int(n_classes), int(n_context)
        self.seed, self.name = seed, name
        self.noise, self.unlabeled, self.kind = 0.0, 0.0, "table"

    @classmethod
    def from_source(
        cls,
        source: str,
        d: int,
        n_classes: int,
        n_context: int,
        seed: int = 0,
        label_column: str | None = None,
    ) -> TableEpisodeSampler:
        """Sampler over :func:`read_table` ``(source, label_column)``."""
        feats, labels = read_table(source, label_column)
        name = source.split(":", 1)[1] if source.startswith("sklearn:") else source
        return cls(feats, labels, d, n_classes, n_context, seed, name)

    def _episode(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        chosen = rng.choice(self.classes, size=self.n_classes, replace=False)
        rows = np.flatnonzero(np.isin(self.labels, chosen))
        rows = rng.choice(rows, size=self.n_context + 1, replace=False)
        cols = rng.choice(self.features.shape[1], size=self.d, replace=False)
        feats = self.features[np.ix_(rows, cols)]
        ctx = feats[: self.n_context]
        std = ctx.std(0)
        feats = (feats - ctx.mean(0)) / np.where(std > 1e-12, std, np.inf)
        relabel = {c: k for k, c in enumerate(chosen)}
        return _f32(feats), np.array([relabel[v] for v in self.labels[rows]])

    def _draw(self, rngs) -> dict[str, torch.Tensor]:
        feats, labels = zip(*(self._episode(r) for r in rngs), strict=True)
        feats, labels = np.stack(feats), np.stack(labels)
        n = self.n_context
        parts = {"x": feats[:, :n], "y": labels[:, :n], "y_clean": labels[:, :n],
                 "xq": feats[:, n], "yq": labels[:, n]}  # fmt: skip
        return LinearTaskSampler._to_torch(parts)

    def sample(self, n_episodes: int, start: int = 0) -> dict[str, torch.Tensor]:
        """Episodes ``start .. start + n_episodes - 1``, each from its own seeded generator."""
        if n_episodes < 1:
            raise ValueError(f"n_episodes must be >= 1, got {n_episodes}")
        return self._draw(np.random.default_rng([self.seed, start + i]) for i in range(n_episodes))

    def batch(self, batch_size: int, index: int) -> dict[str, torch.Tensor]:
        """Training batch number ``index`` (episodes disjoint from :meth:`sample`'s indices)."""
        return self.sample(batch_size, start=2**31 + index * batch_size)


def save_episodes(path, batch: dict[str, torch.Tensor]) -> None:
    """Write a batch's ``x``, ``y``, ``xq`` and ``yq`` to an ``.npz`` file (atomically)."""
    import io

    from icml26_shared.results import atomic_write_bytes

    buf = io.BytesIO()
    np.savez(buf, **{k: batch[k].numpy() for k in ("x", "y", "xq", "yq") if k in batch})
    atomic_write_bytes(path, buf.getvalue())
