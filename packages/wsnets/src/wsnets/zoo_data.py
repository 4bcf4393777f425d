"""LightningDataModules over weight-space zoos (generated offline and cached, or user-supplied).

* :class:`DigitsINRDataModule`: SIRENs of scikit-learn digits; ``task="classify"`` (label)
  or ``task="edit"`` (target = dilated image);
* :class:`SineINRDataModule`: 1-D sine SIRENs, target = frequency;
* :class:`MLPZooDataModule`: trained MLP classifiers, target = test accuracy;
* :class:`PrefitINRDataModule`: a zoo folder written by ``wsnets make-zoo`` (or converted
  from another source) with ``zoo.pt`` + ``meta.json`` naming the SIREN variant.

``seed`` seeds the split (and, unless ``zoo_seed`` is given, the zoo). Each splits its zoo with a seeded permutation into train/val/test, measures the per-block
input scale (and target mean/std) on the training split, and yields dict batches
``{"weights", "biases", "y"}``. Generated zoos are cached under ``cache_dir`` (default: the
``WSNETS_CACHE`` environment variable, else ``~/.cache/wsnets``) keyed by their settings.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from wsnets.inr_zoo import Zoo, load_zoo, make_digits_zoo, make_image_zoo, make_sine_zoo
from wsnets.mlp_zoo import make_mlp_zoo
from wsnets.siren import check_variant
from wsnets.weight_space import WeightSpace


def default_cache_dir() -> Path:
    env = os.environ.get("WSNETS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "wsnets"


def cached_zoo(builder, cache_dir: str | Path | None, **settings) -> Zoo:
    """Build ``builder(**settings)`` once and reuse it from ``cache_dir`` afterwards."""
    if cache_dir is None:
        cache_dir = default_cache_dir()
    key = hashlib.sha1(
        json.dumps({"builder": builder.__name__, **settings}, sort_keys=True).encode()
    ).hexdigest()[:12]
    folder = Path(cache_dir) / f"{builder.__name__}-{key}"
    if (folder / "zoo.pt").is_file():
        return load_zoo(folder)
    zoo = builder(**settings)
    zoo.save(folder)
    return zoo


class ZooDataset(Dataset):
    """Network ``i`` of a zoo with its target ``y[i]``."""

    def __init__(self, zoo: Zoo, target: str, index: torch.Tensor) -> None:
        if target not in zoo.targets:
            raise ValueError(f"zoo has no target {target!r}; it has {sorted(zoo.targets)}")
        self.ws = [w[index] for w in zoo.params.weights]
        self.bs = [b[index] for b in zoo.params.biases]
        self.y = zoo.targets[target][index]

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return {
            "weights": [w[i] for w in self.ws],
            "biases": [b[i] for b in self.bs],
            "y": self.y[i],
        }


class ZooDataModule(pl.LightningDataModule):
    """Split a zoo and serve dict batches (subclasses say how to get the zoo)."""

    target = "label"

    def __init__(
        self,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if (
            not 0 < val_fraction < 1
            or not 0 < test_fraction < 1
            or val_fraction + test_fraction >= 1
        ):
            raise ValueError("val_fraction and test_fraction must be in (0, 1) and sum below 1")
        self.batch_size, self.seed, self.cache_dir = batch_size, seed, cache_dir
        self.val_fraction, self.test_fraction = val_fraction, test_fraction
        self.zoo: Zoo | None = None

    def build_zoo(self) -> Zoo:
        raise TypeError(f"{type(self).__name__} must define build_zoo()")

    def split_indices(self, n: int) -> dict[str, torch.Tensor]:
        """Seeded random train/val/test split of ``n`` networks."""
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed))
        n_val, n_test = max(1, int(n * self.val_fraction)), max(1, int(n * self.test_fraction))
        return {
            "test": perm[:n_test],
            "val": perm[n_test : n_test + n_val],
            "train": perm[n_test + n_val :],
        }

    def setup(self, stage: str | None = None) -> None:
        if self.zoo is not None:
            return
        self.zoo = self.build_zoo()
        self.idx = self.split_indices(len(self.zoo))
        tr = self.idx["train"]
        scales = []
        for w, b in zip(self.zoo.params.weights, self.zoo.params.biases, strict=True):
            scales += [float(w[tr].std().clamp_min(1e-6)), float(b[tr].std().clamp_min(1e-6))]
        self.block_scale = scales
        y = self.zoo.targets[self.target][tr]
        if y.is_floating_point() and y.dim() == 1:
            self.target_stats = [float(y.mean()), float(y.std().clamp_min(1e-6))]

    @property
    def meta(self) -> dict:
        self.setup()
        return self.zoo.meta

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        self.setup()
        ds = ZooDataset(self.zoo, self.target, self.idx[split])
        gen = torch.Generator().manual_seed(self.seed)
        return DataLoader(ds, batch_size=self.batch_size, shuffle=shuffle, generator=gen)

    def train_dataloader(self):
        return self._loader("train", True)

    def val_dataloader(self):
        return self._loader("val", False)

    def test_dataloader(self):
        return self._loader("test", False)

    def predict_dataloader(self):
        return self._loader("test", False)


class DigitsINRDataModule(ZooDataModule):
    """SIRENs fitted to upsampled scikit-learn digits.

    Parameters
    ----------
    task:
        ``"classify"`` (target: digit class) or ``"edit"`` (target: dilated image).
    n_images:
        How many of the 1,797 digits to fit (``None``: all).
    image_size, hidden, variant, w0, fit_steps, fit_lr, init:
        Zoo settings (see :func:`wsnets.inr_zoo.make_digits_zoo`; ``init="shared"`` is one
        common SIREN initialisation plus a random hidden permutation per INR).

    Examples
    --------
    >>> import tempfile
    >>> dm = DigitsINRDataModule("edit", n_images=20, image_size=8, hidden=4, fit_steps=2,
    ...                          batch_size=4, cache_dir=tempfile.mkdtemp())
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["weights"][0].shape), tuple(batch["y"].shape)
    ((4, 4, 2, 1), (4, 8, 8))
    """

    def __init__(
        self,
        task: str = "classify",
        n_images: int | None = None,
        image_size: int = 16,
        hidden: int = 16,
        variant: str = "dwsnets",
        w0: float = 30.0,
        fit_steps: int = 300,
        fit_lr: float = 3e-3,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
        init: str = "independent",
        zoo_seed: int | None = None,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, cache_dir)
        if task not in ("classify", "edit"):
            raise ValueError(f"task must be 'classify' or 'edit', got {task!r}")
        self.target = "label" if task == "classify" else "edit"
        self.settings = dict(
            n=n_images,
            size=image_size,
            hidden=hidden,
            variant=variant,
            w0=w0,
            steps=fit_steps,
            lr=fit_lr,
            seed=seed if zoo_seed is None else zoo_seed,
            **({} if init == "independent" else {"init": init}),
        )

    def build_zoo(self) -> Zoo:
        return cached_zoo(make_digits_zoo, self.cache_dir, **self.settings)


class SineINRDataModule(ZooDataModule):
    """1-D sine SIRENs; target = the frequency ``omega``.

    Examples
    --------
    >>> import tempfile
    >>> dm = SineINRDataModule(n=12, fit_steps=2, batch_size=3, cache_dir=tempfile.mkdtemp())
    >>> tuple(next(iter(dm.train_dataloader()))["y"].shape)
    (3,)
    """

    target = "omega"

    def __init__(
        self,
        n: int = 500,
        hidden: int = 16,
        variant: str = "sitzmann",
        fit_steps: int = 300,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
        init: str = "independent",
        zoo_seed: int | None = None,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, cache_dir)
        zs = seed if zoo_seed is None else zoo_seed
        self.settings = dict(n=n, hidden=hidden, variant=variant, steps=fit_steps, seed=zs)
        if init != "independent":
            self.settings["init"] = init

    def build_zoo(self) -> Zoo:
        return cached_zoo(make_sine_zoo, self.cache_dir, **self.settings)


class MLPZooDataModule(ZooDataModule):
    """Trained MLP classifiers; target = their test accuracy.

    Examples
    --------
    >>> import tempfile
    >>> dm = MLPZooDataModule(n=10, batch_size=2, cache_dir=tempfile.mkdtemp())
    >>> tuple(next(iter(dm.train_dataloader()))["weights"][0].shape)
    (2, 8, 2, 1)
    """

    target = "accuracy"

    def __init__(
        self,
        n: int = 500,
        hidden: int = 8,
        points: int = 200,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
        zoo_seed: int | None = None,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, cache_dir)
        zs = seed if zoo_seed is None else zoo_seed
        self.settings = dict(n=n, hidden=hidden, points=points, seed=zs)

    def build_zoo(self) -> Zoo:
        return cached_zoo(make_mlp_zoo, self.cache_dir, **self.settings)


class PrefitINRDataModule(ZooDataModule):
    """A zoo folder on disk (``zoo.pt`` + ``meta.json`` with the SIREN variant).

    Parameters
    ----------
    path:
        The folder (see :meth:`wsnets.inr_zoo.Zoo.save`).
    target:
        Which stored target to serve (``label``, ``edit``, ``omega``, ``accuracy`` ...).
    """

    def __init__(
        self,
        path: str,
        target: str = "label",
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, None)
        self.path, self.target = path, target

    def build_zoo(self) -> Zoo:
        zoo = load_zoo(self.path)
        if self.target not in zoo.targets:
            raise ValueError(
                f"zoo {self.path!r} has no target {self.target!r}; it has {sorted(zoo.targets)}"
            )
        return zoo


class DWSNetsSplitDataModule(ZooDataModule):
    """Pre-fit INRs in the DWSNets release layout: a splits JSON plus one state dict per INR.

    The JSON maps ``train`` / ``val`` / ``test`` to ``{"path": [...], "label": [...]}``; each
    path is a ``torch.save``-d state dict of an MLP's ``nn.Linear`` layers (``*.weight`` of
    shape ``(d_out, d_in)``, ``*.bias``). The release records no SIREN variant, so it must be
    given (``variant="dwsnets"`` for the original MNIST / Fashion-MNIST INRs: ``w0 = 30``,
    output offset +0.5); the splits of the file are used as they are.

    Parameters
    ----------
    splits:
        Path of the splits JSON (relative INR paths are resolved against its folder).
    variant:
        ``"dwsnets"`` or ``"sitzmann"`` (required: the files do not say).
    image_size, w0:
        Side of the rendered image and the SIREN frequency (for editing / rendering).
    """

    def __init__(
        self,
        splits: str,
        variant: str,
        image_size: int = 28,
        w0: float = 30.0,
        batch_size: int = 32,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, 0.15, 0.15, seed, None)
        self.splits, self.variant, self.image_size, self.w0 = splits, variant, image_size, w0

    def build_zoo(self) -> Zoo:
        offset = check_variant(self.variant)
        path = Path(self.splits)
        if not path.is_file():
            raise ValueError(f"splits file {self.splits!r} does not exist")
        try:
            table = json.loads(path.read_text())
            lists = {s: (table[s]["path"], table[s]["label"]) for s in ("train", "val", "test")}
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(
                f"{self.splits!r} is not a DWSNets splits file "
                f"(train/val/test -> path/label lists): {err}"
            ) from err
        states, labels, self._sizes = [], [], {}
        for split, (paths, labs) in lists.items():
            if len(paths) != len(labs) or not paths:
                raise ValueError(f"{self.splits!r}: split {split!r} is empty or its lists differ")
            self._sizes[split] = len(paths)
            for p in paths:
                f = Path(p) if Path(p).is_absolute() else path.parent / p
                states.append(torch.load(f, map_location="cpu", weights_only=True))
            labels += [int(x) for x in labs]
        params = WeightSpace.from_state_dicts(states).check_finite()
        meta = {
            "kind": "dwsnets-prefit",
            "variant": self.variant,
            "activation": "sine",
            "w0": self.w0,
            "offset": offset,
            "arch": list(params.arch),
            "size": self.image_size,
            "source": str(path.name),
        }
        return Zoo(params, {"label": torch.tensor(labels)}, meta)

    def split_indices(self, n: int) -> dict[str, torch.Tensor]:
        a, b = self._sizes["train"], self._sizes["train"] + self._sizes["val"]
        return {
            "train": torch.arange(0, a),
            "val": torch.arange(a, b),
            "test": torch.arange(b, n),
        }


def images_from_rows(rows, size: int, n: int | None = None):
    """``(images (n, size, size) in [0, 1], labels)`` from dataset rows with a PIL image.

    Each row is a mapping with an ``image`` (or ``img``) PIL image and an integer ``label``
    (or ``labels``); colour images are converted to grayscale, all are resized to ``size``.
    """
    import numpy as np

    images, labels = [], []
    for k, row in enumerate(rows):
        if n is not None and k >= n:
            break
        img = row.get("image", row.get("img"))
        lab = row.get("label", row.get("labels"))
        if img is None or lab is None or not hasattr(img, "convert"):
            raise ValueError("dataset rows need a PIL 'image' (or 'img') and a 'label' column")
        arr = np.asarray(img.convert("L").resize((size, size)), dtype=np.float32) / 255.0
        images.append(torch.tensor(arr))
        labels.append(int(lab))
    if not images:
        raise ValueError("the dataset has no rows")
    return torch.stack(images), torch.tensor(labels)


class ImageINRDataModule(ZooDataModule):
    """SIRENs fitted to a Hugging Face image dataset (needs ``datasets`` and internet).

    Parameters
    ----------
    hf_id:
        Dataset id, e.g. ``ylecun/mnist``, ``zalando-datasets/fashion_mnist``,
        ``uoft-cs/cifar10`` (colour images are converted to grayscale).
    task:
        ``"classify"`` or ``"edit"`` (dilated image).
    split, n_images, image_size, hidden, variant, w0, fit_steps, fit_lr:
        Which rows to fit and how (see :func:`wsnets.inr_zoo.make_image_zoo`).
    """

    def __init__(
        self,
        hf_id: str,
        task: str = "classify",
        split: str = "train",
        n_images: int | None = 1000,
        image_size: int = 28,
        hidden: int = 32,
        variant: str = "dwsnets",
        w0: float = 30.0,
        fit_steps: int = 300,
        fit_lr: float = 1e-3,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, cache_dir)
        if task not in ("classify", "edit"):
            raise ValueError(f"task must be 'classify' or 'edit', got {task!r}")
        check_variant(variant)
        self.target = "label" if task == "classify" else "edit"
        self.hf_id, self.split, self.n_images, self.image_size = hf_id, split, n_images, image_size
        self.fit = dict(
            hidden=hidden, variant=variant, w0=w0, steps=fit_steps, lr=fit_lr, seed=seed
        )

    def load_rows(self):
        try:
            import datasets
        except ImportError as err:
            raise ValueError(
                "ImageINRDataModule needs the 'datasets' package (pip install datasets)"
            ) from err
        return datasets.load_dataset(self.hf_id, split=self.split)

    def build_zoo(self) -> Zoo:
        def build(**_settings):
            images, labels = images_from_rows(self.load_rows(), self.image_size, self.n_images)
            zoo = make_image_zoo(images, labels, kind="hf-image-inr", **self.fit)
            zoo.meta["hf_id"] = self.hf_id
            return zoo

        settings = dict(hf_id=self.hf_id, split=self.split, n=self.n_images, size=self.image_size)
        return cached_zoo(build, self.cache_dir, **settings, **self.fit)
