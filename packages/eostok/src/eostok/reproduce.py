"""``eostok reproduce``: two-stage vs end-to-end 1D tokenizer + AR at CPU scale.

Paper: "End-to-end autoregressive image generation with a 1D semantic tokenizer" (EOSTok,
arXiv 2605.00503). One run, same data (upsampled scikit-learn digits), same tokenizer and
prior sizes, same seed and step budget, trains

* **two-stage**: tokenizer (``L_rec + L_vq``) for ``steps``, then the prior on frozen codes
  for ``steps`` (the TiTok/LlamaGen pipeline; the anchor);
* **e2e CE-only**: joint training, the CE gradient reaches the tokenizer, no APR;
* **e2e + APR**: joint, plus the prediction-to-pixels loss;
* **e2e + APR + align**: plus implicit alignment to a package-trained teacher CNN;
* **e2e + APR, CE stops at prior**: the ablation where the CE gradient does not reach the
  tokenizer,

and evaluates each with the metric CNN (a different seed from the teacher). Columns: see
:mod:`eostok.evaluation`. A real-data floor (train vs test digits) anchors the proxy FID.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.results import Report, Table

from .digits_data import load_digits_images
from .eostok_module import EOSTokModule
from .evaluation import evaluate_model, generate
from .feature_net import accuracy, train_feature_net
from .frechet import proxy_fid

VARIANTS = {
    "two-stage": dict(stage="two-stage"),
    "e2e CE-only": dict(stage="joint", apr_weight=0.0, align_weight=0.0),
    "e2e + APR": dict(stage="joint", apr_weight=1.0, align_weight=0.0),
    "e2e + APR + align": dict(stage="joint", apr_weight=1.0, align_weight=0.5),
    # ablation: joint training, but the CE gradient stops at the prior's inputs
    "e2e + APR, CE stops at prior": dict(
        stage="joint", apr_weight=1.0, align_weight=0.0, ar_grad_to_tokenizer=False
    ),
}
COLUMNS = [
    "variant",
    "seed",
    "PSNR",
    "usage",
    "perplexity",
    "AR NLL",
    "rFID",
    "gFID",
    "class acc",
    "time",
]


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    steps: int
    seeds: tuple[int, ...]
    n_samples: int
    feature_steps: int
    batch_size: int = 64
    codebook_size: int = 64
    num_latent_tokens: int = 8
    width: int = 48


# At 250 steps every variant, two-stage included, still sat on the mean-image plateau
# (PSNR 13.6 dB); 1000 steps let the two-stage tokenizer leave it.
QUICK = Setting(steps=1000, seeds=(0,), n_samples=400, feature_steps=250)
FULL = Setting(steps=2500, seeds=(0, 1, 2), n_samples=1000, feature_steps=600)


def train_variant(
    name: str, s: Setting, xtr, ytr, teacher, seed: int
) -> tuple[EOSTokModule, float]:
    """Train one variant with Adam; returns the module and its wall time (s)."""
    cfg = dict(VARIANTS[name])
    stage = cfg.pop("stage")
    torch.manual_seed(seed)
    module = EOSTokModule(
        stage="tokenizer" if stage == "two-stage" else stage,
        codebook_size=s.codebook_size,
        num_latent_tokens=s.num_latent_tokens,
        width=s.width,
        **cfg,
    )
    if module.hparams.align_weight > 0:
        module.set_teacher(teacher)
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    phases = ["tokenizer", "prior"] if stage == "two-stage" else [stage]
    for phase in phases:
        module.set_stage(phase)
        module.train()
        opt = module.configure_optimizers()
        for _ in range(s.steps):
            idx = torch.randint(0, len(xtr), (s.batch_size,), generator=gen)
            loss = module.losses((xtr[idx], ytr[idx]))["loss"]
            opt.zero_grad()
            loss.backward()
            opt.step()
    return module, time.perf_counter() - start


def _grid_figure(images: dict[str, torch.Tensor]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(images), figsize=(3 * len(images), 3.2))
    for ax, (name, imgs) in zip(axes, images.items(), strict=True):
        grid = imgs[:100, 0].reshape(10, 10, *imgs.shape[-2:]).permute(1, 2, 0, 3)
        grid = grid.reshape(10 * imgs.shape[-2], 10 * imgs.shape[-1])
        ax.imshow(grid.numpy(), cmap="gray", vmin=0, vmax=1)
        ax.set_title(name, fontsize=9)
        ax.axis("off")
    return fig


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the variants, evaluate them against the real-data floor, return the report."""
    torch.set_num_threads(1)
    s = QUICK if quick else FULL
    seeds = tuple(seed + k for k in s.seeds)
    xtr, ytr, xte, yte = load_digits_images(seed=seed)
    teacher = train_feature_net(xtr, ytr, seed=seed + 1000, steps=s.feature_steps)
    metric = train_feature_net(xtr, ytr, seed=seed + 2000, steps=s.feature_steps)
    floor = proxy_fid(metric(xtr)[1], metric(xte)[1])
    table = Table(
        "Two-stage vs end-to-end (upsampled digits 16x16, K=8 tokens, C=64 codes)",
        COLUMNS,
        units={"PSNR": "dB", "AR NLL": "nats/token", "time": "s"},
        notes=(
            "PSNR/usage/perplexity/AR NLL on the 449 test digits; rFID = proxy FID of "
            "reconstructions, gFID = proxy FID of class-conditional samples (temperature 1, "
            "no top-k, no guidance), both against the test digits on the metric CNN's "
            f"16-d features; class acc = metric CNN accuracy on the samples. "
            f"Real-data floor (train vs test digits) gFID = {floor:.4g}; metric CNN test "
            f"accuracy {accuracy(metric, xte, yte):.3f}, teacher {accuracy(teacher, xte, yte):.3f}."
        ),
    )
    samples: dict[str, torch.Tensor] = {}
    for sd in seeds:
        for name in VARIANTS:
            module, wall = train_variant(name, s, xtr, ytr, teacher, sd)
            row = evaluate_model(module, xte, yte, metric, s.n_samples, seed=sd)
            table.add_row(variant=name, seed=sd, time=wall, **row)
            if sd == seeds[0]:
                samples[name] = generate(module, torch.arange(100) % 10, seed=sd)
    report = Report("eostok", out)
    report.add_table(table)
    if len(seeds) > 1:
        mean = Table(f"Mean over seeds {list(seeds)}", [c for c in COLUMNS if c != "seed"])
        for name in VARIANTS:
            rows = [r for r in table.rows if r["variant"] == name]
            mean.add_row(
                variant=name,
                **{c: sum(r[c] for r in rows) / len(rows) for c in COLUMNS[2:]},
            )
        report.add_table(mean)
    report.save_figure(_grid_figure(samples), "samples.png")
    report.note(
        f"Each variant: {s.steps} Adam steps (two-stage: {s.steps} tokenizer + {s.steps} prior) of "
        f"batch {s.batch_size}, tokenizer ViT width {s.width}, depth 2, patch 4. Alignment teacher "
        "and metric network are two small CNNs trained here on the training digits with different "
        "seeds (not DINOv2 / Inception). Samples: one column of the figure per variant, rows = classes."
    )
    report.write()
    return report
