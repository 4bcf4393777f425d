"""``eostok reproduce``: two-stage vs end-to-end 1D tokenizer + AR at CPU scale.

Paper: "End-to-end autoregressive image generation with a 1D semantic tokenizer" (EOSTok,
arXiv 2605.00503). One run, same data, same tokenizer and prior sizes, same seed and step
budget, trains

* **two-stage**: 1D tokenizer (``L_rec + L_vq``) for ``steps``, then the prior on frozen codes
  for ``steps`` (the TiTok/LlamaGen pipeline; the anchor);
* **two-stage, 2D grid**: the same with a patch-grid tokenizer (one token per patch, raster
  AR; VQGAN/LlamaGen-style), equal ViT sizes (:class:`~eostok.grid_tokenizer.GridTokenizer`);
* **e2e CE-only**: joint training, the CE gradient reaches the tokenizer, no APR;
* **e2e + APR**: joint, plus the prediction-to-pixels loss;
* **e2e + APR + align**: plus implicit alignment to a package-trained teacher CNN;
* three anti-collapse treatments of e2e + APR + align: **CE stops at prior** (the CE
  gradient never reaches the tokenizer, as REPA-E stops the diffusion loss at its VAE),
  **CE warm-up** (:data:`WARMUP`: the CE gradient reaches the tokenizer only after a warm-up,
  scaled down; :meth:`~eostok.eostok_module.EOSTokModule.ar_tokenizer_grad_scale`) and
  **codebook entropy** (:data:`ENTROPY`, full CE gradient;
  :meth:`~eostok.quantizer.CosineVectorQuantizer.entropy_penalty`),

on the upsampled scikit-learn digits (16x16, 10 classes), and (full run only) the anchor
against the working end-to-end treatment on the procedural shapes (32x32 RGB, 18 classes,
:mod:`eostok.shapes_data`). The key cells (:data:`KEY_VARIANTS`) are repeated over three
seeds. Each model is evaluated with the metric CNN (a different seed
from the alignment teacher); columns: see :mod:`eostok.evaluation`. A real-data floor (train
vs test images) anchors the proxy FID.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
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
from .shapes_data import load_shapes_images

# Anti-collapse schedule of the CE gradient to the tokenizer (configurable in the module):
# none for the first 70 % of the steps (the tokenizer leaves the mean-image plateau on
# L_rec + APR (+ align) while the prior already trains on its codes), then scaled by 0.1.
WARMUP = dict(ar_grad_warmup_frac=0.7, ar_grad_scale=0.1)
# Codebook-entropy regulariser (MAGVIT-v2 / LFQ style) on the quantizer's soft assignments.
ENTROPY = dict(entropy_weight=0.1, entropy_temperature=0.05)
APR_ALIGN = dict(stage="joint", apr_weight=1.0, align_weight=0.5)

VARIANTS = {
    "two-stage": dict(stage="two-stage"),
    "two-stage, 2D grid": dict(stage="two-stage", tokenizer_type="2d"),
    "e2e CE-only": dict(stage="joint", apr_weight=0.0, align_weight=0.0),
    "e2e + APR": dict(stage="joint", apr_weight=1.0, align_weight=0.0),
    "e2e + APR + align": dict(APR_ALIGN),
    # the CE gradient stops at the prior's inputs (joint training otherwise)
    "e2e + APR + align, CE stops at prior": dict(APR_ALIGN, ar_grad_to_tokenizer=False),
    "e2e + APR + align, CE warm-up": dict(APR_ALIGN, **WARMUP),
    "e2e + APR + align, codebook entropy": dict(APR_ALIGN, **ENTROPY),
    # gradient multiplier on the CE gradient entering the tokenizer, from the first step
    "e2e + APR + align, CE x0.01": dict(APR_ALIGN, ar_grad_scale=0.01),
    # the paper's remedy made dominant: APR weight 5, CE gradient scaled by 0.1
    "e2e + APR x5 + align, CE x0.1": dict(APR_ALIGN, apr_weight=5.0, ar_grad_scale=0.1),
    # a slower tokenizer (lr 1e-4 against the prior's 1e-3), full CE gradient
    "e2e + APR + align, tokenizer lr x0.1": dict(APR_ALIGN, tokenizer_lr=1e-4),
}
KEY_VARIANTS = ("two-stage", "e2e + APR + align, CE stops at prior")
# The full run trains past the mean-image plateau; to fit a shared 2-core CPU it runs the
# anchor, the collapse reference and the treatments that keep the codebook alive at 250 steps.
FULL_DIGITS_VARIANTS = (
    "two-stage",
    "e2e + APR + align",
    "e2e + APR + align, CE stops at prior",
    "e2e + APR + align, CE x0.01",
    "e2e + APR x5 + align, CE x0.1",
    "e2e + APR + align, tokenizer lr x0.1",
)
SHAPES_VARIANTS = ("two-stage", "e2e + APR + align", "e2e + APR + align, CE stops at prior")
METRICS = [
    "PSNR",
    "SSIM",
    "usage",
    "perplexity",
    "AR NLL",
    "rFID",
    "gFID",
    "precision",
    "recall",
    "class acc",
    "time",
]
UNITS = {"PSNR": "dB", "AR NLL": "nats/token", "time": "s"}


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    steps: int
    key_seeds: tuple[int, ...]
    n_samples: int
    feature_steps: int
    shapes_steps: int  # 0: no shapes table
    digits_variants: tuple[str, ...] | None = None  # None: every variant
    shapes_n_train: int = 3600
    batch_size: int = 64
    codebook_size: int = 64
    num_latent_tokens: int = 8
    width: int = 48


# The ViT tokenizer sits on the mean-image plateau (PSNR 13.6 dB) for its first ~500 steps
# (measured; a continuous ViT autoencoder of the same size too). The quick run (120 steps)
# therefore shows the codebook statistics (collapse or not) but no reconstruction or
# generation differences; 1000 steps (full run) let the two-stage tokenizer leave the plateau.
QUICK = Setting(steps=120, key_seeds=(0, 1, 2), n_samples=200, feature_steps=100,
                shapes_steps=0)  # fmt: skip
FULL = Setting(steps=1000, key_seeds=(0,), n_samples=400, feature_steps=250,
               shapes_steps=600, digits_variants=FULL_DIGITS_VARIANTS)  # fmt: skip


@dataclass(frozen=True)
class Dataset:
    """Images and the model geometry of one benchmark dataset."""

    name: str
    xtr: torch.Tensor
    ytr: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor
    patch_size: int

    @property
    def geometry(self) -> dict:
        return dict(
            image_size=self.xtr.shape[-1],
            channels=self.xtr.shape[1],
            num_classes=int(self.ytr.max()) + 1,
            patch_size=self.patch_size,
        )


def train_variant(
    name: str,
    s: Setting,
    xtr,
    ytr,
    teacher,
    seed: int,
    config: dict | None = None,
    steps: int | None = None,
    geometry: dict | None = None,
) -> tuple[EOSTokModule, float]:
    """Train one variant with Adam; returns the module and its wall time (s)."""
    cfg = dict(VARIANTS[name] if config is None else config)
    stage = cfg.pop("stage")
    steps = s.steps if steps is None else steps
    frac = cfg.pop("ar_grad_warmup_frac", None)
    if frac is not None:
        cfg["ar_grad_warmup_steps"] = int(frac * steps)
    torch.manual_seed(seed)
    module = EOSTokModule(
        stage="tokenizer" if stage == "two-stage" else stage,
        codebook_size=s.codebook_size,
        num_latent_tokens=s.num_latent_tokens,
        width=s.width,
        **(geometry or {}),
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
        for step in range(steps):
            idx = torch.randint(0, len(xtr), (s.batch_size,), generator=gen)
            loss = module.losses((xtr[idx], ytr[idx]), step=step)["loss"]
            opt.zero_grad()
            loss.backward()
            opt.step()
    return module, time.perf_counter() - start


def _grid_figure(images: dict[str, torch.Tensor], rows: int, title: str):
    """One panel per variant: ``rows`` classes x ``n // rows`` samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(images), figsize=(2.6 * len(images), 3.2))
    for ax, (name, imgs) in zip(axes, images.items(), strict=True):
        n, c, h, w = imgs.shape
        cols = n // rows
        grid = imgs[: rows * cols].reshape(cols, rows, c, h, w)  # sample-major: label = i % rows
        grid = grid.permute(1, 3, 0, 4, 2).reshape(rows * h, cols * w, c)
        if c == 1:
            ax.imshow(grid[..., 0].numpy(), cmap="gray", vmin=0, vmax=1)
        else:
            ax.imshow(grid.numpy())
        ax.set_title(name, fontsize=8)
        ax.axis("off")
    fig.suptitle(title, fontsize=9)
    return fig


