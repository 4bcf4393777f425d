"""Lightning parts of EOSTok: the module (tokenizer / prior / joint training) and the data modules.

:class:`EOSTokModule` holds the tokenizer, the AR prior and every loss term. Its stage is the
tokenizer stage, the prior stage, or joint end-to-end training.

Total loss of the joint stage (EOSTok, arXiv 2605.00503; weights configurable)::

    L = L_rec + L_vq + lambda_AR L_AR + lambda_APR L_APR + lambda_align L_align

* ``L_rec = |x - Dec(z_q)|^2`` (nested dropout in training), ``L_vq`` codebook + commitment;
* ``L_AR`` next-token CE; with ``ar_grad_to_tokenizer`` its gradient reaches the encoder
  through the straight-through inputs of the prior (:mod:`eostok.ar_prior`), or with
  ``ar_grad_through_ste=False`` only the codebook (the prior reads the looked-up codes), scaled
  by ``ar_grad_scale`` after ``ar_grad_warmup_steps`` and a linear ramp
  (:meth:`EOSTokModule.ar_tokenizer_grad_scale`; anti-collapse knobs, see the README);
* ``quantizer="library"``: vector-quantize-pytorch's EMA quantizer (the third-party anchor,
  :mod:`eostok.library_vq`) instead of the cosine one;
* ``L_vq`` may carry the codebook-entropy regulariser (``entropy_weight``,
  :meth:`~eostok.quantizer.CosineVectorQuantizer.entropy_penalty`);
* ``L_APR`` prediction-to-pixels reconstruction (:mod:`eostok.apr`);
* ``L_align`` implicit alignment of decoder features to a frozen teacher (:mod:`eostok.alignment`).

The two-stage baseline uses the same module: ``stage="tokenizer"`` (``L_rec + L_vq``) and then
``stage="prior"`` (``L_AR`` on frozen codes): :meth:`EOSTokModule.losses`.

Data modules (batches ``(images (B, C, S, S) in [0, 1], labels (B,))``):
:class:`DigitsDataModule` (upsampled scikit-learn digits, :mod:`eostok.digits_data`),
:class:`ShapesDataModule` (procedural RGB shapes, :mod:`eostok.shapes_data`) and the real path
:class:`HFImageDataModule` (ImageNet or an ``imagefolder`` through ``datasets``,
:mod:`eostok.imagenet`). :func:`random_batches` serves in-memory tensors as a fixed number of
batches drawn with replacement from a seeded generator (the ``reproduce`` comparison).
"""

from __future__ import annotations

from typing import Literal

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from icml26_shared.hub import HubUnavailableError, load_dataset
from torch.utils.data import DataLoader, Sampler, TensorDataset

from .alignment import ImplicitAlignment
from .apr import APRLoss
from .ar_prior import ARPrior
from .digits_data import load_digits_images
from .feature_net import FeatureCNN, train_feature_net
from .grid_tokenizer import GridTokenizer
from .image_folder import load_image_folder, split_images
from .imagenet import OFFLINE_DATA_HINT, HFImageSplit
from .shapes_data import load_shapes_images, shape_classes
from .tokenizer import OneDTokenizer

Stage = Literal["tokenizer", "prior", "joint"]


