"""The paper's comparison: two-stage against end-to-end training of the 1D tokenizer + AR prior.

EOSTok (arXiv 2605.00503) trains the tokenizer and the autoregressive prior jointly, with the
APR loss and implicit alignment keeping the codebook alive. Every variant below is one set of
:class:`~eostok.lightning.EOSTokModule` options, trained through Lightning with the same data,
sizes, seed and step budget (:func:`train_variant`):

* **two-stage**: the tokenizer (``L_rec + L_vq``) for ``steps``, then the prior on frozen codes
  for ``steps`` (the TiTok/LlamaGen pipeline; the anchor); **two-stage, 2D grid**: the same
  with a patch-grid tokenizer (:class:`~eostok.grid_tokenizer.GridTokenizer`);
* **e2e CE-only**, **e2e + APR**, **e2e + APR + align**: joint training, the CE gradient reaches
  the tokenizer;
* anti-collapse treatments of e2e + APR + align: **CE stops at prior**
  (``ar_grad_to_tokenizer=False``), **CE warm-up** (:data:`WARMUP`), **codebook entropy**
  (:data:`ENTROPY`), **CE x0.01** (gradient multiplier from the first step), **APR x5 ... CE
  x0.1** and **tokenizer lr x0.1**.

:func:`comparison_table` trains the alignment teacher and the metric CNN of a dataset
(:mod:`eostok.feature_net`, different seeds), runs the variants (in worker processes when asked;
every run is seeded on its own, so the numbers do not depend on the worker count) and
evaluates each with :func:`~eostok.evaluation.evaluate_model` (columns :data:`METRICS`) against
the real-data floor of the proxy FID. :func:`seed_summary` gives mean ± std over seeds and
:func:`samples_figure` the class-conditional sample grids.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from icml26_shared.results import Table

from .evaluation import evaluate_model, generate
from .feature_net import FeatureCNN, accuracy, train_feature_net
from .frechet import proxy_fid
from .lightning import EOSTokModule, random_batches

# Anti-collapse schedule of the CE gradient to the tokenizer: none for the first 70 % of the
# steps (the tokenizer leaves the mean-image plateau on L_rec + APR (+ align) while the prior
# already trains on its codes), then scaled by 0.1.
WARMUP = dict(ar_grad_warmup_frac=0.7, ar_grad_scale=0.1)
# Codebook-entropy regulariser (MAGVIT-v2 / LFQ style) on the quantizer's soft assignments.
ENTROPY = dict(entropy_weight=0.1, entropy_temperature=0.05)
APR_ALIGN = dict(stage="joint", apr_weight=1.0, align_weight=0.5)
# CE-gradient multipliers of the sweep (the range 0.001-1)
SWEEP_SCALES = (0.001, 0.01, 0.1, 1.0)

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
    # the third-party anchor: vector-quantize-pytorch's EMA quantizer (eostok.library_vq)
    "two-stage, vector-quantize-pytorch": dict(stage="two-stage", quantizer="library"),
    # 1D at the 2D grid's token count (16 tokens on 16x16 digits with patch 4)
    "two-stage, 16 tokens": dict(stage="two-stage", num_latent_tokens=16),
    "e2e + APR + align, CE x0.01, 16 tokens": dict(
        APR_ALIGN, ar_grad_scale=0.01, num_latent_tokens=16
    ),
    # end-to-end training of the 2D-grid tokenizer (is the CE gradient a 1D-token matter?)
    "e2e 2D grid + APR + align": dict(APR_ALIGN, tokenizer_type="2d"),
    "e2e 2D grid + APR + align, CE x0.01": dict(APR_ALIGN, tokenizer_type="2d", ar_grad_scale=0.01),
}
# The sweep of the CE gradient into the tokenizer: scale x STE (through the straight-through
# estimator to the encoder) or codebook only (the prior reads the looked-up codes).
for _scale in SWEEP_SCALES:
    if _scale != 1.0:  # x1 is "e2e + APR + align"
        VARIANTS.setdefault(
            f"e2e + APR + align, CE x{_scale:g}", dict(APR_ALIGN, ar_grad_scale=_scale)
        )
    VARIANTS[f"e2e + APR + align, CE x{_scale:g}, codebook only"] = dict(
        APR_ALIGN, ar_grad_scale=_scale, ar_grad_through_ste=False
    )
# The cells repeated over seeds (the anchor and the best end-to-end treatment).
KEY_VARIANTS = ("two-stage", "e2e + APR + align, CE stops at prior")
METRICS = [
    "PSNR", "SSIM", "usage", "perplexity", "AR NLL", "rFID", "gFID", "precision", "recall",
    "class acc", "time",
]  # fmt: skip
UNITS = {"PSNR": "dB", "AR NLL": "nats/token", "time": "s"}
SETTING_NOTE = (
    "Tokenizer ViT width {width}, depth 2 (encoder and decoder), patch 4 (digits) / 8 (shapes); "
    "AR prior width {width}, depth 2; batch {batch_size}; two-stage = the same number of steps "
    "for the tokenizer, then for the prior. CE warm-up: {warmup:.0%} of the steps without the CE "
    "gradient to the tokenizer, then scaled by {warmup_scale}. Codebook entropy: weight "
    "{entropy}, temperature {entropy_t}, with the full CE gradient. Alignment teacher and metric "
    "network are two small CNNs trained here on the training images with different seeds (not "
    "DINOv2 / Inception). Figures: one panel per variant, rows = classes."
)


def check_variants(names: Sequence[str] | None) -> None:
    """Raise ``ValueError`` naming any of ``names`` that is not a key of :data:`VARIANTS`."""
    unknown = [v for v in names or () if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {unknown}; known: {list(VARIANTS)}")


def setting_note(width: int = 48, batch_size: int = 64) -> str:
    """The paragraph describing the shared model sizes and the treatments' settings."""
    return SETTING_NOTE.format(
        width=width, batch_size=batch_size, warmup=WARMUP["ar_grad_warmup_frac"],
        warmup_scale=WARMUP["ar_grad_scale"], entropy=ENTROPY["entropy_weight"],
        entropy_t=ENTROPY["entropy_temperature"],
    )  # fmt: skip


