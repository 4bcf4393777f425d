"""Evaluation of a trained tokenizer + prior on held-out digits.

Columns (per variant): reconstruction PSNR (:func:`psnr`) and SSIM (torchmetrics'
``structural_similarity_index_measure``, Gaussian window 11, sigma 1.5, at the image
resolution), codebook usage and perplexity
(:func:`~eostok.quantizer.codebook_usage`), AR NLL per token, proxy FID of class-conditional
samples against the real test images on the *metric* CNN's features
(:func:`~eostok.frechet.proxy_fid`), improved precision / recall on the same features
(:func:`~eostok.precision_recall.precision_recall`) and the metric CNN's accuracy on the
samples (generated-class accuracy): :func:`evaluate_model`.
"""

from __future__ import annotations

import torch
from torchmetrics.functional.image import structural_similarity_index_measure

from .ar_prior import sample
from .feature_net import FeatureCNN
from .frechet import proxy_fid
from .lightning import EOSTokModule
from .precision_recall import precision_recall
from .quantizer import codebook_usage


def ssim(x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean SSIM of images ``(B, C, H, W)`` in [0, 1] (``x`` clamped), data range 1.

    >>> x = torch.rand(2, 1, 16, 16)
    >>> round(ssim(x, x), 6)
    1.0
    """
    k = min(11, x.shape[-1] - (1 - x.shape[-1] % 2))  # odd window no larger than the image
    return float(
        structural_similarity_index_measure(x.clamp(0, 1), y, data_range=1.0, kernel_size=k)
    )


def psnr(x: torch.Tensor, y: torch.Tensor) -> float:
    """PSNR in dB of images in [0, 1]: ``10 log10(1 / MSE)``.

    >>> round(psnr(torch.zeros(1, 4), torch.full((1, 4), 0.1)), 3)
    20.0
    """
    mse = float(((x.clamp(0, 1) - y) ** 2).mean())
    return 10.0 * torch.log10(torch.tensor(1.0 / max(mse, 1e-12))).item()


@torch.no_grad()
def generate(
    module: EOSTokModule,
    labels: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> torch.Tensor:
    """Class-conditional images ``(B, C, H, W)`` in [0, 1] (no guidance)."""
    module.eval()
    g = torch.Generator().manual_seed(seed)
    codes = sample(module.prior, module.tokenizer.quantizer.codebook, labels, temperature, top_k, g)
    return module.tokenizer.decode(codes=codes)[0].clamp(0, 1)


@torch.no_grad()
def evaluate_model(
    module: EOSTokModule,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    metric_net: FeatureCNN,
    n_samples: int = 500,
    seed: int = 0,
) -> dict[str, float]:
    """All metric columns of one trained variant."""
    module.eval()
    z_q, codes, _ = module.tokenizer.encode(x_test)
    recon = module.tokenizer.decode(embeddings=z_q)[0]
    usage, perplexity = codebook_usage(codes, module.tokenizer.quantizer.codebook_size)
    nll, _ = module.prior.nll(z_q, codes, y_test)
    labels = torch.arange(n_samples) % module.prior.num_classes
    gen = generate(module, labels, seed=seed)
    _, f_gen, logit_gen = metric_net(gen)
    _, f_real, _ = metric_net(x_test)
    _, f_rec, _ = metric_net(recon.clamp(0, 1))
    precision, recall = precision_recall(f_real, f_gen)
    return {
        "PSNR": psnr(recon, x_test),
        "SSIM": ssim(recon, x_test),
        "usage": usage,
        "perplexity": perplexity,
        "AR NLL": float(nll),
        "rFID": proxy_fid(f_rec, f_real),
        "gFID": proxy_fid(f_gen, f_real),
        "precision": precision,
        "recall": recall,
        "class acc": float((logit_gen.argmax(-1) == labels).float().mean()),
    }
