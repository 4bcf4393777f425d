"""``weakprior reproduce``: matched vs mismatched diffusion priors across measurement regimes.

Paper: "Weak diffusion priors for inverse problems", Jia, Yuan, Liu, Shen, Wang, ICML 2026
(arXiv 2601.22443). One run, all offline, on CPU, at 24 x 24 px (the issue's 24-32 px), both
``--quick`` and the full grid:

1. trains small DDPM priors -- ``diffusers.UNet2DModel`` eps-networks,
   :func:`weakprior.prior_module.train_prior` -- on the faces, digits, natural-photo and texture
   domains, plus an under-trained copy of the faces prior (5 % of the steps), cached on disk by
   configuration hash (the quick and full runs share the faces, natural and under-trained priors);
2. for every target domain and operator -- random inpainting at several keep ratios, a 50 % box,
   Gaussian blur, x2 super-resolution, all with ``sigma = 0.01`` noise -- reconstructs the same
   held-out images with the paper's solver (Adam on the sphere + hold-out early stopping through
   a 3-step DDIM) under every prior, and with the anchors in the same run: DMPlug (plain Adam +
   windowed-variance stopping) and DPS with the matched prior, and TV (no learned prior);
3. reports PSNR on the missing pixels (inpainting) or the whole image (blur, SR), SSIM, the
   matched-minus-mismatched gap per operator, the closed-form Gaussian-prior version of the same
   experiment (exact posterior means; the Bayesian-consistency picture), and the local-correlation
   curves of data and prior samples with the mean distance from a missing pixel to an observed one.

The inpainting problems of one target (every keep ratio and the box) are stacked into one batch
(:func:`weakprior.operators.stack_inpainting`) for the per-sample solvers (weak, DMPlug, DPS):
every sample has its own mask, noise ``z``, sphere and stopper, so this only saves time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .analytic_priors import GaussianPrior
from .ddim import FewStepDDIM, spaced_timesteps
from .deepinv_anchor import DeepinvDPSSolver, deepinv_available
from .dps import DPSSolver
from .image_domains import load_domain
from .image_quality import lpips_vgg, psnr, psnr_masked, ssim, ssim_masked
from .local_correlation import distance_to_observed, local_correlation
from .noise_optimisation import NoiseOptimisationSolver
from .operators import (
    BoxInpainting,
    Downsample,
    GaussianBlur,
    MaskInpainting,
    RandomInpainting,
    measure,
    stack_inpainting,
)
from .prior_module import cache_dir, train_prior
from .total_variation import TVSolver


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    targets: tuple[str, ...]
    priors: tuple[str, ...]  # domains; "under-trained" = faces prior at 5 % of the steps
    keeps: tuple[float, ...]
    extra_ops: tuple[str, ...]  # among "box", "blur", "sr2"
    n_images: int
    prior_steps: int
    iterations: int
    dps_steps: int
    image_size: int = 24
    width: int = 16
    backbone: str = "diffusers"  # UNet2DModel (prior_module.diffusers_unet); "tiny" = TinyUNet
    batch_size: int = 32
    lr: float = 0.05
    best_k: int = 20
    sigma: float = 0.01
    tv_iterations: int = 150
    deepinv_weight: float = 30.0
    anchors: tuple[str, ...] = field(default=("dmplug", "dps", "dps-deepinv", "tv"))


QUICK = Setting(
    targets=("faces",),
    priors=("faces", "natural", "under-trained"),
    keeps=(0.2, 0.5, 0.8),
    extra_ops=("box", "blur", "sr2"),
    n_images=6,
    prior_steps=400,
    iterations=60,
    dps_steps=100,
    best_k=10,
)
FULL = Setting(
    targets=("faces", "digits"),
    priors=("faces", "digits", "natural", "textures", "under-trained"),
    keeps=(0.1, 0.3, 0.5, 0.7, 0.9),
    extra_ops=("box", "blur", "sr2"),
    n_images=6,
    prior_steps=400,  # the same priors as --quick (shared cache)
    iterations=60,
    dps_steps=100,
    best_k=10,
)


def _operator(name: str, shape: tuple[int, ...], seed: int):
    if name.startswith("keep"):
        return RandomInpainting(shape, float(name[4:]), seed=seed)
    if name == "box":
        return BoxInpainting(shape, 0.5)
    if name == "blur":
        return GaussianBlur(5, 1.0)
    if name == "sr2":
        return Downsample(2)
    raise ValueError(name)


def _op_names(s: Setting) -> list[str]:
    return [f"keep{k:g}" for k in s.keeps] + list(s.extra_ops)


def _score(x_hat, x, op) -> dict[str, torch.Tensor]:
    """PSNR / SSIM on the whole image and on the missing pixels (= whole image for blur, SR)."""
    missing = op.missing_pixels(tuple(x.shape))
    full = {"psnr_full": psnr(x_hat, x), "ssim_full": ssim(x_hat, x)}
    if missing is None:
        return {**full, "psnr_missing": full["psnr_full"], "ssim_missing": full["ssim_full"]}
    return {**full, "psnr_missing": psnr_masked(x_hat, x, missing),
            "ssim_missing": ssim_masked(x_hat, x, missing)}  # fmt: skip


def _fmt(v: torch.Tensor) -> str:
    return f"{float(v.mean()):.2f} ± {float(v.std()):.2f}"


def _train_priors(s: Setting, seed: int, cache: Path) -> dict:
    priors = {}
    names = [p for p in s.priors if p != "under-trained"]
    for name in progress(names, desc="priors", total=len(names)):
        priors[name] = train_prior(name, s.prior_steps, s.image_size, s.width, s.batch_size,
                                   seed=seed, backbone=s.backbone, cache=cache)  # fmt: skip
    if "under-trained" in s.priors:
        steps = max(1, s.prior_steps // 20)  # 5 % of the steps
        priors["under-trained"] = train_prior("faces", steps, s.image_size, s.width,
                                              s.batch_size, seed=seed, backbone=s.backbone,
                                              cache=cache)  # fmt: skip
    for m in priors.values():
        m.requires_grad_(False)
    return priors


def _gaussian_table(s: Setting, seed: int) -> Table:
    """Closed-form version: exact posterior means under matched / mismatched Gaussian priors."""
    ops = [o for o in _op_names(s) if o != "blur" and o != "sr2"]
    table = Table(
        "Exact Gaussian priors: PSNR (dB) of the posterior mean on missing pixels",
        ["target", "Gaussian prior fitted on", *ops],
        notes=(
            "Gaussian priors N(mu, S) fitted to each domain's training images; the posterior mean "
            "mu + S A^T (A S A^T + s^2 I)^-1 (y - A mu) is exact, so this isolates the prior from the "
            "solver. The same images, masks and noise as the diffusion table."
        ),
    )
    fitted = {d: GaussianPrior.fit(load_domain(d, "train", s.image_size, seed=seed))
              for d in dict.fromkeys((*s.targets, *[p for p in s.priors if p != "under-trained"]))}  # fmt: skip
    for target in s.targets:
        x = load_domain(target, "test", s.image_size, n=s.n_images, seed=seed)
        for name, prior in fitted.items():
            row = {"target": target, "Gaussian prior fitted on": name}
            for op_name in ops:
                op = _operator(op_name, tuple(x.shape), seed + 11)
                y = measure(op, x, s.sigma, seed + 12)
                flat_y = y.flatten(1).double()
                vals = []
                for i in range(x.shape[0]):
                    keep = op.observed(tuple(x.shape))[i].flatten() > 0.5
                    matrix = torch.eye(x[0].numel(), dtype=torch.float64)[keep]
                    mean, _ = prior.posterior(matrix, flat_y[i : i + 1, keep], s.sigma)
                    vals.append(mean.float().clamp(-1, 1).view(1, *x.shape[1:]))
                est = torch.cat(vals)
                row[op_name] = _fmt(psnr_masked(est, x, op.missing_pixels(tuple(x.shape))))
            table.add_row(**row)
    return table


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train the priors, solve every inverse problem with every solver, return the report."""
    torch.set_num_threads(1)
    start = time.time()
    s = QUICK if quick else FULL
    report = Report("weakprior", out)
    cache = cache_dir() / "priors"
    ops = _op_names(s)
    priors = _train_priors(s, seed, cache)

    anchors = list(s.anchors)
    skipped = []
    if "dps-deepinv" in anchors and not deepinv_available():
        anchors.remove("dps-deepinv")
        skipped.append(
            "dps-deepinv skipped: deepinv is not installed (pip install 'weakprior[bench]')."
        )
    try:
        lpips = lpips_vgg()
    except RuntimeError as err:  # weights not cached: say so, never download
        lpips = None
        skipped.append(f"LPIPS not computed: {err}")
    cols = ["target", "solver", "prior", *ops]
    lpips_table = Table("LPIPS-VGG (whole image), mean over images (lower is better)", cols)
    main = Table(
        "PSNR (dB) on missing pixels (inpainting) / whole image (blur, SR): mean ± std over images",
        cols,
        notes=(
            f"{s.n_images} held-out {s.image_size}x{s.image_size} images per target, noise sigma = "
            f"{s.sigma} on [-1, 1]. weak = Adam on the sphere + hold-out early stopping through a "
            f"3-step DDIM (666, 333, 0) with x0 clipping, {s.iterations} iterations, lr {s.lr}, "
            f"best-k {s.best_k}; DMPlug = plain Adam + windowed-variance stopping (window 10), same "
            f"generator and iterations; DPS = {s.dps_steps} respaced DDPM steps, zeta 0.5 "
            "(inpainting) / 0.3 (blur, SR); dps-deepinv = deepinv's own DPS sampler "
            f"(deepinv.sampling.DPS, VP schedule, {s.dps_steps} DDPM steps, guidance weight "
            f"{s.deepinv_weight:g}) with deepinv's physics and the same prior wrapped as its "
            "denoiser; TV = total-variation least squares, weight chosen on held-out pixels. "
            f"Priors: {_backbone_name(s)} trained {s.prior_steps} Adam steps (batch "
            f"{s.batch_size}); under-trained = the faces prior after "
            f"{max(1, s.prior_steps // 20)} steps."
        ),
    )
    full_table = Table("PSNR (dB) on the whole image: mean ± std over images", cols)
    ssim_table = Table("SSIM (whole image), mean over images", cols)
    ssim_miss = Table(
        "SSIM on missing pixels (inpainting; whole image for blur, SR), mean over images",
        cols,
        notes="Mean of the local SSIM map (Gaussian window 7) over the missing pixels.",
    )
    gap = Table(
        "Gap: matched-prior PSNR minus mismatched-prior PSNR (weak solver, missing pixels), dB",
        ["target", "mismatched prior", *ops],
    )
    results: dict[tuple[str, str, str], dict[str, float]] = {}
    jobs = []
    for target in s.targets:
        for prior in s.priors:
            jobs.append((target, "weak", prior))
        for anchor in anchors:
            jobs.append((target, anchor, target if anchor != "tv" else "none"))
    data = {t: load_domain(t, "test", s.image_size, n=s.n_images, seed=seed) for t in s.targets}
    for target, solver_name, prior in progress(jobs, desc="solvers", total=len(jobs)):
        x = data[target]
        base = {"target": target, "solver": solver_name, "prior": prior}
        rows = {k: dict(base) for k in ("main", "full", "ssim", "ssim_miss", "lpips")}
        estimates = _solve_all(s, solver_name, priors.get(prior), x, ops, seed)
        for op_name in ops:
            op = _operator(op_name, tuple(x.shape), seed + 11)
            x_hat = estimates[op_name]
            m = _score(x_hat.clamp(-1, 1), x, op)
            if lpips is not None:  # pragma: no cover - needs cached VGG weights
                rows["lpips"][op_name] = float(lpips(x_hat, x).mean())
            rows["main"][op_name] = _fmt(m["psnr_missing"])
            rows["full"][op_name] = _fmt(m["psnr_full"])
            rows["ssim"][op_name] = float(m["ssim_full"].mean())
            rows["ssim_miss"][op_name] = float(m["ssim_missing"].mean())
            results.setdefault((target, solver_name, prior), {})[op_name] = float(
                m["psnr_missing"].mean()
            )
        for key, table in (("main", main), ("full", full_table), ("ssim", ssim_table),
                           ("ssim_miss", ssim_miss), ("lpips", lpips_table)):  # fmt: skip
            if key != "lpips" or lpips is not None:
                table.add_row(**rows[key])
    for target in s.targets:
        matched = results.get((target, "weak", target))
        if matched is None:
            continue
        for prior in s.priors:
            if prior == target:
                continue
            other = results[(target, "weak", prior)]
            gap.add_row(target=target, **{"mismatched prior": prior},
                        **{o: matched[o] - other[o] for o in ops})  # fmt: skip
    gauss = _gaussian_table(s, seed)
    corr = _correlation_table(s, priors, data, seed)
    cost = _cost_table(s, len(ops) - len(s.extra_ops) + ("box" in s.extra_ops))
    tables = [main, gap, full_table, ssim_table, ssim_miss, gauss, corr, cost]
    for t in tables + ([lpips_table] if lpips is not None else []):
        report.add_table(t)
    _plots(report, s, gap, gauss, corr)
    report.note(
        "Expected from the paper: the matched-vs-mismatched gap shrinks as the keep ratio rises "
        "(informative measurements make the prior matter less) and stays large for the box, "
        "where missing pixels are far from any observation."
    )
    for line in skipped:
        report.note(line)
    report.metadata.update(
        quick=quick, seed=seed, wall_time_s=time.time() - start, anchors=anchors,
        setting={k: getattr(s, k) for k in s.__dataclass_fields__},
    )  # fmt: skip
    return report


