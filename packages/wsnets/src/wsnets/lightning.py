"""Training in one place: the LightningModules of the three weight-space tasks and the zoo
LightningDataModules.

Tasks (LightningModules):

* :class:`INRClassifier`: invariant head, cross-entropy, accuracy (digit class of an INR).
* :class:`INREditor`: equivariant head with ``F`` output channels, residual edits and the
  output-ensemble rendering (:mod:`wsnets.output_ensemble`); loss = pixel MSE between the
  rendered edited function and the target image (dilated digit); metric PSNR.
* :class:`WeightRegressor`: invariant scalar head on standardised targets (sine frequency,
  test accuracy of a zoo MLP); metrics R^2 and Kendall tau.

Inputs are normalised by one scale per block (a scalar, so invariant), measured on the
training split by the data module and stored as a buffer (saved in checkpoints). Batches
are dicts ``{"weights": [...], "biases": [...], "y": ...}`` with ``(B, d_out, d_in, 1)`` /
``(B, d_out, 1)`` blocks.

Data (LightningDataModules over zoos generated offline and cached, or user-supplied):

* :class:`DigitsINRDataModule`: SIRENs of scikit-learn digits; ``task="classify"`` (label)
  or ``task="edit"`` (target = dilated image);
* :class:`SineINRDataModule`: 1-D sine SIRENs, target = frequency;
* :class:`MLPZooDataModule`: trained MLP classifiers, target = test accuracy;
* :class:`PrefitINRDataModule`: a zoo folder written by ``wsnets make-zoo`` (or converted
  from another source) with ``zoo.pt`` + ``meta.json`` naming the SIREN variant;
* :class:`ModelZooDataModule`: a folder of checkpoints (MLPs or CNNs) + ``labels.csv``
  (:mod:`wsnets.model_zoo`);
* :class:`DWSNetsSplitDataModule`, :class:`ImageINRDataModule`: the DWSNets INR releases and
  SIRENs of Hugging Face image datasets.

``seed`` seeds the split (and, unless ``zoo_seed`` is given, the zoo). Each splits its zoo
with a seeded permutation into train/val/test, measures the per-block input scale (and target
mean/std) on the training split, and yields dict batches. Generated zoos are cached
(:func:`wsnets.zoo_data.cached_zoo`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as nnf
from torch.utils.data import DataLoader
from torchmetrics.functional import kendall_rank_corrcoef, r2_score

from wsnets.architectures import build_model, matched_hidden
from wsnets.inr_zoo import Zoo, load_zoo, make_digits_zoo, make_image_zoo, make_sine_zoo
from wsnets.mlp_zoo import make_mlp_zoo
from wsnets.output_ensemble import OutputEnsemble
from wsnets.siren import check_variant
from wsnets.weight_space import WeightSpace, image_coords
from wsnets.zoo_data import ZooDataset, cached_zoo, images_from_rows


class WeightSpaceTask(pl.LightningModule):
    """Shared parts: model construction, input normalisation, augmentation, optimiser."""

    head = "invariant"

    def __init__(
        self,
        arch: Sequence[int] | None = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        out_dim: int = 1,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
        in_channels: int = 1,
    ) -> None:
        super().__init__()
        self._spec = (model, hidden, depth, out_dim, in_channels)
        self.augment = (model == "mlp_aug") if augment is None else augment
        self.arch: tuple[int, ...] | None = None
        if arch is not None:
            self._build(arch, in_channels)

    def _build(self, arch: Sequence[int], in_channels: int) -> None:
        """Build the meta-network for input networks of architecture ``arch``."""
        model, hidden, depth, out_dim, _ = self._spec
        self.arch = tuple(int(a) for a in arch)
        self.net = build_model(model, self.arch, hidden, depth, self.head, out_dim, in_channels)
        self.register_buffer("block_scale", torch.ones(2 * (len(self.arch) - 1)))

    def setup(self, stage: str) -> None:
        """``arch=None``: take the architecture (and kernel channels) from the data's zoo.

        The resolved values are written into the hyperparameters, so checkpoints reload
        without the data.
        """
        if self.arch is not None:
            return
        meta = getattr(getattr(self.trainer, "datamodule", None), "meta", None)
        if not meta or "arch" not in meta:
            raise ValueError("model.arch is not set and the data module does not name one")
        channels = int(meta.get("channels", 1))
        self._build(meta["arch"], channels)
        if hasattr(self, "hparams"):
            self.hparams["arch"] = list(self.arch)
            self.hparams["in_channels"] = channels

    # ------------------------------------------------------------ data
    def to_space(self, batch) -> WeightSpace:
        return WeightSpace(batch["weights"], batch["biases"]).check_arch(self.arch).check_finite()

    def normalise(self, v: WeightSpace) -> WeightSpace:
        s = self.block_scale
        return WeightSpace(
            [w / s[2 * li] for li, w in enumerate(v.weights)],
            [b / s[2 * li + 1] for li, b in enumerate(v.biases)],
        )

    def on_fit_start(self) -> None:
        dm = getattr(self.trainer, "datamodule", None)
        scale = getattr(dm, "block_scale", None)
        if scale is not None:
            self.block_scale.copy_(torch.as_tensor(scale, dtype=torch.float32))
        self._epoch_start = time.perf_counter()
        self.epoch_seconds: list[float] = []

    def on_train_epoch_start(self) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        self.epoch_seconds.append(time.perf_counter() - self._epoch_start)

    def maybe_augment(self, v: WeightSpace) -> WeightSpace:
        if self.training and self.augment:
            return v.permute(v.batch_random_permutation())
        return v

    def forward(self, weights, biases, **_):
        v = WeightSpace(weights, biases).check_arch(self.arch).check_finite()
        return self.net(self.normalise(v))

    # ------------------------------------------------------------ steps
    def _step(self, batch, stage: str) -> torch.Tensor:
        """The task's loss on one batch; logs ``{stage}/loss`` and the task's metrics."""
        raise NotImplementedError

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch["weights"], batch["biases"])

    def configure_optimizers(self):
        opt = torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=5, min_lr=1e-4)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "val/loss"}}

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class INRClassifier(WeightSpaceTask):
    """Classify INRs by the class of the signal they represent (invariant head).

    Parameters
    ----------
    arch:
        Architecture of the input INRs.
    model:
        One of :data:`wsnets.architectures.MODELS`.
    hidden, depth:
        Width and depth of the meta-network.
    n_classes:
        Number of classes.
    lr, weight_decay:
        AdamW settings (the authors' experiment: 1e-3 and 1e-3).
    augment:
        Random hidden-neuron permutations in training (default: only for ``mlp_aug``).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = INRClassifier([2, 4, 4, 1], "dws", hidden=4, depth=1, n_classes=3)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> m(v.weights, v.biases).shape
    torch.Size([2, 3])
    """

    selection = ("val/acc", "max")  # checkpoint selection (DWSNets: best validation accuracy)

    def __init__(
        self,
        arch: Sequence[int] | None = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        n_classes: int = 10,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
        in_channels: int = 1,
    ) -> None:
        super().__init__(
            arch, model, hidden, depth, n_classes, lr, weight_decay, augment, in_channels
        )
        self.save_hyperparameters()

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        logits = self.net(self.normalise(v))
        loss = nnf.cross_entropy(logits, batch["y"])
        acc = (logits.argmax(-1) == batch["y"]).float().mean()
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        self.log(f"{stage}/acc", acc, prog_bar=stage != "train", batch_size=v.batch)
        return loss

    def predict_step(self, batch, batch_idx):
        return self(batch["weights"], batch["biases"]).argmax(-1)


class INREditor(WeightSpaceTask):
    """Edit INRs in weight space; render the output ensemble and compare with the target.

    Parameters
    ----------
    arch:
        Architecture of the input INRs (images: ``(2, h, h, 1)``).
    model:
        An equivariant family (``dws``, ``np_pe``, ``gmn``) or a baseline.
    hidden, depth:
        Meta-network width/depth *for F = 1*; with ``match_budget`` the width is reduced
        for ``F > 1`` so the parameter count does not exceed the ``F = 1`` model's.
    F:
        Output-ensemble size (1 = the plain residual editor).
    image_size, w0, offset:
        Rendering grid and SIREN settings of the zoo (must match the data).
    edit_scale:
        Initial per-block scale ``s`` of the residual edits (1e-3: the first edits are a small
        fraction of the weights' spread, so training starts from the input INR).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = INREditor([2, 4, 4, 1], "dws", hidden=4, depth=1, F=2, image_size=4)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=3)
    >>> m(v.weights, v.biases).shape
    torch.Size([3, 16])
    """

    head = "equivariant"

    def __init__(
        self,
        arch: Sequence[int] = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        F: int = 1,
        match_budget: bool = True,
        image_size: int = 16,
        w0: float = 30.0,
        offset: float = 0.5,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
        edit_scale: float = 1e-3,
    ) -> None:
        if F < 1:
            raise ValueError(f"the number of ensemble members F must be >= 1, got {F}")
        width = matched_hidden(model, arch, hidden, depth, F) if match_budget else hidden
        super().__init__(arch, model, width, depth, F, lr, weight_decay, augment)
        self.save_hyperparameters()
        self.width = width
        self.ensemble = OutputEnsemble(len(self.arch) - 1, F, init_scale=edit_scale)
        self.register_buffer("coords", image_coords(image_size), persistent=False)

    def on_fit_start(self) -> None:
        super().on_fit_start()
        meta = getattr(getattr(self.trainer, "datamodule", None), "meta", None) or {}
        for key in ("w0", "offset"):
            if key in meta and float(meta[key]) != float(self.hparams[key]):
                raise ValueError(
                    f"the editor renders with {key}={self.hparams[key]} but the zoo's SIRENs use "
                    f"{key}={meta[key]}"
                )

    def edit(self, v: WeightSpace) -> WeightSpace:
        """The ``F`` edited networks ``v + s * Delta_f`` (``Delta`` from the normalised input).

        ``s`` starts at ``edit_scale`` (1e-3). With the authors' 1e-2 and our meta-networks'
        output magnitude (``|Delta| ~ 4``) the first edits were as large as the SIREN weights
        themselves (block spreads 0.005-0.08): training started at twice the no-edit MSE and
        the DWS editors at F = 2 and 4 never left that basin (full run of 0.1.x: test MSE 0.15
        and 0.14 against 0.056 for not editing).
        """
        return self.ensemble.edit(v, self.net(self.normalise(v)))

    def render(self, edited: WeightSpace) -> torch.Tensor:
        hp = self.hparams
        return self.ensemble.render(edited, self.coords, "sine", hp.w0, hp.offset)[..., 0]

    def forward(self, weights, biases, **_):
        return self.render(
            self.edit(WeightSpace(weights, biases).check_arch(self.arch).check_finite())
        )

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        pred = self.render(self.edit(v))
        target = batch["y"].reshape(pred.shape)
        mse_each = ((pred - target) ** 2).mean(dim=1)
        loss = mse_each.mean()
        psnr = (-10 * torch.log10(mse_each.clamp_min(1e-10))).mean()
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        self.log(f"{stage}/psnr", psnr, prog_bar=stage != "train", batch_size=v.batch)
        return loss


class WeightRegressor(WeightSpaceTask):
    """Regress a scalar property of a network from its weights (sine frequency, accuracy).

    Targets are standardised with ``target_mean`` / ``target_std`` (set from the training
    split by the data module); metrics are R^2 and Kendall tau on the original scale.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = WeightRegressor([1, 4, 4, 1], "gmn", hidden=4, depth=1)
    >>> v = WeightSpace.random([1, 4, 4, 1], batch=2)
    >>> m(v.weights, v.biases).shape
    torch.Size([2])
    """

    def __init__(
        self,
        arch: Sequence[int] | None = (1, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
        in_channels: int = 1,
    ) -> None:
        super().__init__(arch, model, hidden, depth, 1, lr, weight_decay, augment, in_channels)
        self.save_hyperparameters()
        self.register_buffer("target_stats", torch.tensor([0.0, 1.0]))
        self._outs: dict[str, list] = {}

    def on_fit_start(self) -> None:
        super().on_fit_start()
        stats = getattr(getattr(self.trainer, "datamodule", None), "target_stats", None)
        if stats is not None:
            self.target_stats.copy_(torch.as_tensor(stats, dtype=torch.float32))

    def forward(self, weights, biases, **_):
        m, s = self.target_stats
        return super().forward(weights, biases)[:, 0] * s + m

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        m, s = self.target_stats
        pred = self.net(self.normalise(v))[:, 0]
        loss = nnf.mse_loss(pred, (batch["y"].float() - m) / s)
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        if stage != "train":
            self._outs.setdefault(stage, []).append((pred.detach() * s + m, batch["y"].float()))
        return loss

    def _epoch_end(self, stage: str) -> None:
        outs = self._outs.pop(stage, [])
        if not outs:
            return
        pred = torch.cat([p for p, _ in outs])
        y = torch.cat([t for _, t in outs])
        if len(y) > 2:
            self.log(f"{stage}/r2", r2_score(pred, y))
            self.log(f"{stage}/kendall", kendall_rank_corrcoef(pred, y))

    def on_validation_epoch_end(self) -> None:
        self._epoch_end("val")

    def on_test_epoch_end(self) -> None:
        self._epoch_end("test")


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


class ModelZooDataModule(ZooDataModule):
    """A user model zoo: a folder of checkpoints (MLPs or CNNs, any activation) + ``labels.csv``.

    See :mod:`wsnets.model_zoo` for the layout and the kernel-as-channels encoding. The
    meta-network's ``arch`` can be left unset (``null``): it is read from the zoo.

    Parameters
    ----------
    path:
        The folder; ``None``: the example zoo of :func:`wsnets.model_zoo.example_cnn_zoo`
        (24 small CNNs generated offline and cached).
    batch_size, val_fraction, test_fraction, seed, cache_dir:
        As :class:`ZooDataModule` (seeded random split).

    Examples
    --------
    >>> import tempfile
    >>> from wsnets.model_zoo import make_cnn_zoo
    >>> dm = ModelZooDataModule(str(make_cnn_zoo(tempfile.mkdtemp(), n=8, steps=(1,))), batch_size=4)
    >>> dm.meta["arch"], dm.meta["channels"]
    ([1, 4, 4, 2], 9)
    """

    def __init__(
        self,
        path: str | None = None,
        batch_size: int = 32,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        seed: int = 0,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__(batch_size, val_fraction, test_fraction, seed, cache_dir)
        self.path = path

    def build_zoo(self) -> Zoo:
        from wsnets.model_zoo import example_cnn_zoo, load_model_zoo

        return load_model_zoo(
            self.path if self.path is not None else example_cnn_zoo(self.cache_dir)
        )


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