def _log(msg: str) -> None:
    print(f"[eostok reproduce] {msg}", file=sys.stderr, flush=True)


def _job(args: tuple) -> tuple[dict, torch.Tensor | None]:
    """One ``(variant, seed)`` run: train, evaluate, and (for the base seed) sample a grid."""
    name, sd, base_seed, s, steps, data, teacher, metric = args
    torch.set_num_threads(1)
    _log(f"{data.name}: training {name!r} (seed {sd}, {steps} steps)")
    module, wall = train_variant(
        name, s, data.xtr, data.ytr, teacher, sd, steps=steps, geometry=data.geometry
    )
    row = evaluate_model(module, data.xte, data.yte, metric, s.n_samples, seed=sd)
    _log(f"{data.name}: {name!r} seed {sd}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()))
    samples = None
    if sd == base_seed:
        k = data.geometry["num_classes"]
        samples = generate(module, torch.arange(6 * k) % k, seed=sd)
    return dict(variant=name, seed=sd, time=wall, **row), samples


def reproduce_tables() -> tuple[str, ...]:
    """Tables to run: ``EOSTOK_REPRODUCE_TABLES`` (comma-separated ``digits``/``shapes``) or both.

    The shapes table exists in the full run only; a subset lets a run on a busy machine finish.
    """
    env = os.environ.get("EOSTOK_REPRODUCE_TABLES", "digits,shapes")
    names = tuple(t.strip() for t in env.split(",") if t.strip())
    if not names or any(t not in ("digits", "shapes") for t in names):
        raise ValueError(f"EOSTOK_REPRODUCE_TABLES must list digits and/or shapes, got {env!r}")
    return names


def reproduce_workers() -> int:
    """Worker processes for the independent runs: ``EOSTOK_REPRODUCE_WORKERS`` or min(2, CPUs).

    Every run is seeded on its own, so the numbers do not depend on the worker count.
    """
    env = os.environ.get("EOSTOK_REPRODUCE_WORKERS")
    if env is not None:
        if not env.isdigit() or int(env) < 1:
            raise ValueError(f"EOSTOK_REPRODUCE_WORKERS must be a positive integer, got {env!r}")
        return int(env)
    return max(1, min(2, os.cpu_count() or 1))


def _prepare_table(
    title: str,
    data: Dataset,
    variants: list[tuple[str, int]],
    s: Setting,
    steps: int,
    seed: int,
) -> tuple[Table, list[tuple]]:
    """Train the teacher and metric CNNs on ``data``; the empty table and its jobs."""
    teacher = train_feature_net(data.xtr, data.ytr, seed=seed + 1000, steps=s.feature_steps)
    metric = train_feature_net(data.xtr, data.ytr, seed=seed + 2000, steps=s.feature_steps)
    f_tr, f_te = metric(data.xtr)[1], metric(data.xte)[1]
    floor = proxy_fid(f_tr, f_te)
    table = Table(
        title,
        ["variant", "seed", *METRICS],
        units=UNITS,
        notes=(
            f"PSNR/SSIM/usage/perplexity/AR NLL on the {len(data.xte)} test images; rFID = proxy "
            "FID of reconstructions, gFID = proxy FID of class-conditional samples (temperature "
            "1, no top-k, no guidance), precision/recall (k=3) of the samples, all against the "
            "test images on the metric CNN's 16-d features; class acc = metric CNN accuracy on "
            f"the samples. Real-data floor (train vs test images): gFID = {floor:.4g}. Metric "
            f"CNN test accuracy {accuracy(metric, data.xte, data.yte):.3f}, alignment teacher "
            f"{accuracy(teacher, data.xte, data.yte):.3f}. {steps} Adam steps per stage."
        ),
    )
    jobs = [(name, sd, seed, s, steps, data, teacher, metric) for name, sd in variants]
    return table, jobs


def _run_jobs(jobs: list[tuple]) -> list[tuple[dict, torch.Tensor | None]]:
    """Run every job (in worker processes when there are several); results in job order."""
    # longest runs (two stages, most steps) first, so that the pool's workers finish together
    order = sorted(
        range(len(jobs)),
        key=lambda i: (VARIANTS[jobs[i][0]]["stage"] != "two-stage", -jobs[i][4]),
    )
    workers = min(reproduce_workers(), len(jobs))
    if workers > 1:
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ctx.Pool(workers) as pool:
            done = pool.map(_job, [jobs[i] for i in order], chunksize=1)
    else:
        done = [_job(jobs[i]) for i in order]
    results: list = [None] * len(jobs)
    for i, res in zip(order, done, strict=True):
        results[i] = res
    return results


def _fill_table(
    table: Table, jobs: list[tuple], results: list[tuple[dict, torch.Tensor | None]]
) -> dict[str, torch.Tensor]:
    """Add the rows of ``results`` to ``table``; the sample grids of the base seed."""
    samples: dict[str, torch.Tensor] = {}
    for job, (row, grid) in zip(jobs, results, strict=True):
        table.add_row(**row)
        if grid is not None:
            samples[job[0]] = grid
    return samples


def _seed_summary(table: Table, names: tuple[str, ...], seeds: tuple[int, ...]) -> Table:
    """Mean and standard deviation over seeds of the key cells."""
    out = Table(
        f"Key cells: mean ± std over seeds {list(seeds)}",
        ["variant", "n", *[c for c in METRICS if c != "time"]],
        units={k: v for k, v in UNITS.items() if k != "time"},
    )
    for name in names:
        rows = [r for r in table.rows if r["variant"] == name and r["seed"] in seeds]
        cells = {}
        for c in METRICS:
            if c == "time":
                continue
            v = torch.tensor([float(r[c]) for r in rows], dtype=torch.float64)
            sd = float(v.std()) if len(v) > 1 else 0.0
            cells[c] = f"{float(v.mean()):.4g} ± {sd:.2g}"
        out.add_row(variant=name, n=len(rows), **cells)
    return out


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the variants, evaluate them against the real-data floor, return the report."""
    torch.set_num_threads(1)
    s = QUICK if quick else FULL
    key_seeds = tuple(seed + k for k in s.key_seeds)
    report = Report("eostok", out)

    selected = reproduce_tables()
    tables: dict[str, tuple[Table, list[tuple]]] = {}
    if "digits" in selected:
        digits = Dataset("digits", *load_digits_images(seed=seed), patch_size=4)
        runs = [(name, seed) for name in (s.digits_variants or VARIANTS)]
        runs += [(name, sd) for sd in key_seeds if sd != seed for name in KEY_VARIANTS]
        tables["digits"] = _prepare_table(
            f"Two-stage vs end-to-end: upsampled digits 16x16, K={s.num_latent_tokens} tokens "
            f"(2D grid: 16), C={s.codebook_size} codes",
            digits, runs, s, s.steps, seed,
        )  # fmt: skip
    if s.shapes_steps > 0 and "shapes" in selected:
        n_test = max(18, s.shapes_n_train // 4)
        shapes = Dataset(
            "shapes", *load_shapes_images(s.shapes_n_train, n_test, 32, seed=seed), patch_size=8
        )
        tables["shapes"] = _prepare_table(
            f"Shapes 32x32 RGB (18 classes), K={s.num_latent_tokens} tokens, "
            f"C={s.codebook_size} codes",
            shapes, [(name, seed) for name in SHAPES_VARIANTS], s, s.shapes_steps, seed,
        )  # fmt: skip
    # one pool for the jobs of every table
    results = _run_jobs([job for _, jobs in tables.values() for job in jobs])
    for name, (table, jobs) in tables.items():
        samples = _fill_table(table, jobs, results[: len(jobs)])
        results = results[len(jobs) :]
        report.add_table(table)
        if name == "digits" and len(key_seeds) > 1:
            report.add_table(_seed_summary(table, KEY_VARIANTS, key_seeds))
        data = digits if name == "digits" else shapes
        fig = _grid_figure(samples, data.geometry["num_classes"], f"{name}: rows = classes")
        report.save_figure(fig, f"samples_{name}.png")
    report.note(
        f"Tokenizer ViT width {s.width}, depth 2 (encoder and decoder), patch 4 (digits) / 8 "
        f"(shapes); AR prior width {s.width}, depth 2; batch {s.batch_size}; two-stage = the "
        "same number of steps for the tokenizer, then for the prior. CE warm-up: "
        f"{WARMUP['ar_grad_warmup_frac']:.0%} of the steps without the CE gradient to the "
        f"tokenizer, then scaled by {WARMUP['ar_grad_scale']}. Codebook entropy: weight "
        f"{ENTROPY['entropy_weight']}, temperature {ENTROPY['entropy_temperature']}, with the "
        "full CE gradient. Alignment teacher and metric "
        "network are two small CNNs trained here on the training images with different seeds "
        "(not DINOv2 / Inception). Figures: one panel per variant, rows = classes."
    )
    report.write()
    return report