_PER_SAMPLE = ("weak", "dmplug", "dps")  # solvers whose samples are independent of each other


def _backbone_name(s: Setting) -> str:
    if s.backbone == "diffusers":
        return f"diffusers UNet2DModel (channels {s.width}/{2 * s.width}/{2 * s.width}, one attention block)"
    return f"{s.width}-wide TinyUNet"


def _solve_all(s: Setting, name: str, prior, x: torch.Tensor, ops: list[str], seed: int) -> dict:
    """Estimates ``{op_name: x_hat}`` of solver ``name`` for every operator on images ``x``.

    Per-sample solvers solve all inpainting problems (keep ratios, box) in one stacked batch;
    the same masks, noise and measurements as one solve per operator.
    """
    shape = tuple(x.shape)
    built = {o: _operator(o, shape, seed + 11) for o in ops}
    ys = {o: measure(op, x, s.sigma, seed + 12) for o, op in built.items()}
    out = {}
    masked = [o for o in ops if isinstance(built[o], (RandomInpainting, BoxInpainting))]
    if name in _PER_SAMPLE and len(masked) > 1:
        stacked = stack_inpainting([built[o] for o in masked])
        y = torch.cat([ys[o] for o in masked])
        xs = _solver(s, name, prior, stacked, seed).solve(y, tuple(y.shape)).x
        for o, x_hat in zip(masked, xs.split(shape[0]), strict=True):
            out[o] = x_hat
    for o in ops:
        if o not in out:
            out[o] = _solver(s, name, prior, built[o], seed).solve(ys[o], shape).x
    return out