class EOSTokModule(pl.LightningModule):
    """Tokenizer + AR prior with the EOSTok losses.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> m = EOSTokModule(width=32, codebook_size=16, apr_weight=1.0)
    >>> out = m.losses((torch.rand(4, 1, 16, 16), torch.tensor([0, 1, 2, 3])))
    >>> sorted(out)
    ['align', 'apr', 'ar', 'loss', 'rec', 'vq']
    """

    def __init__(
        self,
        stage: Stage = "joint",
        tokenizer_type: Literal["1d", "2d"] = "1d",
        quantizer: Literal["cosine", "library"] = "cosine",
        image_size: int = 16,
        channels: int = 1,
        patch_size: int = 4,
        num_latent_tokens: int = 8,
        token_dim: int = 8,
        codebook_size: int = 64,
        width: int = 64,
        depth: int = 2,
        heads: int = 4,
        prior_depth: int = 2,
        num_classes: int = 10,
        nested_dropout: bool = True,
        ar_weight: float = 1.0,
        ar_grad_to_tokenizer: bool = True,
        ar_grad_scale: float = 1.0,
        ar_grad_through_ste: bool = True,
        ar_grad_warmup_steps: int = 0,
        ar_grad_ramp_steps: int = 0,
        entropy_weight: float = 0.0,
        entropy_temperature: float = 0.05,
        apr_weight: float = 0.0,
        apr_tau: float = 1.0,
        apr_hard: bool = False,
        align_weight: float = 0.0,
        teacher: Literal["trained", "random", "dinov2"] = "trained",
        teacher_seed: int = 1234,
        teacher_dim: int = 32,
        teacher_model_id: str = "facebook/dinov2-base",
        tokenizer_checkpoint: str | None = None,
        lr: float = 1e-3,
        tokenizer_lr: float | None = None,
    ) -> None:
        super().__init__()
        if stage not in ("tokenizer", "prior", "joint"):
            raise ValueError(f"stage must be tokenizer, prior or joint, got {stage!r}")
        for name, w in (
            ("ar_weight", ar_weight),
            ("apr_weight", apr_weight),
            ("align_weight", align_weight),
            ("ar_grad_scale", ar_grad_scale),
            ("ar_grad_warmup_steps", ar_grad_warmup_steps),
            ("ar_grad_ramp_steps", ar_grad_ramp_steps),
            ("entropy_weight", entropy_weight),
        ):
            if w < 0:
                raise ValueError(f"{name} must be non-negative, got {w}")
        for name, v in (("lr", lr), ("tokenizer_lr", lr if tokenizer_lr is None else tokenizer_lr)):
            if not v > 0:
                raise ValueError(f"{name} must be positive, got {v}")
        if tokenizer_type not in ("1d", "2d"):
            raise ValueError(f"tokenizer_type must be '1d' or '2d', got {tokenizer_type!r}")
        if quantizer not in ("cosine", "library"):
            raise ValueError(f"quantizer must be 'cosine' or 'library', got {quantizer!r}")
        self.save_hyperparameters()
        if tokenizer_type == "1d":
            self.tokenizer = OneDTokenizer(
                image_size, patch_size, num_latent_tokens, token_dim, codebook_size, width, depth,
                heads, channels, nested_dropout=nested_dropout, entropy_weight=entropy_weight,
                entropy_temperature=entropy_temperature,
            )  # fmt: skip
        else:  # the 2D-grid comparison row: P patch tokens in raster order, same ViT sizes
            self.tokenizer = GridTokenizer(
                image_size, patch_size, token_dim, codebook_size, width, depth, heads, channels,
                entropy_weight=entropy_weight, entropy_temperature=entropy_temperature,
            )  # fmt: skip
        if quantizer == "library":  # the third-party anchor (vector-quantize-pytorch)
            from .library_vq import LibraryVectorQuantizer

            self.tokenizer.quantizer = LibraryVectorQuantizer(codebook_size, token_dim)
        self.prior = ARPrior(
            self.tokenizer.num_latent_tokens, codebook_size, token_dim, num_classes, width,
            prior_depth, heads,
        )  # fmt: skip
        self.apr = APRLoss(apr_tau, apr_hard)
        if teacher not in ("trained", "random", "dinov2"):
            raise ValueError(f"teacher must be trained, random or dinov2, got {teacher!r}")
        # teacher_dim: channels of the teacher's feature map (32 for FeatureCNN, 768 for
        # dinov2-base)
        self.alignment = ImplicitAlignment(width, teacher_dim, self.tokenizer.grid)
        self.teacher: torch.nn.Module | None = (
            None  # frozen, not a submodule (not in the checkpoint)
        )
        if tokenizer_checkpoint is not None:
            state = torch.load(tokenizer_checkpoint, map_location="cpu", weights_only=False)
            state = state.get("state_dict", state)
            tok = {
                k[len("tokenizer.") :]: v for k, v in state.items() if k.startswith("tokenizer.")
            }
            self.tokenizer.load_state_dict(tok)
        self.set_stage(stage)

    def set_stage(self, stage: Stage) -> None:
        """Switch stage; the prior stage freezes the tokenizer (two-stage baseline)."""
        self.stage = stage
        for p in self.tokenizer.parameters():
            p.requires_grad_(stage != "prior")

    def set_teacher(self, net: torch.nn.Module) -> None:
        """Use ``net`` (frozen) as the alignment teacher (kept out of the checkpoint)."""
        object.__setattr__(self, "teacher", net.eval())  # not a registered submodule
        for p in self.teacher.parameters():
            p.requires_grad_(False)

    def setup(self, stage: str) -> None:
        self._check_data()
        if self.hparams.align_weight > 0 and self.teacher is None:
            self.set_teacher(self.build_teacher())

    def _check_data(self) -> None:
        """Refuse a data module whose images or classes do not fit the model (one line)."""
        dm = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        hp, dhp = self.hparams, getattr(dm, "hparams", {})
        for key in ("channels", "image_size"):
            if key in dhp and dhp[key] != hp[key]:
                raise ValueError(
                    f"the data has {key}={dhp[key]} but the model {key}={hp[key]}; "
                    f"set --model.{key} {dhp[key]}"
                )
        n = getattr(dm, "num_classes", None)
        if n is not None and n > hp.num_classes:
            raise ValueError(
                f"the data has {n} classes but the model num_classes={hp.num_classes}; "
                f"set --model.num_classes {n}"
            )

    def build_teacher(self) -> torch.nn.Module:
        """A frozen random CNN, one trained (teacher seed) on the real training images, or DINOv2.

        ``teacher="dinov2"`` loads ``teacher_model_id`` through the offline-aware loader
        (:class:`~eostok.imagenet.DINOv2Teacher`; set ``teacher_dim`` to its width).

        The training images are the attached datamodule's ``train_set`` when there is one
        (digits, shapes, your image folder, or the first 2,000 images of a ``datasets``
        split), else the upsampled digits.
        """
        hp = self.hparams
        if hp.teacher == "dinov2":
            from .imagenet import DINOv2Teacher

            return DINOv2Teacher(model_id=hp.teacher_model_id)
        if hp.teacher == "random":
            torch.manual_seed(hp.teacher_seed)
            return FeatureCNN(hp.channels, hp.num_classes, image_size=hp.image_size)
        dm = getattr(self._trainer, "datamodule", None) if self._trainer is not None else None
        train_set = getattr(dm, "train_set", None)
        if train_set is not None and hasattr(train_set, "tensors"):
            xtr, ytr = train_set.tensors
        elif train_set is not None:  # a map-style dataset of (image, label) pairs
            pairs = [train_set[i] for i in range(min(len(train_set), 2000))]
            xtr = torch.stack([p[0] for p in pairs])
            ytr = torch.as_tensor([int(p[1]) for p in pairs])
        else:
            xtr, ytr, _, _ = load_digits_images(hp.image_size)
        return train_feature_net(xtr, ytr, seed=hp.teacher_seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction ``(B, C, H, W)`` of ``x`` through the codes."""
        z_q, _, _ = self.tokenizer.encode(x)
        return self.tokenizer.decode(embeddings=z_q)[0]

    def ar_tokenizer_grad_scale(self, step: int | None) -> float:
        """Scale of the CE gradient that reaches the tokenizer at training step ``step``.

        0 while ``step < ar_grad_warmup_steps`` (the tokenizer trains on ``L_rec + L_vq`` (+ APR,
        align) and the prior on its codes, but CE does not yet shape the codes), then a linear
        ramp over ``ar_grad_ramp_steps`` up to ``ar_grad_scale``; ``ar_grad_to_tokenizer=False``
        gives 0 throughout. ``step=None`` (evaluation) gives the final scale.
        """
        hp = self.hparams
        if not hp.ar_grad_to_tokenizer:
            return 0.0
        if step is None:
            return float(hp.ar_grad_scale)
        if step < hp.ar_grad_warmup_steps:
            return 0.0
        ramp = 1.0
        if hp.ar_grad_ramp_steps > 0:
            ramp = min(1.0, (step - hp.ar_grad_warmup_steps + 1) / hp.ar_grad_ramp_steps)
        return float(hp.ar_grad_scale) * ramp

    def losses(self, batch, step: int | None = None) -> dict[str, torch.Tensor]:
        """All loss terms of the current stage and their weighted sum ``loss``.

        ``step`` (the training step) drives the warm-up / ramp of the CE gradient to the
        tokenizer (:meth:`ar_tokenizer_grad_scale`).
        """
        x, y = batch
        hp = self.hparams
        self.prior.check_labels(y)  # a label >= num_classes is an error in every stage
        zero = x.new_zeros(())
        out = dict.fromkeys(("rec", "vq", "ar", "apr", "align"), zero)
        if self.stage == "prior":
            with torch.no_grad():
                self.tokenizer.eval()
                z_q, codes, _ = self.tokenizer.encode(x)
            out["ar"], _ = self.prior.nll(z_q, codes, y)
            out["loss"] = out["ar"]
            return out
        z_q, codes, out["vq"] = self.tokenizer.encode(x)
        recon, mid = self.tokenizer.decode(embeddings=z_q)
        out["rec"] = F.mse_loss(recon, x)
        if hp.align_weight > 0:
            if self.teacher is None:
                self.set_teacher(self.build_teacher())
            out["align"] = self.alignment(mid, self.teacher.to(x.device)(x)[0])
        total = out["rec"] + out["vq"] + hp.align_weight * out["align"]
        if self.stage == "joint":
            # forward value z_q; backward: the CE gradient to the tokenizer times the scale
            scale = self.ar_tokenizer_grad_scale(step)
            # through the straight-through estimator the CE gradient reaches the encoder (and,
            # via the VQ loss only, the codes); without it, the prior reads the looked-up codes
            # and the CE gradient reaches the codebook, not the encoder
            src = z_q if hp.ar_grad_through_ste else self.tokenizer.quantizer.lookup(codes)
            ar_in = z_q.detach() if scale == 0.0 else z_q.detach() + scale * (src - src.detach())
            out["ar"], logits = self.prior.nll(ar_in, codes, y)
            if hp.apr_weight > 0:
                out["apr"] = self.apr(self.tokenizer, logits, x)
            total = total + hp.ar_weight * out["ar"] + hp.apr_weight * out["apr"]
        out["loss"] = total
        return out

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        out = self.losses(batch, step=self.global_step)
        self.log_dict({f"train/{k}": v for k, v in out.items()}, prog_bar=False)
        return out["loss"]

    def validation_step(self, batch, batch_idx: int) -> None:
        out = self.losses(batch)
        self.log_dict({f"val/{k}": v for k, v in out.items()})

    def test_step(self, batch, batch_idx: int) -> None:
        out = self.losses(batch)
        self.log_dict({f"test/{k}": v for k, v in out.items()})

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Codes ``(B, K)`` of the batch's images."""
        return self.tokenizer.encode(batch[0])[1]

    def configure_optimizers(self):
        """Adam; the tokenizer's parameters use ``tokenizer_lr`` when given (else ``lr``)."""
        hp = self.hparams
        tok = {id(p) for p in self.tokenizer.parameters()}
        rest = [p for p in self.parameters() if p.requires_grad and id(p) not in tok]
        groups = [{"params": rest, "lr": hp.lr}]
        tok_params = [p for p in self.tokenizer.parameters() if p.requires_grad]
        if tok_params:
            groups.append(
                {"params": tok_params, "lr": hp.lr if hp.tokenizer_lr is None else hp.tokenizer_lr}
            )
        return torch.optim.Adam(groups, lr=hp.lr)


# ---------------------------------------------------------------- data modules


class RandomBatchSampler(Sampler[list[int]]):
    """``steps`` batches of ``batch_size`` indices in ``[0, n)``, drawn with replacement.

    The indices come from ``generator`` (``torch.randint``), so one generator shared by
    consecutive training phases continues one stream of batches.

    >>> g = torch.Generator().manual_seed(0)
    >>> [len(b) for b in RandomBatchSampler(10, 4, 3, g)]
    [4, 4, 4]
    """

    def __init__(self, n: int, batch_size: int, steps: int, generator: torch.Generator) -> None:
        if n < 1 or batch_size < 1 or steps < 1:
            raise ValueError(
                f"n, batch_size and steps must be positive, got {n}, {batch_size}, {steps}"
            )
        self.n, self.batch_size, self.steps, self.generator = n, batch_size, steps, generator

    def __len__(self) -> int:
        return self.steps

    def __iter__(self):
        for _ in range(self.steps):
            yield torch.randint(0, self.n, (self.batch_size,), generator=self.generator).tolist()


def random_batches(
    x: torch.Tensor, y: torch.Tensor, batch_size: int, steps: int, generator: torch.Generator
) -> DataLoader:
    """A loader of ``steps`` random batches ``(x[idx], y[idx])`` (:class:`RandomBatchSampler`).

    The loader's own seed draw uses a private generator, so iterating it leaves torch's global
    random state untouched (the model's nested dropout and code restarts draw from it).

    >>> g = torch.Generator().manual_seed(0)
    >>> xb, yb = next(iter(random_batches(torch.rand(10, 1, 4, 4), torch.arange(10), 3, 2, g)))
    >>> tuple(xb.shape), tuple(yb.shape)
    ((3, 1, 4, 4), (3,))
    """
    sampler = RandomBatchSampler(len(x), batch_size, steps, generator)
    return DataLoader(TensorDataset(x, y), batch_sampler=sampler, generator=torch.Generator())


class InMemoryImageDataModule(pl.LightningDataModule):
    """Serves an in-memory ``train_set`` / ``test_set`` of ``(image, label)`` pairs.

    Subclasses fill both in ``setup`` and save ``batch_size`` and ``seed`` as
    hyperparameters; training batches are shuffled with that seed and full-size.
    """

    train_set: TensorDataset
    test_set: TensorDataset

    def train_dataloader(self) -> DataLoader:
        g = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(
            self.train_set, self.hparams.batch_size, shuffle=True, drop_last=True, generator=g
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)


class DigitsDataModule(InMemoryImageDataModule):
    """Upsampled scikit-learn digits (10 classes), seeded split.

    Examples
    --------
    >>> dm = DigitsDataModule(batch_size=8)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape
    (torch.Size([8, 1, 16, 16]), torch.Size([8]))
    """

    def __init__(
        self, image_size: int = 16, batch_size: int = 64, test_fraction: float = 0.25, seed: int = 0
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.save_hyperparameters()
        self.num_classes = 10

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        xtr, ytr, xte, yte = load_digits_images(hp.image_size, hp.test_fraction, hp.seed)
        self.train_set, self.test_set = TensorDataset(xtr, ytr), TensorDataset(xte, yte)


class ShapesDataModule(InMemoryImageDataModule):
    """Procedural class-conditional shapes (18 classes: shape x colour x size).

    Examples
    --------
    >>> dm = ShapesDataModule(batch_size=8, n_train=36, n_test=18, image_size=16)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape
    (torch.Size([8, 3, 16, 16]), torch.Size([8]))
    """

    def __init__(
        self,
        image_size: int = 32,
        batch_size: int = 64,
        n_train: int = 3600,
        n_test: int = 900,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.save_hyperparameters()
        self.num_classes = len(shape_classes())

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        xtr, ytr, xte, yte = load_shapes_images(hp.n_train, hp.n_test, hp.image_size, hp.seed)
        self.train_set, self.test_set = TensorDataset(xtr, ytr), TensorDataset(xte, yte)


class ImageFolderDataModule(InMemoryImageDataModule):
    """Your own images: ``<path>/<class>/<image>`` files, resized and held in memory.

    Parameters
    ----------
    path:
        Root folder; one subfolder per class (labels in sorted name order), or images directly
        in it (one class).
    image_size:
        Side of the square images (short side resized, centre crop); set the model's
        ``image_size`` to the same value.
    channels:
        3 (RGB) or 1 (greyscale); set the model's ``channels`` to the same value.
    batch_size, test_fraction, seed:
        Training batch size, the held-out fraction of every class (seeded split).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from PIL import Image
    >>> root = Path(tempfile.mkdtemp())
    >>> for c in ("a", "b"):
    ...     (root / c).mkdir()
    ...     for i in range(4):
    ...         Image.fromarray(np.full((8, 8, 3), 60 * i, np.uint8)).save(root / c / f"{i}.png")
    >>> dm = ImageFolderDataModule(str(root), image_size=8, batch_size=2)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> tuple(x.shape), dm.num_classes, dm.class_names
    ((2, 3, 8, 8), 2, ['a', 'b'])
    """

    def __init__(
        self,
        path: str,
        image_size: int = 32,
        channels: int = 3,
        batch_size: int = 64,
        test_fraction: float = 0.2,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        x, y, self.class_names = load_image_folder(hp.path, hp.image_size, hp.channels)
        self.num_classes = len(self.class_names)
        xtr, ytr, xte, yte = split_images(x, y, hp.test_fraction, hp.seed)
        if len(xtr) < hp.batch_size:
            raise ValueError(
                f"{hp.path}: {len(xtr)} training images, fewer than one batch of "
                f"{hp.batch_size}; lower --data.batch_size"
            )
        self.train_set, self.test_set = TensorDataset(xtr, ytr), TensorDataset(xte, yte)


class HFImageDataModule(pl.LightningDataModule):
    """Image classification data through ``datasets`` (ImageNet-1k by default).

    Parameters
    ----------
    path:
        Hub dataset id (``ILSVRC/imagenet-1k``, gated: accept its terms and log in) or a local
        directory (``imagefolder`` layout ``<class>/<image>``).
    image_size:
        Side of the square crops (256 in the paper).
    train_split, test_split:
        Split names; when ``test_split`` is missing a seeded ``test_fraction`` of the train
        split is held out.
    image_key, label_key:
        Column names of the image and the class label.
    cache_dir:
        Where ``datasets`` keeps its cache (default: its own, under the user's home).

    Offline without a local copy, :meth:`setup` raises ``ConnectionError`` naming the
    dataset and the offline data.
    """

    def __init__(
        self,
        path: str = "ILSVRC/imagenet-1k",
        image_size: int = 256,
        batch_size: int = 64,
        train_split: str = "train",
        test_split: str = "validation",
        test_fraction: float = 0.1,
        image_key: str = "image",
        label_key: str = "label",
        num_workers: int = 0,
        seed: int = 0,
        cache_dir: str | None = None,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        try:
            ds = load_dataset(hp.path, offline_hint=OFFLINE_DATA_HINT, cache_dir=hp.cache_dir)
        except HubUnavailableError as exc:  # an OSError: the CLI prints it as one line
            raise ConnectionError(str(exc)) from exc
        train = ds[hp.train_split]
        if hp.test_split in ds:
            test = ds[hp.test_split]
        else:
            parts = train.train_test_split(test_size=hp.test_fraction, seed=hp.seed)
            train, test = parts["train"], parts["test"]
        names = getattr(train.features.get(hp.label_key), "names", None)
        self.num_classes = len(names) if names else len(set(train[hp.label_key]))
        self.train_set = HFImageSplit(train, hp.image_size, hp.image_key, hp.label_key)
        self.test_set = HFImageSplit(test, hp.image_size, hp.image_key, hp.label_key)

    def _loader(self, data, shuffle: bool) -> DataLoader:
        g = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(
            data, self.hparams.batch_size, shuffle=shuffle, drop_last=shuffle, generator=g,
            num_workers=self.hparams.num_workers,
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_set, True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(self.test_set, False)
