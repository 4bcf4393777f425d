"""Data streams for the experiments: fast numpy generators, null suites, river wrappers.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239); the stream families are the
standard ones of the stream-learning literature (SEA, Agrawal, Hyperplane, RandomRBF, LED,
STAGGER) as shipped by ``river.datasets.synth``, plus:

- null suites where no split can help: pure noise (:func:`noise`), and a class prior that
  switches every ``period`` instances independently of the features
  (:func:`drifting_prior`);
- planted signals: a single threshold (:func:`planted_threshold`), a weak signal of size
  ``eps`` (:func:`weak_signal`), a depth-2 tree (:func:`planted_tree`);
- a fast numpy SEA with abrupt drifts and irrelevant features (:func:`sea`);
- real data shipped in wheels: river's Phishing, Bananas, ImageSegments, Shuttle,
  scikit-learn's digits (shuffled with the seed); Elec2, Covtype and Airlines on the
  real-data path (they download; clear error offline). Airlines comes through CapyMOA (the
  ``bench`` extra): MOA's nominal attributes (airline, airports) become their integer codes.

Every generator returns a :class:`Stream` with ``X (n, d)`` float64, ``y (n,)`` int64.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["STREAMS", "Stream", "drifting_prior", "make_stream", "noise", "planted_threshold",
           "planted_tree", "sea", "weak_signal"]  # fmt: skip


@dataclass
class Stream:
    """An ordered, finite stream.

    Attributes
    ----------
    name
        Stream name.
    X
        Features, shape ``(n, d)``, float64.
    y
        Labels ``0..K-1``, shape ``(n,)``, int64.
    n_classes
        ``K``.
    drifts
        Instance indices where the concept changes.
    null
        True when no split can improve prediction (features independent of the label).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    drifts: list[int] = field(default_factory=list)
    null: bool = False

    def __post_init__(self):
        assert self.X.ndim == 2 and self.y.shape == (self.X.shape[0],)

    def __len__(self) -> int:
        return self.X.shape[0]

    def chunks(self, size: int):
        """Yield ``(X_chunk, y_chunk)`` in order."""
        for i in range(0, len(self), size):
            yield self.X[i : i + size], self.y[i : i + size]


def noise(n: int = 20_000, d: int = 10, n_classes: int = 2, seed: int = 0) -> Stream:
    """Null stream: ``d`` U[0,1] features, labels uniform and independent of them.

    >>> s = noise(100, d=3, seed=0)
    >>> s.X.shape, s.y.shape, s.null
    ((100, 3), (100,), True)
    """
    rng = np.random.default_rng(seed)
    return Stream("noise", rng.uniform(size=(n, d)), rng.integers(0, n_classes, n), n_classes,
                  null=True)  # fmt: skip