def _solver(s: Setting, name: str, prior, op, seed: int):
    """The solver ``name`` (weak / dmplug / dps / dps-deepinv / tv) for operator ``op``."""
    inpainting = isinstance(op, (RandomInpainting, BoxInpainting, MaskInpainting))
    if name == "tv":
        return TVSolver(op, iterations=s.tv_iterations, seed=seed)
    if name == "dps":
        return DPSSolver(prior.eps, op, 0.5 if inpainting else 0.3, s.dps_steps, seed=seed)
    if name == "dps-deepinv":
        return DeepinvDPSSolver(prior.eps, op, s.deepinv_weight, s.dps_steps, seed=seed)
    gen = FewStepDDIM(prior.eps, spaced_timesteps(3), clip=True)
    weak = name == "weak"
    return NoiseOptimisationSolver(
        gen, op, optimizer="adam_sphere" if weak else "adam",
        early_stop="holdout" if weak else "wmv", iterations=s.iterations, lr=s.lr,
        best_k=s.best_k, wmv_patience=50, seed=seed,
    )  # fmt: skip


def _correlation_table(s: Setting, priors: dict, data: dict, seed: int) -> Table:
    lags = 6
    table = Table(
        "Local correlation at pixel offset k: data vs prior samples",
        ["images", *[f"k={k}" for k in range(lags + 1)]],
        notes=(
            "Pearson correlation of pixel pairs at horizontal/vertical offset k (image means "
            "removed). Prior samples: 64 draws of a 20-step DDIM. Last rows: mean Chebyshev "
            "distance (px) from a missing pixel to the nearest observed one, per operator."
        ),
    )
    for t in s.targets:
        c = local_correlation(load_domain(t, "test", s.image_size, n=64, seed=seed), lags)
        table.add_row(images=f"data: {t}", **{f"k={k}": float(v) for k, v in enumerate(c)})
    with torch.no_grad():
        for name, m in priors.items():
            z = torch.randn(
                64, 1, s.image_size, s.image_size, generator=torch.Generator().manual_seed(seed)
            )
            samples = FewStepDDIM(m.eps, spaced_timesteps(20))(z)
            c = local_correlation(samples, lags)
            table.add_row(
                images=f"prior samples: {name}", **{f"k={k}": float(v) for k, v in enumerate(c)}
            )
    x = next(iter(data.values()))
    for op_name in _op_names(s):
        op = _operator(op_name, tuple(x.shape), seed + 11)
        miss = op.missing_pixels(tuple(x.shape))
        if miss is not None:
            d = float(distance_to_observed(miss).mean())
            table.add_row(images=f"distance to observed, {op_name}", **{"k=0": d})
    return table


