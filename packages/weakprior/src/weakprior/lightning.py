"""Small diffusion priors trained on CPU: the UNets, the Lightning module and data, the cache.

* ``backbone="diffusers"`` (the default) -- a small ``diffusers.UNet2DModel``, the class of the
  paper's pretrained google/ddpm-ema checkpoints (:mod:`weakprior.pretrained`): three levels of
  ``(w, 2w, 2w)`` channels (24 -> 12 -> 6 px), one ResNet layer per block, plain down/up blocks
  and a single attention block (in the mid block), GroupNorm with ``min(8, w)`` groups;
  ``w = 16`` gives 267 k parameters (:func:`diffusers_unet`).
* :class:`TinyUNet` -- a hand-written two-level convolutional eps-network (``backbone="tiny"``,
  61 k parameters at ``w = 16``); kept only as a diffusers-free fallback for quick experiments
  (about 40 % of the CPU time per call; see the cost table of `reproduce`).
* :class:`DDPMPriorModule` -- DDPM training with the eps-MSE loss
  ``E_{t, eps} || eps - eps_theta(sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, t) ||^2`` on the
  1000-step linear schedule of :func:`weakprior.ddim.linear_alphas_cumprod` (identical to
  diffusers' ``DDPMScheduler(beta_schedule="linear")``); ``predict`` draws DDIM samples.
* :class:`ImageDomainDataModule` -- one image domain of :mod:`weakprior.image_domains`.
* :func:`train_prior` -- fit a prior with the quiet Lightning ``Trainer``
  (:func:`icml26_shared.trainer.quiet_trainer`) and cache its weights on disk under the hash of
  its configuration; :func:`train_priors` -- the priors of an experiment by name, including the
  "under-trained" prior (the faces prior stopped at 5 % of the steps).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from icml26_shared.trainer import quiet_trainer
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .ddim import FewStepDDIM, linear_alphas_cumprod, spaced_timesteps
from .image_domains import DOMAINS, load_domain


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of integer timesteps, ``(B, dim)``."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=1)


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, tdim: int, groups: int) -> None:
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(tdim, cout)
        self.n2, self.c2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    """Two-resolution UNet eps-network for small grayscale images.

    Examples
    --------
    >>> net = TinyUNet(channels=1, width=8)
    >>> net(torch.zeros(2, 1, 8, 8), torch.tensor([0, 999])).shape
    torch.Size([2, 1, 8, 8])
    """

    def __init__(self, channels: int = 1, width: int = 32) -> None:
        super().__init__()
        g = min(8, width)
        self.tdim = 2 * width
        self.temb = nn.Sequential(
            nn.Linear(width, self.tdim), nn.SiLU(), nn.Linear(self.tdim, self.tdim)
        )
        self.width = width
        self.inp = nn.Conv2d(channels, width, 3, padding=1)
        self.down1 = _ResBlock(width, width, self.tdim, g)
        self.pool = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.down2 = _ResBlock(2 * width, 2 * width, self.tdim, g)
        self.mid = _ResBlock(2 * width, 2 * width, self.tdim, g)
        self.up = nn.ConvTranspose2d(2 * width, width, 2, stride=2)
        self.up1 = _ResBlock(2 * width, width, self.tdim, g)
        self.out = nn.Sequential(
            nn.GroupNorm(g, width), nn.SiLU(), nn.Conv2d(width, channels, 3, padding=1)
        )

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        temb = self.temb(timestep_embedding(t, self.width))
        h1 = self.down1(self.inp(x), temb)
        h2 = self.mid(self.down2(self.pool(h1), temb), temb)
        h = self.up1(torch.cat([self.up(h2), h1], dim=1), temb)
        return self.out(h)


def diffusers_unet(channels: int = 1, width: int = 16, image_size: int = 24):
    """The small ``diffusers.UNet2DModel`` of the offline priors.

    Three resolutions with ``(width, 2 width, 2 width)`` channels, ``layers_per_block=1``, plain
    ``DownBlock2D`` / ``UpBlock2D`` blocks, one attention block (diffusers' mid block, at
    ``image_size / 4``), GroupNorm with ``min(8, width)`` groups. ``image_size`` must be a
    multiple of 4.
    """
    from diffusers import UNet2DModel

    if image_size % 4:
        raise ValueError(
            f"image_size must be a multiple of 4 for the UNet2DModel, got {image_size}"
        )
    return UNet2DModel(
        sample_size=image_size,
        in_channels=channels,
        out_channels=channels,
        block_out_channels=(width, 2 * width, 2 * width),
        layers_per_block=1,
        down_block_types=("DownBlock2D", "DownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "UpBlock2D", "UpBlock2D"),
        add_attention=True,  # the single attention block, in the mid block
        attention_head_dim=8,
        norm_num_groups=min(8, width),
    )


class _DiffusersBackbone(nn.Module):
    """:func:`diffusers_unet` behind the ``(x, t) -> eps`` interface."""

    def __init__(self, channels: int, width: int, image_size: int) -> None:
        super().__init__()
        self.unet = diffusers_unet(channels, width, image_size)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.unet(x, t).sample


class WarmupEMA:
    """EMA update with warm-up: ``ema <- d_n ema + (1 - d_n) w``, ``d_n = min(decay, (1 + n) / (10 + n))``.

    ``n`` is the number of updates so far. Without the warm-up the average starts from the
    first iterate (``torch.optim.swa_utils.AveragedModel`` copies it) and keeps ``decay ** n`` of
    it: 22 % after 1500 steps at decay 0.999, an average dominated by a barely trained network
    (held-out eps-MSE 0.056 against 0.045 for the raw weights, measured on the faces prior).
    The warm-up is the one of TensorFlow's ``ExponentialMovingAverage(num_updates=...)`` and
    diffusers' ``EMAModel``.

    Examples
    --------
    >>> ema = WarmupEMA(0.999)
    >>> float(ema(torch.tensor(0.0), torch.tensor(1.0), torch.tensor(1)))  # d_1 = 2 / 11
    0.8181818127632141
    """

    def __init__(self, decay: float) -> None:
        self.decay = float(decay)

    def __call__(self, averaged: torch.Tensor, current: torch.Tensor, num_averaged) -> torch.Tensor:
        n = float(num_averaged)
        d = min(self.decay, (1.0 + n) / (10.0 + n))
        return d * averaged + (1.0 - d) * current


class DDPMPriorModule(pl.LightningModule):
    """DDPM eps-prediction prior (Lightning), the "weak" or "strong" prior of the paper.

    Parameters
    ----------
    image_size, channels:
        Image geometry.
    width:
        Base channel width of the UNet.
    backbone:
        ``"diffusers"`` (:func:`diffusers_unet`, default) or ``"tiny"`` (:class:`TinyUNet`).
    lr:
        Adam learning rate.
    num_train_timesteps:
        ``T`` of the linear schedule (1000).
    sample_steps:
        DDIM steps used by ``predict_step``.
    ema_decay:
        Decay of the exponential moving average of the weights (0 = no EMA). With EMA the
        averaged copy ``ema_net`` is the prior (:meth:`eps`, ``forward``, sampling), as with the
        paper's google/ddpm-ema checkpoints (Ho et al. 2020 keep an EMA with decay 0.9999).

    References
    ----------
    Ho, Jain, Abbeel, "Denoising Diffusion Probabilistic Models", NeurIPS 2020 (the eps-MSE);
    Jia et al., "Weak diffusion priors for inverse problems", ICML 2026 (the priors' role).

    Examples
    --------
    >>> m = DDPMPriorModule(image_size=8, width=8)  # a diffusers UNet2DModel
    >>> type(m.net.unet).__name__, m(torch.zeros(3, 1, 8, 8), torch.tensor([1, 2, 3])).shape
    ('UNet2DModel', torch.Size([3, 1, 8, 8]))
    """

    def __init__(
        self,
        image_size: int = 24,
        channels: int = 1,
        width: int = 16,
        backbone: str = "diffusers",
        lr: float = 2e-3,
        num_train_timesteps: int = 1000,
        sample_steps: int = 3,
        ema_decay: float = 0.0,
    ) -> None:
        super().__init__()
        if not 0.0 <= ema_decay < 1.0:
            raise ValueError(f"ema_decay must lie in [0, 1), got {ema_decay}")
        self.save_hyperparameters()
        if backbone == "tiny":
            self.net = TinyUNet(channels, width)
        elif backbone == "diffusers":
            self.net = _DiffusersBackbone(channels, width, image_size)
        else:
            raise ValueError(f"backbone must be 'tiny' or 'diffusers', got {backbone!r}")
        self.register_buffer(
            "alphas_cumprod", linear_alphas_cumprod(num_train_timesteps).float(), persistent=False
        )
        self.ema_net = None
        if ema_decay > 0:
            from torch.optim.swa_utils import AveragedModel

            self.ema_net = AveragedModel(self.net, avg_fn=WarmupEMA(ema_decay), use_buffers=True)
            self.ema_net.requires_grad_(False)

    @property
    def prior_net(self) -> nn.Module:
        """The network used as the prior: the EMA copy when ``ema_decay > 0``, else ``net``."""
        return self.net if self.ema_net is None else self.ema_net.module

    def on_train_batch_end(self, outputs, batch, batch_idx) -> None:
        if self.ema_net is not None:
            self.ema_net.update_parameters(self.net)

    def forward(self, x: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
        """eps-prediction at integer timesteps ``t`` (``(B,)``; default ``T // 2``)."""
        if t is None:
            t = torch.full((x.shape[0],), self.hparams.num_train_timesteps // 2, dtype=torch.long)
        return self.prior_net(x, t.to(x.device))

    def eps(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The ``eps_model(x_t, t)`` callable used by the solvers (the EMA weights if any)."""
        return self.prior_net(x, t.to(x.device))

    def eps_loss(
        self, x0: torch.Tensor, gen: torch.Generator | None = None, net: nn.Module | None = None
    ) -> torch.Tensor:
        """The DDPM eps-MSE ``|| eps - eps_theta(sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, t) ||^2``.

        ``t`` uniform on ``0..T-1`` and ``eps ~ N(0, I)``, drawn from ``gen`` (or the global
        generator); the training, validation and test steps all use it (validation and test
        score ``net``, the EMA weights when there are any; training always ``self.net``).
        """
        net = self.net if net is None else net
        b = x0.shape[0]
        t = torch.randint(0, self.hparams.num_train_timesteps, (b,), generator=gen)
        noise = torch.randn(x0.shape, generator=gen).to(x0)
        a = self.alphas_cumprod[t].view(-1, 1, 1, 1).to(x0)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        return F.mse_loss(net(xt, t.to(x0.device)), noise)

    def training_step(self, batch, batch_idx):
        loss = self.eps_loss(batch[0])
        self.log("train/eps_mse", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self.eps_loss(batch[0], torch.Generator().manual_seed(batch_idx), self.prior_net)
        self.log("val/eps_mse", loss, prog_bar=True)
        return loss

    test_step = validation_step

    def predict_step(self, batch, batch_idx):
        """DDIM samples, one per image of the batch (seeded by ``batch_idx``)."""
        x = batch[0]
        gen = torch.Generator().manual_seed(batch_idx)
        z = torch.randn(x.shape, generator=gen).to(x)
        ts = spaced_timesteps(self.hparams.sample_steps, self.hparams.num_train_timesteps)
        return FewStepDDIM(self.eps, ts, self.alphas_cumprod.double())(z)

    def configure_optimizers(self):
        return torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)


class ImageDomainDataModule(pl.LightningDataModule):
    """Train/validation images of one offline domain (:func:`weakprior.image_domains.load_domain`).

    Examples
    --------
    >>> dm = ImageDomainDataModule("digits", image_size=8, batch_size=4)
    >>> dm.setup("fit"); next(iter(dm.train_dataloader()))[0].shape
    torch.Size([4, 1, 8, 8])
    """

    def __init__(
        self,
        domain: str = "faces",
        image_size: int = 24,
        batch_size: int = 64,
        val_size: int = 64,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if domain not in DOMAINS:
            raise ValueError(f"unknown image domain {domain!r}; choose from {', '.join(DOMAINS)}")
        self.save_hyperparameters()
        self.train_set = self.val_set = None

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        if self.train_set is None:
            self.train_set = TensorDataset(
                load_domain(hp.domain, "train", hp.image_size, seed=hp.seed)
            )
            self.val_set = TensorDataset(
                load_domain(hp.domain, "test", hp.image_size, n=hp.val_size, seed=hp.seed)
            )

    def train_dataloader(self):
        gen = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(
            self.train_set, self.hparams.batch_size, shuffle=True, drop_last=True, generator=gen
        )

    def val_dataloader(self):
        return DataLoader(self.val_set, self.hparams.batch_size)

    test_dataloader = val_dataloader
    predict_dataloader = val_dataloader


def cache_dir() -> Path:
    """Folder of the package's cache: ``$WEAKPRIOR_CACHE`` or ``~/.cache/weakprior``."""
    return Path(os.environ.get("WEAKPRIOR_CACHE", Path.home() / ".cache" / "weakprior"))


def prior_cache() -> Path:
    """Folder of the cached priors, ``cache_dir() / "priors"``: the one cache of
    :func:`train_prior` whether it is called from Python, ``weakprior reconstruct`` or
    ``weakprior reproduce``."""
    return cache_dir() / "priors"


class StepProgress(pl.Callback):
    """A progress bar over optimiser steps (``max_steps``), not over epochs.

    Drawn only on a terminal (:func:`icml26_shared.progress.progress_enabled`); the loss of the
    last step is shown on the bar.
    """

    def __init__(self, total: int, desc: str = "prior") -> None:
        self.total, self.desc, self.bar = int(total), desc, None

    def on_train_start(self, trainer, pl_module) -> None:
        from icml26_shared.progress import progress_enabled
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total, desc=self.desc, disable=not progress_enabled(),
                        leave=False)  # fmt: skip

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.bar is not None:
            self.bar.update(1)
            if isinstance(outputs, dict) and "loss" in outputs:
                self.bar.set_postfix(eps_mse=f"{float(outputs['loss']):.4f}", refresh=False)

    def on_train_end(self, trainer, pl_module) -> None:
        if self.bar is not None:
            self.bar.close()


def prior_key(**config) -> str:
    """The cache key of a prior: a hash of its training configuration."""
    if not config.get("ema_decay"):
        config.pop("ema_decay", None)  # priors without EMA keep their 0.1 keys
    else:
        config["ema"] = "warmup"  # priors averaged without warm-up (WarmupEMA) are not reused
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def train_prior(
    domain: str,
    steps: int,
    image_size: int = 24,
    width: int = 16,
    batch_size: int = 32,
    lr: float = 2e-3,
    seed: int = 0,
    backbone: str = "diffusers",
    cache: Path | None = None,
    ema_decay: float = 0.0,
) -> DDPMPriorModule:
    """Train (or load from the cache) a prior on ``domain`` for ``steps`` Adam steps.

    The weights are cached under :func:`prior_cache` (or ``cache``) by a hash of the
    configuration, so a prior trained here is reused by ``weakprior reconstruct`` and
    ``weakprior reproduce`` with the same settings, and the other way round. Training shows a
    progress bar over the steps on a terminal; the file is written atomically.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     prior = train_prior("digits", 2, image_size=8, width=8, batch_size=4, cache=d)
    >>> prior.eps(torch.zeros(1, 1, 8, 8), torch.tensor([10])).shape
    torch.Size([1, 1, 8, 8])
    """
    if steps < 1:
        raise ValueError(f"prior training steps must be >= 1, got {steps}")
    key = prior_key(domain=domain, steps=steps, image_size=image_size, width=width,
                    batch_size=batch_size, lr=lr, seed=seed, backbone=backbone, version=2,
                    ema_decay=ema_decay)  # fmt: skip
    folder = Path(cache) if cache is not None else prior_cache()
    path = folder / f"prior-{domain}-{key}.pt"
    hp = dict(image_size=image_size, width=width, backbone=backbone, lr=lr, ema_decay=ema_decay)
    module = DDPMPriorModule(**hp)
    module.cache_file = path
    if path.is_file():
        module.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return module.eval()
    pl.seed_everything(seed, verbose=False)
    module = DDPMPriorModule(**hp)
    data = ImageDomainDataModule(domain, image_size, batch_size, seed=seed)
    trainer = quiet_trainer(
        max_epochs=-1, max_steps=steps, limit_val_batches=0, num_sanity_val_steps=0,
        callbacks=[StepProgress(steps, f"prior {domain}")],
    )  # fmt: skip
    trainer.fit(module, datamodule=data)
    if trainer.interrupted or trainer.global_step < steps:  # Ctrl-C: never cache a partial prior
        raise KeyboardInterrupt(
            f"prior training stopped at step {trainer.global_step} of {steps}; nothing was cached"
        )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(module.state_dict(), tmp)
    os.replace(tmp, path)
    module.cache_file = path
    return module.eval()


UNDER_TRAINED = "under-trained"


def train_priors(
    names,
    steps: int,
    image_size: int = 24,
    width: int = 16,
    batch_size: int = 32,
    seed: int = 0,
    backbone: str = "diffusers",
    cache: Path | None = None,
    ema_decay: float = 0.0,
) -> dict[str, DDPMPriorModule]:
    """The priors ``{name: frozen module}`` named by ``names`` (domains or ``"under-trained"``).

    Each domain prior is :func:`train_prior` for ``steps`` Adam steps; ``"under-trained"`` is the
    faces prior stopped at 5 % of the steps (``max(1, steps // 20)``, its raw weights: no EMA,
    which would average in its first steps). All are cached on disk (:func:`prior_cache`), so
    a second call with the same configuration only loads them. The returned modules do not
    require gradients (the solvers differentiate through them with respect to ``z`` only).
    """
    from icml26_shared.progress import progress

    names = list(names)
    priors: dict[str, DDPMPriorModule] = {}
    domains = [p for p in names if p != UNDER_TRAINED]
    for name in progress(domains, desc="priors", total=len(domains)):
        priors[name] = train_prior(name, steps, image_size, width, batch_size, seed=seed,
                                   backbone=backbone, cache=cache, ema_decay=ema_decay)  # fmt: skip
    if UNDER_TRAINED in names:
        priors[UNDER_TRAINED] = train_prior("faces", under_trained_steps(steps), image_size, width,
                                            batch_size, seed=seed, backbone=backbone, cache=cache)  # fmt: skip
    for module in priors.values():
        module.requires_grad_(False)
    return {name: priors[name] for name in names}


def under_trained_steps(steps: int) -> int:
    """Training steps of the under-trained prior: 5 % of ``steps`` (at least one).

    >>> under_trained_steps(400)
    20
    """
    return max(1, steps // 20)


def describe_priors(
    steps: int, width: int = 16, batch_size: int = 32, backbone: str = "diffusers"
) -> str:
    """One sentence naming the priors of :func:`train_priors` (for result notes).

    >>> describe_priors(400)[:46]
    'diffusers UNet2DModel (channels 16/32/32, one '
    """
    if backbone == "diffusers":
        net = (
            f"diffusers UNet2DModel (channels {width}/{2 * width}/{2 * width}, one attention block)"
        )
    else:
        net = f"{width}-wide TinyUNet"
    return (
        f"{net} trained {steps} Adam steps (batch {batch_size}); under-trained = the faces prior "
        f"after {under_trained_steps(steps)} steps."
    )
