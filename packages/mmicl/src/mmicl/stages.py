"""The three training stages as LightningModules.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. stage 1: pretrain the decoder on modality-1 sequences -> :class:`Stage1Module`;
2. stage 2: freeze the decoder and train the projector (D2 -> D1) on modality-2
   sequences -> :class:`Stage2Module` (``freeze_decoder=False`` with no checkpoint is the
   from-scratch baseline);
3. stage 3: train encoder, projector and decoder jointly -> :class:`Stage3Module`.

Every stage minimises the cross-entropy of the last token's label logits and reports, per
evaluation split (``test/IC/IC2/IW``), the accuracy and the induction-head strength of the
last layer.
"""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as F

from mmicl.gmm_data import SPLITS
from mmicl.multimodal_model import CNNEncoder, MLPEncoder, MultimodalICL
from mmicl.progress_measures import final_row, induction_strength
from mmicl.transformer import ICLDecoder

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

    def logits(self, batch, return_attention: bool = False):
        return self.model(batch["tokens"], return_attention=return_attention)

    def on_fit_start(self) -> None:
        _check_data(self, d_in=self.model.d_in, n_labels=self.model.n_labels)


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
    """The decoder of a stage-1 checkpoint, checked against the configured dimensions."""
    path = Path(checkpoint)
    if not path.is_file():
        raise ValueError(f"decoder checkpoint {str(path)!r} does not exist")
    try:
        stage1 = Stage1Module.load_from_checkpoint(path, map_location="cpu", weights_only=False)
    except Exception as err:  # any unreadable file: corrupt, foreign, truncated
        raise ValueError(f"cannot read decoder checkpoint {str(path)!r}: {err}") from err
    dec = stage1.model
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
    decoder_d_model, decoder_layers, decoder_heads, decoder_pos, decoder_embedding:
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
        )
        self.save_hyperparameters()
        if stage2_checkpoint:
            path = Path(stage2_checkpoint)
            if not path.is_file():
                raise ValueError(f"stage-2 checkpoint {str(path)!r} does not exist")
            state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
            try:
                self.load_state_dict(state)
            except RuntimeError as err:
                detail = " ".join(str(err).split())
                detail = detail[:240] + ("..." if len(detail) > 240 else "")
                raise ValueError(f"stage-2 checkpoint {path.name} does not fit: {detail}") from err