@dataclass(frozen=True)
class Benchmark:
    """Images of one benchmark dataset and the patch size the models use on it."""

    name: str
    xtr: torch.Tensor
    ytr: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor
    patch_size: int

    @property
    def geometry(self) -> dict:
        """The :class:`~eostok.lightning.EOSTokModule` options fixed by the data."""
        return dict(
            image_size=self.xtr.shape[-1],
            channels=self.xtr.shape[1],
            num_classes=int(self.ytr.max()) + 1,
            patch_size=self.patch_size,
        )


@dataclass(frozen=True)
class ModelSize:
    """Sizes shared by every variant of one comparison."""

    batch_size: int = 64
    codebook_size: int = 64
    num_latent_tokens: int = 8
    width: int = 48


def train_variant(
    name: str,
    xtr: torch.Tensor,
    ytr: torch.Tensor,
    teacher: FeatureCNN | None,
    seed: int,
    steps: int,
    size: ModelSize | None = None,
    geometry: dict | None = None,
    config: dict | None = None,
) -> tuple[EOSTokModule, float]:
    """Train one variant through :class:`~eostok.lightning.EOSTokModule` and a quiet Trainer.

    ``name`` is a key of :data:`VARIANTS` (or ``config`` gives the options directly; its
    ``stage`` is ``"two-stage"``, ``"joint"``, ...). Each stage runs ``steps`` Adam steps on
    batches of ``size.batch_size`` drawn with replacement from ``(xtr, ytr)`` by one generator
    seeded with ``seed`` (two-stage: the tokenizer, then the prior on its frozen codes, with a
    fresh optimiser). ``size``: :class:`ModelSize` (default sizes when ``None``); ``teacher``:
    the frozen alignment network (used when the variant aligns). Returns the module and its
    training wall time (s).
    """
    from icml26_shared.trainer import quiet_trainer

    size = size or ModelSize()
    cfg = dict(VARIANTS[name] if config is None else config)
    stage = cfg.pop("stage")
    frac = cfg.pop("ar_grad_warmup_frac", None)
    if frac is not None:
        cfg["ar_grad_warmup_steps"] = int(frac * steps)
    torch.manual_seed(seed)
    sizes = dict(
        codebook_size=size.codebook_size, num_latent_tokens=size.num_latent_tokens, width=size.width
    )
    options = {**sizes, **(geometry or {}), **cfg}  # a variant's own sizes win
    module = EOSTokModule(stage="tokenizer" if stage == "two-stage" else stage, **options)
    if module.hparams.align_weight > 0 and teacher is not None:
        module.set_teacher(teacher)
    gen = torch.Generator().manual_seed(seed)
    start = time.perf_counter()
    for phase in ["tokenizer", "prior"] if stage == "two-stage" else [stage]:
        module.set_stage(phase)
        trainer = quiet_trainer(max_epochs=1, max_steps=steps, num_sanity_val_steps=0)
        trainer.fit(module, train_dataloaders=random_batches(xtr, ytr, size.batch_size, steps, gen))
    return module, time.perf_counter() - start