def _cost_table(s: Setting, n_masked: int, repeats: int = 5) -> Table:
    """CPU time of the UNet2DModel backbone against the hand-written TinyUNet, same process.

    Process CPU time (``time.process_time``, one thread), the two backbones interleaved, median
    of ``repeats``: one ``G(z)`` forward + backward (3-step DDIM) at the solver's batch sizes and
    one prior-training step. Untrained weights: the cost does not depend on them.
    """
    from .prior_module import DDPMPriorModule

    table = Table(
        "Cost: diffusers UNet2DModel vs hand-written TinyUNet (CPU ms, median of 5, one thread)",
        ["call", "UNet2DModel", "TinyUNet", "ratio"],
        notes=(
            "Process CPU time, the two backbones interleaved in this run. G(z) = the 3-step DDIM "
            f"generator, forward + backward to z, on {s.image_size} px images; the stacked batch "
            "holds every inpainting problem of a target. Parameters: "
        ),
    )
    nets = {
        b: DDPMPriorModule(s.image_size, width=s.width, backbone=b) for b in ("diffusers", "tiny")
    }
    params = {b: sum(p.numel() for p in m.parameters()) for b, m in nets.items()}
    table.notes += f"UNet2DModel {params['diffusers']:,}, TinyUNet {params['tiny']:,}."

    def solver_call(m, b):
        z = torch.randn(b, 1, s.image_size, s.image_size, requires_grad=True)
        return lambda: FewStepDDIM(m.eps)(z).sum().backward()

    def train_call(m):
        opt = torch.optim.Adam(m.parameters(), lr=s.lr)
        x = torch.rand(s.batch_size, 1, s.image_size, s.image_size) * 2 - 1

        def step():
            opt.zero_grad()
            m._loss(x).backward()
            opt.step()

        return step

    calls = {
        f"G(z) fwd+bwd, batch {s.n_images}": lambda m: solver_call(m, s.n_images),
        f"G(z) fwd+bwd, stacked batch {s.n_images * n_masked}": lambda m: solver_call(
            m, s.n_images * n_masked
        ),
        f"prior training step, batch {s.batch_size}": train_call,
    }
    for name, make in calls.items():
        fns = {b: make(m) for b, m in nets.items()}
        times: dict[str, list[float]] = {b: [] for b in fns}
        for rep in range(repeats + 1):
            for b, fn in fns.items():
                t0 = time.process_time()
                fn()
                if rep:  # the first round is the warm-up
                    times[b].append(1e3 * (time.process_time() - t0))
        med = {b: sorted(v)[len(v) // 2] for b, v in times.items()}
        table.add_row(call=name, UNet2DModel=round(med["diffusers"], 1),
                      TinyUNet=round(med["tiny"], 1), ratio=round(med["diffusers"] / med["tiny"], 2))  # fmt: skip
    return table


def _plots(report: Report, s: Setting, gap: Table, gauss: Table, corr: Table) -> None:
    """Gap vs keep ratio (diffusion priors; exact Gaussian priors) and the local-correlation curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    keep_cols = [f"keep{k:g}" for k in s.keeps]
    for row in gap.rows:
        (line,) = axes[0].plot(s.keeps, [row[c] for c in keep_cols], marker="o",
                               label=f"{row['target']} vs {row['mismatched prior']}")  # fmt: skip
        if "box" in row:
            axes[0].scatter([0.5], [row["box"]], marker="s", color=line.get_color())
    axes[0].set_title("tiny diffusion priors, weak solver")
    for t in s.targets:
        by_prior = {r["Gaussian prior fitted on"]: r for r in gauss.rows if r["target"] == t}
        if t not in by_prior:
            continue
        for name, r in by_prior.items():
            if name == t:
                continue
            vals = [_mean(by_prior[t][c]) - _mean(r[c]) for c in keep_cols]
            (line,) = axes[1].plot(s.keeps, vals, marker="o", label=f"{t} vs {name}")
            if "box" in r:
                axes[1].scatter([0.5], [_mean(by_prior[t]["box"]) - _mean(r["box"])],
                                marker="s", color=line.get_color())  # fmt: skip
    axes[1].set_title("exact Gaussian priors (closed-form posterior mean)")
    for ax in axes[:2]:
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xlabel("keep ratio (squares: 50 % box, at keep 0.5)")
        ax.set_ylabel("matched - mismatched PSNR on missing pixels (dB)")
        ax.legend(fontsize=7)
    ks = [c for c in corr.columns if c.startswith("k=")]
    for row in corr.rows:
        if row["images"].startswith("distance"):
            continue
        axes[2].plot(range(len(ks)), [row[c] for c in ks], marker=".", label=row["images"])
    axes[2].set_xlabel("pixel offset k")
    axes[2].set_ylabel("correlation")
    axes[2].set_title("local correlation: data vs prior samples")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    report.save_figure(fig, "gap_and_correlation.png")


def _mean(cell) -> float:
    """The mean of a ``"m ± s"`` table cell (or a number)."""
    return float(str(cell).split()[0])