def drifting_prior(
    n: int = 20_000, d: int = 10, period: int = 5_000, priors=(0.2, 0.8), seed: int = 0
) -> Stream:
    """Non-stationary null: P(y=1) switches between ``priors`` every ``period`` instances,
    features independent of everything."""
    rng = np.random.default_rng(seed)
    p = np.asarray(priors)[(np.arange(n) // period) % len(priors)]
    y = (rng.uniform(size=n) < p).astype(np.int64)
    return Stream("drifting_prior", rng.uniform(size=(n, d)), y, 2,
                  drifts=list(range(period, n, period)), null=True)  # fmt: skip


def planted_threshold(
    n: int = 5_000, d: int = 10, feature: int = 3, threshold: float = 0.6, flip: float = 0.1,
    seed: int = 0,
) -> Stream:  # fmt: skip
    """``y = 1[x_feature > threshold]`` with a fraction ``flip`` of labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = (X[:, feature] > threshold).astype(np.int64) ^ (rng.uniform(size=n) < flip)
    return Stream("planted_threshold", X, y.astype(np.int64), 2)


def weak_signal(n: int = 40_000, d: int = 10, eps: float = 0.1, seed: int = 0) -> Stream:
    """``P(y=1 | x) = 0.5 + eps * sign(x_0 - 0.5)``: a signal of size ``eps``."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    p = 0.5 + eps * np.sign(X[:, 0] - 0.5)
    return Stream(f"weak_signal_{eps:g}", X, (rng.uniform(size=n) < p).astype(np.int64), 2)


def planted_tree(n: int = 20_000, d: int = 5, flip: float = 0.05, seed: int = 0) -> Stream:
    """Depth-2 tree, greedily recoverable: root ``x0 <= 0.5``; left child ``x1 <= 0.3``
    (labels 0 | 1), right child ``x2 <= 0.9`` (labels 0 | 1); a fraction ``flip`` of labels
    flipped."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    left = X[:, 0] <= 0.5
    y = np.where(left, (X[:, 1] > 0.3), (X[:, 2] > 0.9)).astype(np.int64)
    y ^= (rng.uniform(size=n) < flip).astype(np.int64)
    return Stream("planted_tree", X, y, 2)


SEA_THRESHOLDS = (8.0, 9.0, 7.0, 9.5)  # Street & Kim (2001), the four SEA concepts


def sea(
    n: int = 50_000, n_irrelevant: int = 7, noise_rate: float = 0.1, n_drifts: int = 3,
    seed: int = 0,
) -> Stream:  # fmt: skip
    """SEA concepts: ``y = 1[x0 + x1 <= theta]`` on U[0,10]^3 (x2 irrelevant) plus
    ``n_irrelevant`` more irrelevant features; ``theta`` cycles through the four SEA values
    at ``n_drifts`` evenly spaced abrupt drifts; a fraction ``noise_rate`` of labels flipped.
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 10.0, size=(n, 3 + n_irrelevant))
    seg = np.minimum(np.arange(n) * (n_drifts + 1) // n, n_drifts)
    theta = np.asarray(SEA_THRESHOLDS)[seg % 4]
    y = (X[:, 0] + X[:, 1] <= theta).astype(np.int64)
    y ^= (rng.uniform(size=n) < noise_rate).astype(np.int64)
    drifts = [int(k * n // (n_drifts + 1)) for k in range(1, n_drifts + 1)]
    return Stream("sea", X, y, 2, drifts=drifts)


# ---------------------------------------------------------------- river wrappers


def from_river(dataset, n: int, name: str, drifts=(), features=None) -> Stream:
    """Materialise the first ``n`` instances of a river dataset (dict rows) as arrays.

    Labels are mapped to ``0..K-1`` in sorted order; non-numeric features are rejected.
    """
    rows = list(itertools.islice(iter(dataset), n))
    if not rows:
        raise ValueError(f"stream {name!r} produced no instances")
    names = list(features or rows[0][0].keys())
    X = np.array([[float(x[k]) for k in names] for x, _ in rows], dtype=np.float64)
    labels = [yv for _, yv in rows]
    uniq = sorted(set(labels), key=str)
    index = {u: k for k, u in enumerate(uniq)}
    y = np.array([index[v] for v in labels], dtype=np.int64)
    return Stream(name, X, y, len(uniq), drifts=list(drifts))


def _river_synth(kind: str, n: int, seed: int) -> Stream:
    from river.datasets import synth

    half = n // 2
    # river's sigmoid drift overflows math.exp when (position - t) > ~177 * width
    width = max(50, n // 300)
    if kind == "agrawal":
        ds = synth.ConceptDriftStream(
            synth.Agrawal(classification_function=0, seed=seed, perturbation=0.05),
            synth.Agrawal(classification_function=2, seed=seed + 1, perturbation=0.05),
            position=half, width=width, seed=seed,
        )  # fmt: skip
        return from_river(ds, n, "agrawal_drift", drifts=[half])
    if kind == "hyperplane":
        ds = synth.Hyperplane(seed=seed, n_features=10, n_drift_features=2, mag_change=0.001,
                              noise_percentage=0.05)  # fmt: skip
        return from_river(ds, n, "hyperplane")
    if kind == "rbf_drift":
        ds = synth.RandomRBFDrift(seed_model=seed, seed_sample=seed + 1, n_classes=3,
                                  n_features=10, n_centroids=50, change_speed=0.001,
                                  n_drift_centroids=50)  # fmt: skip
        return from_river(ds, n, "rbf_drift")
    if kind == "rbf":
        ds = synth.RandomRBF(seed_model=seed, seed_sample=seed + 1, n_classes=3,
                             n_features=10, n_centroids=50)  # fmt: skip
        return from_river(ds, n, "rbf")
    if kind == "led":
        ds = synth.LED(seed=seed, noise_percentage=0.1, irrelevant_features=True)
        return from_river(ds, n, "led")
    if kind == "led_drift":
        ds = synth.LEDDrift(seed=seed, noise_percentage=0.1, irrelevant_features=True,
                            n_drift_features=7)  # fmt: skip
        return from_river(ds, n, "led_drift")
    if kind == "stagger":
        ds = synth.ConceptDriftStream(
            synth.STAGGER(classification_function=0, seed=seed),
            synth.STAGGER(classification_function=2, seed=seed + 1),
            position=half, width=width, seed=seed,
        )  # fmt: skip
        return from_river(ds, n, "stagger_drift", drifts=[half])
    if kind == "river_sea":
        ds = synth.ConceptDriftStream(
            synth.SEA(variant=0, seed=seed, noise=0.1), synth.SEA(variant=3, seed=seed + 1, noise=0.1),
            position=half, width=width, seed=seed,
        )  # fmt: skip
        return from_river(ds, n, "river_sea_drift", drifts=[half])
    raise ValueError(f"unknown river stream {kind!r}")


def _bundled(kind: str, n: int, seed: int) -> Stream:
    if kind == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        order = np.random.default_rng(seed).permutation(len(y))[:n]
        return Stream("digits", X[order].astype(np.float64), y[order].astype(np.int64), 10)
    from river import datasets

    cls = {"phishing": datasets.Phishing, "bananas": datasets.Bananas,
           "image_segments": datasets.ImageSegments, "shuttle": datasets.Shuttle}[kind]  # fmt: skip
    return from_river(cls(), n, kind)


def elec2(n: int = 45_312, seed: int = 0) -> Stream:
    """Elec2 (Harries 1999) through river; downloads it, with a clear error when offline."""
    from river import datasets

    ds = datasets.Elec2()
    try:
        return from_river(ds, n, "elec2")
    except OSError as exc:  # urllib errors are OSErrors
        raise OSError(
            f"Elec2 is not cached and could not be downloaded ({exc}); it needs internet. "
            "Offline alternatives: the 'phishing', 'bananas', 'image_segments' or 'digits' streams."
        ) from exc


def covtype(n: int = 581_012, seed: int = 0) -> Stream:
    """Forest covertype (581,012 x 54, 7 classes) through scikit-learn, in its file order.

    Downloads on first use (real-data path); a clear error when it is not cached and offline.
    """
    from sklearn.datasets import fetch_covtype

    try:
        X, y = fetch_covtype(return_X_y=True, download_if_missing=True)
    except OSError as exc:  # urllib errors are OSErrors
        raise OSError(
            f"covtype is not cached and could not be downloaded ({exc}); it needs internet. "
            "Offline alternatives: the 'shuttle', 'phishing', 'bananas', 'image_segments' or "
            "'digits' streams."
        ) from exc
    return Stream("covtype", X[:n].astype(np.float64), (y[:n] - 1).astype(np.int64), 7)


def from_capymoa(stream, n: int, name: str) -> Stream:
    """The first ``n`` instances of a CapyMOA classification stream (nominal features as codes)."""
    schema = stream.get_schema()
    X = np.empty((n, schema.get_num_attributes()), np.float64)
    y = np.empty(n, np.int64)
    m = 0
    while m < n and stream.has_more_instances():
        inst = stream.next_instance()
        X[m], y[m] = inst.x, inst.y_index
        m += 1
    if m == 0:
        raise ValueError(f"{name}: the stream is empty")
    return Stream(name, X[:m], y[:m], int(schema.get_num_classes()))


def airlines(n: int = 539_383, seed: int = 0, directory: str | None = None) -> Stream:
    """MOA's Airlines (539,383 x 7, delayed or not) through CapyMOA, in its file order.

    Downloads on first use into ``directory`` (default: ``~/.cache/anytime-hoeffding``);
    needs the ``bench`` extra and a Java runtime, and a clear error explains what is missing.
    """
    try:
        from capymoa.datasets import Airlines
    except ImportError as exc:
        raise ImportError(
            "the airlines stream needs capymoa: pip install 'anytime-hoeffding[bench]' "
            "(and a Java runtime)"
        ) from exc
    from pathlib import Path

    where = Path(directory) if directory else Path.home() / ".cache" / "anytime-hoeffding"
    where.mkdir(parents=True, exist_ok=True)
    try:
        stream = Airlines(directory=where)
    except OSError as exc:  # urllib errors are OSErrors
        raise OSError(
            f"Airlines is not cached in {where} and could not be downloaded ({exc}); it needs "
            "internet. Offline alternatives: the 'shuttle', 'phishing', 'bananas', "
            "'image_segments' or 'digits' streams."
        ) from exc
    return from_capymoa(stream, n, "airlines")


STREAMS: dict[str, Callable[[int, int], Stream]] = {
    "noise": lambda n, seed: noise(n, seed=seed),
    "drifting_prior": lambda n, seed: drifting_prior(n, seed=seed),
    "planted_threshold": lambda n, seed: planted_threshold(n, seed=seed),
    "planted_tree": lambda n, seed: planted_tree(n, seed=seed),
    "weak_signal": lambda n, seed: weak_signal(n, seed=seed),
    "sea": lambda n, seed: sea(n, seed=seed),
    **{k: (lambda kind: lambda n, seed: _river_synth(kind, n, seed))(k)
       for k in ("agrawal", "hyperplane", "rbf", "rbf_drift", "led", "led_drift", "stagger",
                 "river_sea")},
    **{k: (lambda kind: lambda n, seed: _bundled(kind, n, seed))(k)
       for k in ("phishing", "bananas", "image_segments", "shuttle", "digits")},
    "elec2": lambda n, seed: elec2(n, seed=seed),
    "covtype": lambda n, seed: covtype(n, seed=seed),
    "airlines": lambda n, seed: airlines(n, seed=seed),
}  # fmt: skip


def make_stream(name: str, n: int = 20_000, seed: int = 0) -> Stream:
    """Build a named stream (see :data:`STREAMS`) of at most ``n`` instances.

    >>> make_stream("sea", 1000).X.shape
    (1000, 10)
    """
    if name not in STREAMS:
        raise ValueError(f"unknown stream {name!r}; choose one of {sorted(STREAMS)}")
    if int(n) < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    return STREAMS[name](int(n), int(seed))