def _log(msg: str) -> None:
    print(f"[eostok reproduce] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Run:
    """One ``(variant, seed)`` training and evaluation of a comparison."""

    variant: str
    seed: int
    sample_grid: bool  # also sample the figure's grid (the base seed)
    steps: int
    n_samples: int
    size: ModelSize
    data: Benchmark
    teacher: FeatureCNN
    metric: FeatureCNN


def run_variant(run: Run) -> tuple[dict, torch.Tensor | None]:
    """Train and evaluate one run: its table row and (for the base seed) a sample grid."""
    torch.set_num_threads(1)
    data = run.data
    _log(f"{data.name}: training {run.variant!r} (seed {run.seed}, {run.steps} steps)")
    module, wall = train_variant(
        run.variant, data.xtr, data.ytr, run.teacher, run.seed, run.steps, run.size,
        geometry=data.geometry,
    )  # fmt: skip
    row = evaluate_model(module, data.xte, data.yte, run.metric, run.n_samples, seed=run.seed)
    _log(f"{data.name}: {run.variant!r} seed {run.seed}: " + ", ".join(f"{k} {v:.4g}" for k, v in row.items()))  # fmt: skip
    samples = None
    if run.sample_grid:
        k = data.geometry["num_classes"]
        samples = generate(module, torch.arange(6 * k) % k, seed=run.seed)
    return dict(variant=run.variant, seed=run.seed, time=wall, **row), samples


def run_all(runs: Sequence[Run], workers: int = 1) -> list[tuple[dict, torch.Tensor | None]]:
    """:func:`run_variant` for every run (in ``workers`` processes); results in run order."""
    # longest runs (two stages, most steps) first, so that the pool's workers finish together
    order = sorted(
        range(len(runs)),
        key=lambda i: (VARIANTS[runs[i].variant]["stage"] != "two-stage", -runs[i].steps),
    )
    workers = max(1, min(workers, len(runs)))
    if workers > 1:
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ctx.Pool(workers) as pool:
            done = pool.map(run_variant, [runs[i] for i in order], chunksize=1)
    else:
        done = [run_variant(runs[i]) for i in order]
    results: list = [None] * len(runs)
    for i, res in zip(order, done, strict=True):
        results[i] = res
    return results


def comparison_table(
    title: str,
    data: Benchmark,
    variants: Sequence[str],
    seeds: Sequence[int],
    steps: int,
    n_samples: int,
    feature_steps: int,
    size: ModelSize | None = None,
    workers: int = 1,
    repeated: Sequence[str] = KEY_VARIANTS,
) -> tuple[Table, dict[str, torch.Tensor]]:
    """Train and evaluate ``variants`` at ``seeds[0]``, and the ``repeated`` ones (default
    :data:`KEY_VARIANTS`) at the other seeds, on ``data``; the table and the base seed's sample
    grids per variant.

    The alignment teacher and the metric CNN are trained on ``data``'s training images
    (``feature_steps`` steps, seeds ``seeds[0] + 1000`` and ``+ 2000``); the table's note gives
    the real-data floor of the proxy FID and both networks' test accuracy. The process runs
    torch on one thread from here on (as every worker does): forked workers of a process whose
    thread pool already ran with several threads do not give the same numbers.
    """
    check_variants([*variants, *repeated])
    torch.set_num_threads(1)
    size = size or ModelSize()
    base = seeds[0]
    teacher = train_feature_net(data.xtr, data.ytr, seed=base + 1000, steps=feature_steps)
    metric = train_feature_net(data.xtr, data.ytr, seed=base + 2000, steps=feature_steps)
    floor = proxy_fid(metric(data.xtr)[1], metric(data.xte)[1])
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
    pairs = [(name, base) for name in variants]
    pairs += [(name, sd) for sd in seeds[1:] for name in repeated]
    runs = [
        Run(name, sd, sd == base, steps, n_samples, size, data, teacher, metric)
        for name, sd in pairs
    ]
    samples: dict[str, torch.Tensor] = {}
    for run, (row, grid) in zip(runs, run_all(runs, workers), strict=True):
        table.add_row(**row)
        if grid is not None:
            samples[run.variant] = grid
    return table, samples


def seed_summary(table: Table, names: Sequence[str], seeds: Sequence[int]) -> Table:
    """Mean and (sample) standard deviation over ``seeds`` of the rows of ``names``.

    >>> t = Table("t", ["variant", "seed", *METRICS])
    >>> for sd, v in ((0, 1.0), (1, 3.0)):
    ...     t.add_row(variant="a", seed=sd, **dict.fromkeys(METRICS, v))
    >>> row = seed_summary(t, ["a"], [0, 1]).rows[0]
    >>> row["n"], row["gFID"]
    (2, '2 ± 1.4')
    """
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


def samples_figure(images: dict[str, torch.Tensor], rows: int, title: str):
    """One panel per variant: ``rows`` classes x ``n // rows`` samples (labels ``i % rows``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(images), figsize=(2.6 * len(images), 3.2), squeeze=False)
    for ax, (name, imgs) in zip(axes[0], images.items(), strict=True):
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
