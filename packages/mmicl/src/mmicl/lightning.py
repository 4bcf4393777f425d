"""The Lightning parts of mmicl: the three training stages and the two data modules.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

Stages (LightningModules):

1. stage 1: pretrain the decoder on modality-1 sequences -> :class:`Stage1Module`;
2. stage 2: freeze the decoder and train the projector (D2 -> D1) on modality-2
   sequences -> :class:`Stage2Module` (``freeze_decoder=False`` with no checkpoint is the
   from-scratch baseline);
3. stage 3: train encoder, projector and decoder jointly -> :class:`Stage3Module`.

Every stage minimises the cross-entropy of the last token's label logits and reports, per
evaluation split (``test/IC/IC2/IW``), the accuracy and the induction-head strength of the
last layer.

Data (LightningDataModules, :class:`UnimodalICLDataModule`, :class:`MultimodalICLDataModule`):

* training: batch ``k`` is drawn fresh from the training distribution with a generator
  seeded by ``(seed, k)`` (a map-style dataset, so Lightning's distributed sampler splits
  batches between DDP ranks and runs are reproducible);
* validation / test: fixed seeded sets of the four splits ``test/IC/IC2/IW``, one
  dataloader each (in :attr:`ICLDataModule.split_names` order); predict: the IC split.
"""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from icml26_shared.cli import UsageError, load_checkpoint
from torch.utils.data import DataLoader, Dataset

from mmicl.feature_bank import FeatureBank
from mmicl.gmm_data import SPLITS, BurstySampler, GMMBank, eval_splits
from mmicl.multimodal_data import DigitsModality, MultimodalSampler, multimodal_eval_splits
from mmicl.multimodal_model import CNNEncoder, MLPEncoder, MultimodalICL
from mmicl.progress_measures import final_row, induction_strength
from mmicl.transformer import ICLDecoder

VAL_SEED, TEST_SEED = 10_000_019, 20_000_003


class _FreshBatches(Dataset):
    def __init__(self, sampler, n_batches: int, batch_size: int, seed: int) -> None:
        self.sampler, self.n_batches, self.batch_size, self.seed = (
            sampler,
            n_batches,
            batch_size,
            seed,
        )

    def __len__(self) -> int:
        return self.n_batches

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + int(k))
        return self.sampler.sample(self.batch_size, g)


class _FixedBatches(Dataset):
    def __init__(self, data: dict[str, torch.Tensor], batch_size: int) -> None:
        self.data, self.batch_size = data, batch_size
        self.n = len(data["target"])

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        sl = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return {k: v[sl] for k, v in self.data.items()}


