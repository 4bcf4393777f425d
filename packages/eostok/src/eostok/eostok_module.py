"""Lightning module of EOSTok: tokenizer stage, prior stage, or joint end-to-end training.

Total loss of the joint stage (EOSTok, arXiv 2605.00503; weights configurable)::

    L = L_rec + L_vq + lambda_AR L_AR + lambda_APR L_APR + lambda_align L_align

* ``L_rec = |x - Dec(z_q)|^2`` (nested dropout in training), ``L_vq`` codebook + commitment;
* ``L_AR`` next-token CE; with ``ar_grad_to_tokenizer`` its gradient reaches the encoder and
  codebook through the straight-through inputs of the prior (:mod:`eostok.ar_prior`);
* ``L_APR`` prediction-to-pixels reconstruction (:mod:`eostok.apr`);
* ``L_align`` implicit alignment of decoder features to a frozen teacher (:mod:`eostok.alignment`).

The two-stage baseline uses the same module: ``stage="tokenizer"`` (``L_rec + L_vq``) and then
``stage="prior"`` (``L_AR`` on frozen codes): :meth:`EOSTokModule.losses`.
"""

from __future__ import annotations

from typing import Literal

import lightning.pytorch as pl
import torch
import torch.nn.functional as F

from .alignment import ImplicitAlignment
from .apr import APRLoss
from .ar_prior import ARPrior
from .feature_net import FeatureCNN
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
        image_size: int = 16,
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
        apr_weight: float = 0.0,
        apr_tau: float = 1.0,
        apr_hard: bool = False,
        align_weight: float = 0.0,
        teacher: Literal["trained", "random"] = "trained",
        teacher_seed: int = 1234,
        tokenizer_checkpoint: str | None = None,
        lr: float = 1e-3,
    ) -> None:
        super().__init__()
        if stage not in ("tokenizer", "prior", "joint"):
            raise ValueError(f"stage must be tokenizer, prior or joint, got {stage!r}")
        for name, w in (
            ("ar_weight", ar_weight),
            ("apr_weight", apr_weight),
            ("align_weight", align_weight),
        ):
            if w < 0:
                raise ValueError(f"{name} must be non-negative, got {w}")
        self.save_hyperparameters()
        self.tokenizer = OneDTokenizer(
            image_size, patch_size, num_latent_tokens, token_dim, codebook_size, width, depth,
            heads, nested_dropout=nested_dropout,
        )  # fmt: skip
        self.prior = ARPrior(
            num_latent_tokens, codebook_size, token_dim, num_classes, width, prior_depth, heads
        )
        self.apr = APRLoss(apr_tau, apr_hard)
        self.alignment = ImplicitAlignment(width, 32, self.tokenizer.grid)
        self.teacher: FeatureCNN | None = None  # frozen, not a submodule (not in the checkpoint)
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

    def set_teacher(self, net: FeatureCNN) -> None:
        """Use ``net`` (frozen) as the alignment teacher."""
        self.teacher = net.eval()
        for p in self.teacher.parameters():
            p.requires_grad_(False)

    def setup(self, stage: str) -> None:
        if self.hparams.align_weight > 0 and self.teacher is None:
            self.set_teacher(self.build_teacher())

    def build_teacher(self) -> FeatureCNN:
        """A frozen random CNN, or one trained on the real training digits (teacher seed)."""
        from .digits_data import load_digits_images
        from .feature_net import train_feature_net

        hp = self.hparams
        if hp.teacher == "random":
            torch.manual_seed(hp.teacher_seed)
            return FeatureCNN()
        xtr, ytr, _, _ = load_digits_images(hp.image_size)
        return train_feature_net(xtr, ytr, seed=hp.teacher_seed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction ``(B, C, H, W)`` of ``x`` through the codes."""
        z_q, _, _ = self.tokenizer.encode(x)
        return self.tokenizer.decode(embeddings=z_q)[0]

    def losses(self, batch) -> dict[str, torch.Tensor]:
        """All loss terms of the current stage and their weighted sum ``loss``."""
        x, y = batch
        hp = self.hparams
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
            ar_in = z_q if hp.ar_grad_to_tokenizer else z_q.detach()
            out["ar"], logits = self.prior.nll(ar_in, codes, y)
            if hp.apr_weight > 0:
                out["apr"] = self.apr(self.tokenizer, logits, x)
            total = total + hp.ar_weight * out["ar"] + hp.apr_weight * out["apr"]
        out["loss"] = total
        return out

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        out = self.losses(batch)
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
        params = [p for n, p in self.named_parameters() if p.requires_grad]
        return torch.optim.Adam(params, lr=self.hparams.lr)
