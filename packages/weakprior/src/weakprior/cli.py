"""Command line of weakprior: ``weakprior --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~weakprior.lightning.DDPMPriorModule`
and :class:`~weakprior.lightning.ImageDomainDataModule`: train a prior), ``reproduce``
(``--preset quick|full|paper``, :mod:`weakprior.reproduce`), and the
package commands ``reconstruct`` (solve one inverse problem with any solver and prior),
``correlation`` (local-correlation curve of a domain) and ``posterior`` (the closed-form
Gaussian-prior experiment).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def _make_operator(
    operator: str, shape, keep_ratio: float, box_frac: float, sr_factor: int, seed: int,
    channels: int = 1,
):  # fmt: skip
    """The operator on images of ``shape``; with ``channels > 1`` (a colour image solved channel
    by channel, one grey image per channel) every channel gets the same mask."""
    from weakprior.operators import (
        BoxInpainting,
        Downsample,
        GaussianBlur,
        MaskInpainting,
        RandomInpainting,
    )

    if operator in ("random", "box"):
        one = (1, *tuple(shape)[1:]) if channels > 1 else tuple(shape)
        op = (
            RandomInpainting(one, keep_ratio, seed=seed)
            if operator == "random"
            else BoxInpainting(one, box_frac)
        )
        return MaskInpainting(op.mask.expand(channels, -1, -1, -1).clone()) if channels > 1 else op
    if operator == "blur":
        return GaussianBlur(5, 1.0)
    return Downsample(sr_factor)


def reconstruct(
    target: Literal["faces", "digits", "natural", "textures"] = "faces",
    prior: Literal["faces", "digits", "natural", "textures", "under-trained"] = "faces",
    operator: Literal["random", "box", "blur", "sr"] = "random",
    keep_ratio: float = 0.3,
    box_frac: float = 0.5,
    sr_factor: int = 2,
    sigma: float = 0.01,
    solver: Literal["weak", "dmplug", "dps", "tv"] = "weak",
    checkpoint: Path | None = None,
    pretrained: str | None = None,
    image: Path | None = None,
    n_images: int = 4,
    image_size: int = 24,
    prior_steps: int = 400,
    prior_ema_decay: float = 0.0,
    prior_seed: int = 0,
    iterations: int = 150,
    lr: float = 0.05,
    dps_steps: int = 100,
    lpips: bool = False,
    seed: int = 0,
    out: Path | None = None,
) -> None:
    """Solve one inverse problem on held-out images or your own image; print PSNR / SSIM.

    Args:
        target: Domain of the held-out images to reconstruct.
        prior: Domain the diffusion prior is trained on (cached by configuration hash).
        operator: ``random`` / ``box`` inpainting, ``blur`` or ``sr`` (super-resolution).
        keep_ratio: Fraction of kept pixels for random inpainting, in (0, 1].
        box_frac: Fraction of the area hidden by the box.
        sr_factor: Super-resolution factor.
        sigma: Measurement noise standard deviation (images in [-1, 1]).
        solver: ``weak`` (paper: sphere Adam + hold-out), ``dmplug``, ``dps`` or ``tv``.
        checkpoint: A Lightning checkpoint of ``weakprior fit`` to use as the prior instead.
        pretrained: The paper's real path: a diffusers ``UNet2DModel`` id such as
            ``google/ddpm-ema-church-256`` (from the local Hugging Face cache or the Hub) as the
            prior; needs ``--image`` (an RGB photo, resized to the model's resolution).
        image: Your own image file (PNG, JPEG, ...), resized to image_size; a colour image is
            reconstructed channel by channel with the grey prior (same mask on every channel).
        n_images: Number of held-out images.
        image_size: Image side in pixels.
        prior_steps: Training steps of the prior (trained once, then read from the cache
            shared with the Python API and ``reproduce``).
        prior_ema_decay: EMA decay of the prior's weights (0.999: the full preset's priors).
        prior_seed: Seed of the prior's training.
        iterations: Optimisation steps of the weak / DMPlug / TV solvers.
        lr: Their learning rate.
        dps_steps: DDPM steps of DPS.
        lpips: Also report LPIPS (needs cached pretrained weights).
        seed: Seed of the mask, the noise and the solver.
        out: Folder for reconstruction.png, measurement.png, comparison.png (truth |
            measurement | reconstruction), reconstruction.npy (in [-1, 1]) and result.json.
    """
    from weakprior.ddim import FewStepDDIM
    from weakprior.dps import DPSSolver
    from weakprior.image_domains import load_domain
    from weakprior.image_quality import psnr, psnr_masked, require_lpips, ssim
    from weakprior.lightning import DDPMPriorModule, train_prior
    from weakprior.noise_optimisation import NoiseOptimisationSolver
    from weakprior.operators import check_image_range, check_sigma, measure
    from weakprior.total_variation import TVSolver

    if lpips:
        try:
            require_lpips()
        except RuntimeError as err:
            raise UsageError(str(err)) from None
    check_sigma(sigma)
    if not 0.0 < keep_ratio <= 1.0:
        raise UsageError(f"keep_ratio must lie in (0, 1], got {keep_ratio}")
    if out is not None:
        from icml26_shared.results import ensure_writable_dir

        try:
            ensure_writable_dir(out)
        except OSError as err:
            raise UsageError(str(err)) from None
    pretrained_eps, colour = None, False
    if pretrained is not None:
        if image is None:
            raise UsageError("--pretrained needs --image (an RGB photo such as a CelebA-HQ face)")
        if checkpoint is not None:
            raise UsageError("give either --pretrained or --checkpoint, not both")
        if solver == "tv":
            raise UsageError("--pretrained has no effect with --solver tv (no learned prior)")
        from icml26_shared.hub import HubUnavailableError

        from weakprior.pretrained import load_image, load_pretrained_prior

        x = load_image(image, None)  # fails early on a missing file, before the model loads
        try:
            pretrained_eps = load_pretrained_prior(pretrained)
        except HubUnavailableError as err:
            raise UsageError(str(err)) from None
        x = load_image(image, int(pretrained_eps.unet.config.sample_size))
    elif image is not None:
        from weakprior.image_files import channels_as_batch
        from weakprior.pretrained import load_image

        try:
            x = load_image(image, image_size)  # (1, 3, S, S)
        except (OSError, ValueError) as err:
            raise UsageError(f"cannot read image {str(image)!r}: {err}") from None
        colour = bool((x - x.mean(1, keepdim=True)).abs().max() > 1e-6)
        x = channels_as_batch(x) if colour else x[:, :1]
    else:
        x = load_domain(target, "test", image_size, n=n_images, seed=seed)
    check_image_range(x)
    op = _make_operator(operator, tuple(x.shape), keep_ratio, box_frac, sr_factor, seed + 11,
                        x.shape[0] if colour else 1)  # fmt: skip
    y = measure(op, x, sigma, seed + 12)
    model, prior_file = None, None
    if pretrained_eps is not None:
        eps = pretrained_eps
    elif solver != "tv":
        if checkpoint is not None:
            model = load_checkpoint(DDPMPriorModule, checkpoint, what="prior checkpoint")
        else:
            domain = "faces" if prior == "under-trained" else prior
            steps = max(1, prior_steps // 20) if prior == "under-trained" else prior_steps
            ema = 0.0 if prior == "under-trained" else prior_ema_decay
            model = train_prior(domain, steps, image_size, 16, 32, seed=prior_seed, ema_decay=ema)
            prior_file = Path(model.cache_file).name  # in the cache shared with the Python API
        model.requires_grad_(False)
        eps = model.eps
    if solver == "tv":
        est = TVSolver(op, iterations=iterations, seed=seed).solve(y, tuple(x.shape)).x
    elif solver == "dps":
        zeta = 0.5 if operator in ("random", "box") else 0.3
        est = DPSSolver(eps, op, zeta, dps_steps, seed=seed).solve(y, tuple(x.shape)).x
    else:
        gen = FewStepDDIM(eps)
        weak = solver == "weak"
        est = NoiseOptimisationSolver(
            gen, op, "adam_sphere" if weak else "adam", "holdout" if weak else "wmv",
            iterations=iterations, lr=lr, best_k=max(1, iterations // 10), seed=seed,
        ).solve(y, tuple(x.shape)).x  # fmt: skip
    est = est.clamp(-1, 1)
    missing = op.missing_pixels(tuple(x.shape))
    if colour:  # metrics on the colour image, not per channel
        from weakprior.image_files import batch_as_channels

        x, est, y = batch_as_channels(x), batch_as_channels(est), batch_as_channels(y)
        missing = None if missing is None else batch_as_channels(missing)
    p_full, s_full = psnr(est, x), ssim(est, x)
    what = f"{x.shape[0]} image(s)" + (" (colour, per channel)" if colour else "")
    print(f"{solver} solver, prior {pretrained or checkpoint or prior}, {operator} on {what}")
    result = {
        "solver": solver, "prior": str(pretrained or checkpoint or prior), "operator": operator,
        "keep_ratio": keep_ratio if operator == "random" else None, "sigma": sigma,
        "image": str(image) if image is not None else None, "colour_per_channel": colour,
        "n_images": int(x.shape[0]), "seed": seed, "prior_cache_file": prior_file,
        "psnr_full": [float(v) for v in p_full], "ssim_full": [float(v) for v in s_full],
    }  # fmt: skip
    print(
        f"  PSNR full    {float(p_full.mean()):.2f} ± {float(p_full.std() if len(p_full) > 1 else 0):.2f} dB"
    )
    if missing is not None:
        p_miss = psnr_masked(est, x, missing)
        result["psnr_missing"] = [float(v) for v in p_miss]
        print(f"  PSNR missing {float(p_miss.mean()):.2f} dB")
    print(f"  SSIM         {float(s_full.mean()):.4f}")
    if lpips:  # pragma: no cover - needs downloaded weights
        from torchmetrics.image.lpip import LearnedPerceptualImagePatchSimilarity

        metric = LearnedPerceptualImagePatchSimilarity(net_type="vgg", normalize=False)
        rgb = (lambda t: t) if x.shape[1] == 3 else (lambda t: t.repeat(1, 3, 1, 1))
        result["lpips"] = float(metric(rgb(est), rgb(x)))
        print(f"  LPIPS        {result['lpips']:.4f}")
    if out is not None:
        _write_outputs(Path(out), x, y, est, op, colour, result)
        print(f"  wrote {out}/reconstruction.png, measurement.png, comparison.png, result.json")


def _write_outputs(out: Path, x, y, est, op, colour: bool, result: dict) -> None:
    """The files of ``reconstruct --out``: PNGs, the reconstruction array and result.json."""
    import io
    import json

    import numpy as np
    from icml26_shared.results import atomic_write_bytes, atomic_write_text

    from weakprior.image_files import (
        batch_as_channels,
        channels_as_batch,
        comparison_grid,
        measurement_view,
        write_png,
    )

    if colour:  # the operator acts on the channels-as-batch layout
        view = batch_as_channels(
            measurement_view(op, channels_as_batch(y), channels_as_batch(x).shape)
        )
    else:
        view = measurement_view(op, y, tuple(x.shape))
    scale = max(1, 128 // x.shape[-1])
    names = ["reconstruction.png", "measurement.png"]
    if x.shape[0] == 1:
        write_png(out / names[0], est[0], scale)
        write_png(out / names[1], view[0], scale)
    else:
        names = []
        for i in range(x.shape[0]):
            names += [f"reconstruction-{i}.png", f"measurement-{i}.png"]
            write_png(out / names[-2], est[i], scale)
            write_png(out / names[-1], view[i], scale)
    write_png(out / "comparison.png", comparison_grid(x, view, est), scale)
    buf = io.BytesIO()
    np.save(buf, est.numpy().astype(np.float32))
    atomic_write_bytes(out / "reconstruction.npy", buf.getvalue())
    files = {"images": names, "comparison": "comparison.png (columns: truth, measurement, "
             "reconstruction)", "array": "reconstruction.npy (N, C, H, W) in [-1, 1]"}  # fmt: skip
    atomic_write_text(out / "result.json", json.dumps({**result, "files": files}, indent=2))


def correlation(
    domain: Literal["faces", "digits", "natural", "textures"] = "faces",
    max_offset: int = 6,
    n: int = 64,
    image_size: int = 16,
) -> None:
    """Print the local-correlation curve of a domain's images.

    Args:
        domain: Image domain.
        max_offset: Largest pixel offset k.
        n: Number of images.
        image_size: Image side in pixels.
    """
    from weakprior.image_domains import load_domain
    from weakprior.local_correlation import local_correlation

    curve = local_correlation(load_domain(domain, "test", image_size, n=n), max_offset)
    print(f"local correlation of {domain} ({n} images, {image_size}px)")
    for k, v in enumerate(curve.tolist()):
        print(f"  k={k}: {v:.4f}")


def posterior(
    target: Literal["faces", "digits", "natural", "textures"] = "faces",
    prior: Literal["faces", "digits", "natural", "textures"] = "natural",
    keep_ratios: list[float] | None = None,
    sigma: float = 0.01,
    n_images: int = 8,
    image_size: int = 16,
    seed: int = 0,
) -> None:
    """Exact posterior means under a fitted Gaussian prior: PSNR on missing pixels vs keep ratio.

    Args:
        target: Domain of the images.
        prior: Domain the Gaussian prior is fitted on.
        keep_ratios: Keep ratios to sweep (default 0.1 0.3 0.5 0.7 0.9).
        sigma: Measurement noise.
        n_images: Number of images.
        image_size: Image side in pixels.
        seed: Seed of masks and noise.
    """
    import torch

    from weakprior.analytic_priors import GaussianPrior
    from weakprior.image_domains import load_domain
    from weakprior.image_quality import psnr_masked
    from weakprior.operators import RandomInpainting, check_sigma, measure

    check_sigma(sigma)
    keeps = keep_ratios or [0.1, 0.3, 0.5, 0.7, 0.9]
    x = load_domain(target, "test", image_size, n=n_images, seed=seed)
    g = GaussianPrior.fit(load_domain(prior, "train", image_size, seed=seed))
    print(f"target {target}, Gaussian prior fitted on {prior}, sigma {sigma}")
    for k in keeps:
        op = RandomInpainting(tuple(x.shape), k, seed + 11)
        y = measure(op, x, sigma, seed + 12).flatten(1)
        obs = op.observed(tuple(x.shape)).flatten(1) > 0.5
        est = []
        for i in range(x.shape[0]):
            m = torch.eye(x[0].numel(), dtype=torch.float64)[obs[i]]
            est.append(g.posterior(m, y[i : i + 1, obs[i]], sigma)[0].float())
        est = torch.cat(est).view_as(x).clamp(-1, 1)
        p = psnr_masked(est, x, op.missing_pixels(tuple(x.shape)))
        print(f"  keep {k:g}: PSNR missing {float(p.mean()):.2f} dB")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="weakprior.lightning:DDPMPriorModule",
        datamodule_class="weakprior.lightning:ImageDomainDataModule",
        commands={
            "reconstruct": "weakprior.cli:reconstruct",
            "correlation": "weakprior.cli:correlation",
            "posterior": "weakprior.cli:posterior",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``weakprior`` console script."""
    return build_cli().main(args)