class ICLDataModule(pl.LightningDataModule):
    """Base of the data modules: fresh seeded training batches, fixed evaluation splits.

    Subclasses set ``self.sampler`` and implement ``_eval_sets(seed)``.

    Examples
    --------
    >>> issubclass(UnimodalICLDataModule, ICLDataModule)
    True
    """

    split_names = SPLITS

    def __init__(self, batch_size: int, train_batches: int, eval_sequences: int, seed: int):
        super().__init__()
        if batch_size < 1 or train_batches < 1 or eval_sequences < 1:
            raise ValueError("batch_size, train_batches and eval_sequences must be >= 1")
        self.batch_size, self.train_batches = batch_size, train_batches
        self.eval_sequences, self.seed = eval_sequences, seed
        self._sets: dict[int, dict] = {}
        self._sampler = None

    @property
    def sampler(self):
        """The training sampler, built (and its settings checked) on first use.

        Building lazily lets the CLI report a bad value as one line once training starts,
        instead of a type-resolution error while it parses the config.
        """
        if self._sampler is None:
            self._sampler = self._build()
        return self._sampler

    def _build(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        """Build the sampler (checks every setting)."""
        _ = self.sampler

    def _eval_sets(self, seed: int) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    def sets(self, stage: str = "val") -> dict[str, dict[str, torch.Tensor]]:
        """The fixed evaluation sets of ``stage`` (``val`` or ``test``)."""
        seed = (VAL_SEED if stage == "val" else TEST_SEED) + self.seed
        if seed not in self._sets:
            self._sets[seed] = self._eval_sets(seed)
        return self._sets[seed]

    def _loaders(self, stage: str) -> list[DataLoader]:
        sets = self.sets(stage)
        return [
            DataLoader(_FixedBatches(sets[name], self.batch_size), batch_size=None)
            for name in self.split_names
        ]

    def train_dataloader(self) -> DataLoader:
        data = _FreshBatches(self.sampler, self.train_batches, self.batch_size, self.seed)
        return DataLoader(data, batch_size=None, shuffle=False)

    def val_dataloader(self) -> list[DataLoader]:
        return self._loaders("val")

    def test_dataloader(self) -> list[DataLoader]:
        return self._loaders("test")

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(_FixedBatches(self.sets("test")["IC"], self.batch_size), batch_size=None)


class UnimodalICLDataModule(ICLDataModule):
    """Bursty Gaussian-mixture sequences (:class:`~mmicl.gmm_data.BurstySampler`).

    Parameters
    ----------
    K, L, D, n_novel, bank_seed:
        The :class:`~mmicl.gmm_data.GMMBank` (the same values give the same bank, which
        the multimodal stages reuse).
    N, B, p_B, p_C, eps, alpha, no_repeats:
        The training distribution.
    batch_size, train_batches:
        Sequences per batch; batches per epoch (fresh sequences each).
    eval_sequences:
        Size of each fixed evaluation split.
    seed:
        Seed of the training stream and the evaluation sets.

    Examples
    --------
    >>> dm = UnimodalICLDataModule(K=32, L=8, D=8, N=4, B=2, batch_size=4, train_batches=2,
    ...                            eval_sequences=8)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["tokens"].shape), len(dm.val_dataloader())
    ((4, 9, 8), 5)
    """

    def __init__(
        self,
        K: int = 8192,
        L: int = 32,
        D: int = 32,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        no_repeats: bool = False,
        n_novel: int = 128,
        bank_seed: int = 0,
        batch_size: int = 128,
        train_batches: int = 10_000,
        eval_sequences: int = 1000,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, train_batches, eval_sequences, seed)
        self.save_hyperparameters()

    def _build(self) -> BurstySampler:
        h = self.hparams
        bank = GMMBank(h.K, h.L, h.D, n_novel=h.n_novel, seed=h.bank_seed)
        return BurstySampler(bank, h.N, h.B, h.p_B, h.p_C, h.eps, h.alpha, h.no_repeats)

    @property
    def bank(self) -> GMMBank:
        """The Gaussian-mixture bank."""
        return self.sampler.bank

    def _eval_sets(self, seed: int) -> dict:
        return eval_splits(self.sampler, self.eval_sequences, seed)


class MultimodalICLDataModule(ICLDataModule):
    """``[M1, M2, y] x N + [M1_q, M2_q]`` sequences (:class:`~mmicl.multimodal_data.MultimodalSampler`).

    Parameters
    ----------
    K1, L1, D1, n_novel1, bank1_seed:
        The primary bank; use the values of the stage-1 pretraining so that label tokens
        and paired M1 items come from the decoder's modality.
    modality2:
        ``gmm`` (a :class:`~mmicl.gmm_data.GMMBank` with ``K2, L2, D2``), ``digits``
        (scikit-learn digits; ``K2`` training digits 0..K2-1, the rest novel; ``D2 = 64``)
        or ``features`` (your own embeddings, a :class:`~mmicl.feature_bank.FeatureBank`
        read from the ``.npz`` file ``features``: the first ``K2`` sorted labels train, the
        rest are the novel classes of the IC split; ``D2`` = the feature dimension).
    features:
        Path of the ``.npz`` feature bank (``modality2="features"``): arrays ``features``
        (n, d) and integer ``labels`` (n,); ``None`` uses the built-in example (scikit-learn
        digits embedded by a 16-component PCA, :func:`mmicl.feature_bank.digits_features`).
    standardize:
        Centre and scale the feature bank (``modality2="features"``) to unit mean norm.
    K2, L2, D2, n_novel2, bank2_seed:
        The secondary bank (``L2 <= L1``; ``L2`` defaults to ``min(K2, L1)``).
    N, B, p_B, p_C, eps, alpha, control:
        The training distribution (see :class:`~mmicl.multimodal_data.MultimodalSampler`).
    batch_size, train_batches, eval_sequences, seed:
        As in :class:`UnimodalICLDataModule`.

    Examples
    --------
    >>> dm = MultimodalICLDataModule(K1=32, L1=8, D1=8, K2=4, D2=6, N=4, B=2, batch_size=4,
    ...                              train_batches=2, eval_sequences=8)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["m1"].shape), tuple(batch["m2"].shape)
    ((4, 5, 8), (4, 5, 6))
    """

    def __init__(
        self,
        K1: int = 8192,
        L1: int = 32,
        D1: int = 32,
        n_novel1: int = 128,
        bank1_seed: int = 0,
        modality2: str = "gmm",
        K2: int = 4,
        L2: int | None = None,
        D2: int = 16,
        n_novel2: int = 64,
        bank2_seed: int = 1,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        control: str = "none",
        batch_size: int = 128,
        train_batches: int = 10_000,
        eval_sequences: int = 1000,
        seed: int = 0,
        features: str | None = None,
        standardize: bool = True,
    ) -> None:
        super().__init__(batch_size, train_batches, eval_sequences, seed)
        self.save_hyperparameters()

    def _build(self) -> MultimodalSampler:
        h = self.hparams
        bank1 = GMMBank(h.K1, h.L1, h.D1, n_novel=h.n_novel1, seed=h.bank1_seed)
        if h.modality2 == "gmm":
            L2 = min(h.K2, h.L1) if h.L2 is None else h.L2
            m2 = GMMBank(h.K2, L2, h.D2, n_novel=h.n_novel2, seed=h.bank2_seed)
        elif h.modality2 == "digits":
            if not 1 <= h.K2 <= 9:
                raise ValueError(f"digits: K2 must be between 1 and 9 training digits, got {h.K2}")
            m2 = DigitsModality(tuple(range(h.K2)))
        elif h.modality2 == "features":
            kw = {"K2": h.K2, "min_novel": h.N // h.B, "standardize": h.standardize}
            if h.features:
                m2 = FeatureBank.from_npz(h.features, **kw)
            else:  # the built-in example: scikit-learn digits, PCA-16 (D2 = 16)
                from mmicl.feature_bank import digits_features

                m2 = FeatureBank(*digits_features(16), **kw)
        else:
            raise ValueError(f"unknown modality2 {h.modality2!r}; choose gmm, digits or features")
        return MultimodalSampler(bank1, m2, h.N, h.B, h.p_B, h.p_C, h.eps, h.alpha, h.control)

    @property
    def bank1(self) -> GMMBank:
        """The primary bank."""
        return self.sampler.bank1

    @property
    def m2(self):
        """The secondary modality."""
        return self.sampler.m2

    @property
    def d2(self) -> int:
        """Dimension of the raw secondary items."""
        return self.m2.D

    def _eval_sets(self, seed: int) -> dict:
        return multimodal_eval_splits(self.sampler, self.eval_sequences, seed)


# ------------------------------------------------------------ stages

ENCODERS = ("none", "mlp", "cnn")


class ICLStage(pl.LightningModule):
    """Base of the three stages: cross-entropy at the last token; per-split accuracy and
    IH strength in validation / test (logged as ``val_IC_acc``, ``test_IW_ih``, ...).

    Subclasses implement ``logits(batch, return_attention=False)``.

    Examples
    --------
    >>> issubclass(Stage1Module, ICLStage) and issubclass(Stage3Module, ICLStage)
    True
    """

    lr: float
    weight_decay: float

    def logits(self, batch, return_attention: bool = False):  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.logits(batch)

    def training_step(self, batch, batch_idx):
        loss = F.cross_entropy(self.logits(batch), batch["target"])
        self.log("train_loss", loss, prog_bar=True, batch_size=len(batch["target"]))
        return loss

    def _eval_step(self, prefix: str, batch, dataloader_idx: int) -> None:
        logits, attns = self.logits(batch, return_attention=True)
        acc = (logits.argmax(-1) == batch["target"]).float().mean()
        ih, valid = induction_strength(
            final_row(attns[-1]), batch["match_label"], batch["label_mask"]
        )
        split = SPLITS[dataloader_idx] if dataloader_idx < len(SPLITS) else str(dataloader_idx)
        n = len(batch["target"])
        kw = {"batch_size": n, "add_dataloader_idx": False}
        self.log(f"{prefix}_{split}_acc", acc, **kw)
        self.log(f"{prefix}_{split}_ih", ih[valid].mean() if valid.any() else ih.sum() * 0, **kw)

    def validation_step(self, batch, batch_idx, dataloader_idx: int = 0):
        self._eval_step("val", batch, dataloader_idx)

    def test_step(self, batch, batch_idx, dataloader_idx: int = 0):
        self._eval_step("test", batch, dataloader_idx)

    def predict_step(self, batch, batch_idx, dataloader_idx: int = 0):
        return self.logits(batch).argmax(-1)

    def configure_optimizers(self):
        params = [p for p in self.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)


class Stage1Module(ICLStage):
    """Stage 1: pretrain an :class:`~mmicl.transformer.ICLDecoder` on modality 1.

    Parameters
    ----------
    d_in, n_labels:
        Token dimension ``D`` and label count ``L`` of the data.
    d_model, n_layers, n_heads, pos, mlp, max_positions, embedding:
        The decoder (see :class:`~mmicl.transformer.ICLDecoder`; ``embedding="concat"`` is
        the authors' layout, raw tokens with fixed one-hot position channels).
    lr, weight_decay:
        AdamW settings (the authors: 1e-3, 1e-6).

    Examples
    --------
    >>> m = Stage1Module(d_in=8, n_labels=4, d_model=16)
    >>> m({"tokens": torch.randn(2, 9, 8)}).shape
    torch.Size([2, 4])
    """

    def __init__(
        self,
        d_in: int = 32,
        n_labels: int = 32,
        d_model: int | None = None,
        n_layers: int = 2,
        n_heads: int = 1,
        pos: str = "rope",
        mlp: str = "swiglu",
        max_positions: int = 65,
        lr: float = 1e-3,
        weight_decay: float = 1e-6,
        embedding: str = "linear",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = ICLDecoder(
            d_in,
            n_labels,
            d_model,
            n_layers,
            n_heads,
            pos=pos,
            mlp=mlp,
            max_positions=max_positions,
            embedding=embedding,
        )
        self.lr, self.weight_decay = lr, weight_decay
        self.datamodule_hparams: dict = {}  # filled when loaded from a checkpoint

    def logits(self, batch, return_attention: bool = False):
        return self.model(batch["tokens"], return_attention=return_attention)

    def on_fit_start(self) -> None:
        _check_data(self, d_in=self.model.d_in, n_labels=self.model.n_labels)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Keep the data settings saved with the checkpoint (by ``mmicl fit``) as
        :attr:`datamodule_hparams`, so one read of the file gives model and data."""
        self.datamodule_hparams = dict(checkpoint.get("datamodule_hyper_parameters") or {})


def _check_data(module: pl.LightningModule, **expected: int) -> None:
    """Refuse a datamodule whose sizes do not match the model (one clear line)."""
    dm = getattr(module.trainer, "datamodule", None)
    hp = getattr(dm, "hparams", None)
    if hp is None:
        return
    names = {"d_in": ("D", "D1"), "n_labels": ("L", "L1"), "d2": ("D2",)}
    for key, value in expected.items():
        for name in names[key]:
            have = getattr(dm, "d2", None) if name == "D2" else hp.get(name)
            if name == "D2" and getattr(dm, "hparams", {}).get("modality2") is None:
                continue
            if have is not None and int(have) != int(value):
                raise ValueError(
                    f"the data's {name}={have} does not match the model's {key}={value}"
                )


def load_decoder(checkpoint: str | Path, d_in: int, n_labels: int) -> ICLDecoder:
    """The decoder of a stage-1 checkpoint, checked against the configured dimensions.

    The file is read with :func:`icml26_shared.cli.load_checkpoint`: a missing, corrupt or
    foreign file is one line from the command line.
    """
    path = Path(checkpoint)
    try:
        dec = load_checkpoint(Stage1Module, path, what="decoder checkpoint").model
    except UsageError as err:  # a ValueError for Python callers; still one line from the CLI
        raise ValueError(str(err)) from None
    # load_checkpoint returns the module in eval mode; a decoder built into a stage starts in
    # training mode, like a fresh one (an APE decoder then keeps its random position offsets
    # while the projector trains on top of it, frozen or not).
    dec.train()
    if dec.d_in != d_in or dec.n_labels != n_labels:
        raise ValueError(
            f"decoder checkpoint {path.name} has d_in={dec.d_in}, n_labels={dec.n_labels}; "
            f"the config says d1={d_in}, n_labels={n_labels}"
        )
    return dec


class Stage2Module(ICLStage):
    """Stage 2: train the projector on modality 2 with the stage-1 decoder frozen.

    Parameters
    ----------
    d1, n_labels:
        Primary token dimension and label count (checked against the checkpoint).
    d2:
        Dimension of the raw secondary items.
    decoder_checkpoint:
        A stage-1 checkpoint; ``None`` builds a fresh decoder from the ``decoder_*`` values
        (the from-scratch baseline, usually with ``freeze_decoder=False``).
    freeze_decoder:
        Keep the decoder's weights fixed (the paper's stage 2).
    encoder:
        ``none``, ``mlp`` or ``cnn`` (8x8 images); ``encoder_dim`` its output size.
    train_encoder:
        Whether the encoder is trained in this stage.
    decoder_d_model, decoder_layers, decoder_heads, decoder_pos, decoder_embedding, decoder_mlp:
        The fresh decoder (ignored with a checkpoint).
    lr, weight_decay:
        AdamW settings.

    Examples
    --------
    >>> m = Stage2Module(d1=8, n_labels=4, d2=6, decoder_d_model=16)
    >>> sum(p.requires_grad for p in m.model.decoder.parameters())
    0
    """

    def __init__(
        self,
        d1: int = 32,
        n_labels: int = 32,
        d2: int = 16,
        decoder_checkpoint: str | None = None,
        freeze_decoder: bool = True,
        encoder: str = "none",
        encoder_dim: int = 32,
        train_encoder: bool = False,
        projector_hidden: int | None = None,
        decoder_d_model: int | None = None,
        decoder_layers: int = 2,
        decoder_heads: int = 1,
        decoder_pos: str = "rope",
        lr: float = 1e-3,
        weight_decay: float = 1e-6,
        decoder_embedding: str = "linear",
        decoder_mlp: str = "swiglu",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {encoder!r}; choose from {', '.join(ENCODERS)}")
        if decoder_checkpoint:
            decoder = load_decoder(decoder_checkpoint, d1, n_labels)
        else:
            decoder = ICLDecoder(
                d1,
                n_labels,
                decoder_d_model,
                decoder_layers,
                decoder_heads,
                pos=decoder_pos,
                embedding=decoder_embedding,
                mlp=decoder_mlp,
            )
        enc = None
        if encoder == "mlp":
            enc = MLPEncoder(d2, encoder_dim)
        elif encoder == "cnn":
            if d2 != 64:
                raise ValueError(f"the cnn encoder reads 8x8 images (d2=64), got d2={d2}")
            enc = CNNEncoder(encoder_dim)
        self.model = MultimodalICL(decoder, d2, enc, projector_hidden)
        self.model.decoder.requires_grad_(not freeze_decoder)
        if enc is not None:
            enc.requires_grad_(train_encoder)
        self.lr, self.weight_decay = lr, weight_decay

    def logits(self, batch, return_attention: bool = False):
        return self.model(batch, return_attention=return_attention)

    def on_fit_start(self) -> None:
        _check_data(self, d_in=self.model.decoder.d_in, n_labels=self.model.decoder.n_labels)
        _check_data(self, d2=self.model.d2)


class Stage3Module(Stage2Module):
    """Stage 3: train encoder, projector and decoder jointly.

    Takes the arguments of :class:`Stage2Module` (defaults: nothing frozen) plus
    ``stage2_checkpoint``, a stage-2 checkpoint whose weights initialise this model.

    Examples
    --------
    >>> m = Stage3Module(d1=8, n_labels=4, d2=6, encoder="mlp", decoder_d_model=16)
    >>> all(p.requires_grad for p in m.parameters())
    True
    """

    def __init__(
        self,
        d1: int = 32,
        n_labels: int = 32,
        d2: int = 16,
        stage2_checkpoint: str | None = None,
        decoder_checkpoint: str | None = None,
        freeze_decoder: bool = False,
        encoder: str = "mlp",
        encoder_dim: int = 32,
        train_encoder: bool = True,
        projector_hidden: int | None = None,
        decoder_d_model: int | None = None,
        decoder_layers: int = 2,
        decoder_heads: int = 1,
        decoder_pos: str = "rope",
        lr: float = 1e-3,
        weight_decay: float = 1e-6,
        decoder_embedding: str = "linear",
        decoder_mlp: str = "swiglu",
    ) -> None:
        super().__init__(
            d1,
            n_labels,
            d2,
            decoder_checkpoint,
            freeze_decoder,
            encoder,
            encoder_dim,
            train_encoder,
            projector_hidden,
            decoder_d_model,
            decoder_layers,
            decoder_heads,
            decoder_pos,
            lr,
            weight_decay,
            decoder_embedding,
            decoder_mlp,
        )
        self.save_hyperparameters()
        if stage2_checkpoint:
            path = Path(stage2_checkpoint)
            if not path.is_file():
                raise ValueError(f"stage-2 checkpoint {str(path)!r} does not exist")
            # Only the weights: Stage2Module.load_from_checkpoint (icml26_shared.cli.
            # load_checkpoint) would rebuild the module and re-read the stage-1 checkpoint
            # path saved in its hyperparameters, which need not exist any more.
            try:
                state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
            except Exception as err:  # corrupt, truncated or foreign file: one line
                detail = (
                    str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                )
                raise ValueError(
                    f"cannot read stage-2 checkpoint {str(path)!r}: {detail}"
                ) from None
            try:
                self.load_state_dict(state)
            except RuntimeError as err:
                detail = " ".join(str(err).split())
                detail = detail[:240] + ("..." if len(detail) > 240 else "")
                raise ValueError(f"stage-2 checkpoint {path.name} does not fit: {detail}") from err
