"""The paper's experiment: the same inverse problems under matched and mismatched priors.

For each target domain and operator (random inpainting at several keep ratios, a 50 % box,
Gaussian blur, x2 super-resolution; noise ``sigma``) the same held-out images are reconstructed

* by the paper's solver (``weak``: Adam on the sphere + hold-out early stopping through a 3-step
  DDIM, :class:`~weakprior.noise_optimisation.NoiseOptimisationSolver`) under every prior;
* by the anchors with the matched prior: DMPlug (``dmplug``: plain Adam + windowed-variance
  stopping, same generator), DPS (``dps``, :class:`~weakprior.dps.DPSSolver`), deepinv's own DPS
  (``dps-deepinv``, :class:`~weakprior.deepinv_anchor.DeepinvDPSSolver`), deepinv's DiffPIR
  (``diffpir-deepinv``) and DDRM (``ddrm-deepinv``) when deepinv is installed, and total
  variation (``tv``, no learned prior).

:func:`mismatch_tables` reports PSNR on the missing pixels (whole image for blur and SR), PSNR
and SSIM on the whole image, SSIM on the missing pixels, LPIPS when its weights are cached, and
the gap ``PSNR(matched prior) - PSNR(mismatched prior)`` of the weak solver (:func:`gap_table`),
which the paper predicts shrinks as the keep ratio rises and stays large for the box.
:func:`seed_tables` summarises several seeds (masks, noise, solver initialisation) with 95 %
Student-t intervals: every row, the gap, and each learned prior's margin over TV, the last two
paired per seed.

Masks use ``seed + 11`` and measurement noise ``seed + 12``; the inpainting problems of a target
(every keep ratio and the box) are stacked into one batch for the per-sample solvers
(:func:`~weakprior.operators.stack_inpainting`): each sample keeps its own mask, noise ``z``,
sphere and stopper, so stacking only saves time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from icml26_shared.results import Table

from .operators import (
    BoxInpainting,
    MaskInpainting,
    Operator,
    RandomInpainting,
    make_operator,
    measure,
    stack_inpainting,
)

SOLVERS = ("weak", "dmplug", "dps", "dps-deepinv", "diffpir-deepinv", "ddrm-deepinv", "tv")
DEEPINV_SOLVERS = ("dps-deepinv", "diffpir-deepinv", "ddrm-deepinv")  # need the bench extra
PER_SAMPLE = ("weak", "dmplug", "dps")  # solvers whose samples are independent of each other


@dataclass(frozen=True)
class SolverBudget:
    """Iterations and step sizes of the solvers (the paper: 1000 iterations, lr 0.01, best-k 100).

    ``iterations``, ``lr``, ``best_k``: the weak and DMPlug solvers; ``wmv_patience``: DMPlug's
    windowed-variance patience; ``dps_steps``: DDPM steps of both DPS samplers;
    ``deepinv_weight``: deepinv's DPS guidance weight; ``tv_iterations``: the TV anchor.
    """

    iterations: int = 60
    lr: float = 0.05
    best_k: int = 10
    wmv_patience: int = 50
    dps_steps: int = 100
    deepinv_weight: float = 30.0
    tv_iterations: int = 150


def make_solver(
    name: str, prior, op: Operator, budget: SolverBudget, seed: int = 0, sigma: float = 0.01
):
    """The solver ``name`` (one of :data:`SOLVERS`) for operator ``op`` and prior module ``prior``.

    ``prior`` has an ``eps(x_t, t)`` method (a :class:`~weakprior.lightning.DDPMPriorModule`);
    it is ignored by ``tv``. DPS's step ``zeta`` is 0.5 for inpainting and 0.3 otherwise.
    deepinv's DiffPIR and DDRM run ``budget.dps_steps`` steps with deepinv's default
    hyperparameters and know the noise level ``sigma``.
    """
    from .ddim import FewStepDDIM, spaced_timesteps
    from .noise_optimisation import NoiseOptimisationSolver

    inpainting = isinstance(op, (RandomInpainting, BoxInpainting, MaskInpainting))
    if name == "tv":
        from .total_variation import TVSolver

        return TVSolver(op, iterations=budget.tv_iterations, seed=seed)
    if name == "dps":
        from .dps import DPSSolver

        return DPSSolver(prior.eps, op, 0.5 if inpainting else 0.3, budget.dps_steps, seed=seed)
    if name == "dps-deepinv":
        from .deepinv_anchor import DeepinvDPSSolver

        return DeepinvDPSSolver(prior.eps, op, budget.deepinv_weight, budget.dps_steps, seed=seed)
    if name == "diffpir-deepinv":
        from .deepinv_anchor import DeepinvDiffPIRSolver

        return DeepinvDiffPIRSolver(prior.eps, op, sigma, budget.dps_steps, seed=seed)
    if name == "ddrm-deepinv":
        from .deepinv_anchor import DeepinvDDRMSolver

        return DeepinvDDRMSolver(prior.eps, op, sigma, budget.dps_steps, seed=seed)
    if name not in ("weak", "dmplug"):
        raise ValueError(f"unknown solver {name!r}; choose from {', '.join(SOLVERS)}")
    weak = name == "weak"
    return NoiseOptimisationSolver(
        FewStepDDIM(prior.eps, spaced_timesteps(3), clip=True), op,
        optimizer="adam_sphere" if weak else "adam", early_stop="holdout" if weak else "wmv",
        iterations=budget.iterations, lr=budget.lr, best_k=budget.best_k,
        wmv_patience=budget.wmv_patience, seed=seed,
    )  # fmt: skip


def solve_operators(
    name: str, prior, x: torch.Tensor, op_names: Sequence[str], sigma: float,
    budget: SolverBudget, seed: int = 0,
) -> dict[str, torch.Tensor]:  # fmt: skip
    """Estimates ``{op_name: x_hat}`` of solver ``name`` for every operator on images ``x``.

    Per-sample solvers solve all inpainting problems (keep ratios, box) in one stacked batch:
    the same masks, noise and measurements as one solve per operator.
    """
    shape = tuple(x.shape)
    built = {o: make_operator(o, shape, seed + 11) for o in op_names}
    ys = {o: measure(op, x, sigma, seed + 12) for o, op in built.items()}
    out: dict[str, torch.Tensor] = {}
    masked = [o for o in op_names if isinstance(built[o], (RandomInpainting, BoxInpainting))]
    if name in PER_SAMPLE and len(masked) > 1:
        stacked = stack_inpainting([built[o] for o in masked])
        y = torch.cat([ys[o] for o in masked])
        xs = make_solver(name, prior, stacked, budget, seed, sigma).solve(y, tuple(y.shape)).x
        out.update(zip(masked, xs.split(shape[0]), strict=True))
    for o in op_names:
        if o not in out:
            out[o] = make_solver(name, prior, built[o], budget, seed, sigma).solve(ys[o], shape).x
    return out


def mismatch_tables(
    data: dict[str, torch.Tensor], priors: dict, op_names: Sequence[str], anchors: Sequence[str],
    budget: SolverBudget, sigma: float = 0.01, seed: int = 0, lpips=None, setting_note: str = "",
    means: dict | None = None,
) -> list[Table]:  # fmt: skip
    """Reconstruct every target with every prior (weak solver) and every anchor (matched prior).

    Parameters
    ----------
    data:
        ``{target domain: held-out images (N, 1, S, S) in [-1, 1]}``.
    priors:
        ``{name: prior module}``; the weak solver runs under each, the anchors under the prior
        named like the target.
    op_names:
        Operators (:func:`~weakprior.operators.operator_names`).
    anchors:
        Solvers other than ``weak`` to run with the matched prior (``tv`` with none).
    lpips:
        Optional ``f(x_hat, x) -> (N,)`` (:func:`~weakprior.image_quality.lpips_vgg`).
    setting_note:
        Text appended to the first table's notes (images, solver budget, priors).
    means:
        Optional dict filled with ``{(target, solver, prior): {op: mean PSNR on missing
        pixels}}`` (the per-seed summaries of :func:`seed_tables`).

    Returns the tables: PSNR on missing pixels, the gap, PSNR on the whole image, SSIM whole,
    SSIM on missing pixels, and LPIPS when ``lpips`` is given.
    """
    from icml26_shared.progress import progress

    from .image_quality import mean_std, score

    cols = ["target", "solver", "prior", *op_names]
    main = Table(
        "PSNR (dB) on missing pixels (inpainting) / whole image (blur, SR): mean ± std over images",
        cols, notes=setting_note,
    )  # fmt: skip
    full = Table("PSNR (dB) on the whole image: mean ± std over images", cols)
    ssim_full = Table("SSIM (whole image), mean over images", cols)
    ssim_missing = Table(
        "SSIM on missing pixels (inpainting; whole image for blur, SR), mean over images", cols,
        notes="Mean of the local SSIM map (Gaussian window 7) over the missing pixels.",
    )  # fmt: skip
    lpips_table = Table("LPIPS-VGG (whole image), mean over images (lower is better)", cols)
    jobs = []
    for target in data:
        jobs += [(target, "weak", prior) for prior in priors]
        jobs += [(target, a, target if a != "tv" else "none") for a in anchors]
    means = {} if means is None else means
    for target, solver, prior in progress(jobs, desc="solvers", total=len(jobs)):
        x = data[target]
        base = {"target": target, "solver": solver, "prior": prior}
        rows = {t: dict(base) for t in ("main", "full", "ssim", "ssim_missing", "lpips")}
        estimates = solve_operators(solver, priors.get(prior), x, op_names, sigma, budget, seed)
        for op_name in op_names:
            op = make_operator(op_name, tuple(x.shape), seed + 11)
            x_hat = estimates[op_name]
            m = score(x_hat.clamp(-1, 1), x, op.missing_pixels(tuple(x.shape)))
            if lpips is not None:  # pragma: no cover - needs cached VGG weights
                rows["lpips"][op_name] = float(lpips(x_hat, x).mean())
            rows["main"][op_name] = mean_std(m["psnr_missing"])
            rows["full"][op_name] = mean_std(m["psnr_full"])
            rows["ssim"][op_name] = float(m["ssim_full"].mean())
            rows["ssim_missing"][op_name] = float(m["ssim_missing"].mean())
            means.setdefault((target, solver, prior), {})[op_name] = float(m["psnr_missing"].mean())
        for key, table in (("main", main), ("full", full), ("ssim", ssim_full),
                           ("ssim_missing", ssim_missing), ("lpips", lpips_table)):  # fmt: skip
            if key != "lpips" or lpips is not None:
                table.add_row(**rows[key])
    tables = [main, gap_table(means, list(data), list(priors), op_names), full, ssim_full]
    return tables + [ssim_missing] + ([lpips_table] if lpips is not None else [])


def gap_table(
    means: dict[tuple[str, str, str], dict[str, float]], targets: Sequence[str],
    priors: Sequence[str], op_names: Sequence[str],
) -> Table:  # fmt: skip
    """Matched-prior minus mismatched-prior PSNR of the weak solver, per target and operator.

    ``means[(target, "weak", prior)][op]`` is the mean PSNR on the missing pixels; a target
    without a matched prior has no row.
    """
    table = Table(
        "Gap: matched-prior PSNR minus mismatched-prior PSNR (weak solver, missing pixels), dB",
        ["target", "mismatched prior", *op_names],
    )
    for target in targets:
        matched = means.get((target, "weak", target))
        if matched is None:
            continue
        for prior in priors:
            if prior != target:
                other = means[(target, "weak", prior)]
                table.add_row(target=target, **{"mismatched prior": prior},
                              **{o: matched[o] - other[o] for o in op_names})  # fmt: skip
    return table


def setting_note(n_images: int, image_size: int, sigma: float, budget: SolverBudget,
                 priors: str) -> str:  # fmt: skip
    """The first table's note: images, noise, each solver's budget and the priors."""
    b = budget
    return (
        f"{n_images} held-out {image_size}x{image_size} images per target, noise sigma = "
        f"{sigma} on [-1, 1]. weak = Adam on the sphere + hold-out early stopping through a "
        f"3-step DDIM (666, 333, 0) with x0 clipping, {b.iterations} iterations, lr {b.lr}, "
        f"best-k {b.best_k}; DMPlug = plain Adam + windowed-variance stopping (window 10), same "
        f"generator and iterations; DPS = {b.dps_steps} respaced DDPM steps, zeta 0.5 "
        "(inpainting) / 0.3 (blur, SR); dps-deepinv = deepinv's own DPS sampler "
        f"(deepinv.sampling.DPS, VP schedule, {b.dps_steps} DDPM steps, guidance weight "
        f"{b.deepinv_weight:g}) with deepinv's physics and the same prior wrapped as its "
        f"denoiser; diffpir-deepinv / ddrm-deepinv = deepinv's DiffPIR / DDRM samplers "
        f"({b.dps_steps} steps, deepinv's default hyperparameters) with the same denoiser; TV = total-variation least squares, weight chosen on held-out pixels. "
        f"Priors: {priors}"
    )


def optional_parts(anchors: Sequence[str]):
    """``(anchors, lpips, notes)``: the anchors that can run here, LPIPS if its weights are cached.

    The deepinv samplers (:data:`DEEPINV_SOLVERS`) need the optional ``deepinv`` (the ``bench`` extra) and LPIPS needs cached
    VGG weights (:func:`~weakprior.image_quality.lpips_vgg`; never downloaded); what is left out
    is named in ``notes``.
    """
    from .deepinv_anchor import deepinv_available
    from .image_quality import lpips_vgg

    anchors, notes = list(anchors), []
    skipped = [a for a in anchors if a in DEEPINV_SOLVERS]
    if skipped and not deepinv_available():
        anchors = [a for a in anchors if a not in DEEPINV_SOLVERS]
        notes.append(
            f"{', '.join(skipped)} skipped: deepinv is not installed "
            "(pip install 'weakprior[bench]')."
        )
    try:
        lpips = lpips_vgg()
    except RuntimeError as err:  # weights not cached: say so, never download
        lpips = None
        notes.append(f"LPIPS not computed: {err}")
    return anchors, lpips, notes


def t_interval(values: Sequence[float]) -> str:
    """``"mean ± h"`` with ``h`` the half-width of the 95 % Student-t interval over seeds.

    >>> t_interval([1.0, 2.0, 3.0])  # sd 1, n 3: t(0.975, 2) = 4.303, h = 4.303 / sqrt(3)
    '2.00 ± 2.48'
    """
    import math

    from scipy.stats import t

    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return f"{mean:.2f}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return f"{mean:.2f} ± {t.ppf(0.975, n - 1) * sd / math.sqrt(n):.2f}"


def seed_tables(
    per_seed: Sequence[dict[tuple[str, str, str], dict[str, float]]], op_names: Sequence[str],
) -> list[Table]:  # fmt: skip
    """Summaries over seeds of the image-mean PSNRs on missing pixels (one dict per seed).

    Returns three tables, each cell ``mean ± 95 % t-interval half-width`` over the seeds:
    every solver and prior; the matched-minus-mismatched gap of the weak solver (the paper's
    weak-vs-strong curve); and each learned-prior row minus the TV anchor on the same problems.
    """
    n = len(per_seed)
    keys = list(per_seed[0])
    cols = ["target", "solver", "prior", *op_names]
    psnr = Table(f"PSNR (dB) on missing pixels, mean over images: mean ± 95 % CI over {n} seeds",
                 cols)  # fmt: skip
    gap = Table(
        f"Gap over {n} seeds: matched-prior minus mismatched-prior PSNR (weak solver, missing "
        "pixels), dB, mean ± 95 % CI",
        ["target", "mismatched prior", *op_names],
    )
    margin = Table(
        f"Learned prior minus TV over {n} seeds (PSNR on missing pixels, dB), mean ± 95 % CI",
        cols, notes="Positive: the learned prior beats the no-prior TV anchor on the same images, "
        "masks and noise (paired per seed).",
    )  # fmt: skip
    for key in keys:
        target, solver, prior = key
        psnr.add_row(target=target, solver=solver, prior=prior,
                     **{o: t_interval([m[key][o] for m in per_seed]) for o in op_names})  # fmt: skip
        tv = (target, "tv", "none")
        if solver != "tv" and tv in per_seed[0]:
            margin.add_row(target=target, solver=solver, prior=prior, **{
                o: t_interval([m[key][o] - m[tv][o] for m in per_seed]) for o in op_names})  # fmt: skip
        matched = (target, "weak", target)
        if solver == "weak" and prior != target and matched in per_seed[0]:
            gap.add_row(target=target, **{"mismatched prior": prior}, **{
                o: t_interval([m[matched][o] - m[key][o] for m in per_seed]) for o in op_names})  # fmt: skip
    return [psnr, gap, margin]


def mismatch_over_seeds(
    data: dict[str, torch.Tensor], priors: dict, op_names: Sequence[str], anchors: Sequence[str],
    budget: SolverBudget, sigma: float, seeds: Sequence[int], lpips=None, setting_note: str = "",
) -> list[Table]:  # fmt: skip
    """:func:`mismatch_tables` once per seed (masks ``k + 11``, noise ``k + 12``, solver
    initialisation ``k``), the priors fixed: the three :func:`seed_tables` summaries, then the
    per-image tables of the first seed (their titles name it)."""
    per_seed, first = [], []
    for k in seeds:
        per_seed.append({})
        tables = mismatch_tables(data, priors, op_names, anchors, budget, sigma, k, lpips,
                                 setting_note, per_seed[-1])  # fmt: skip
        first = first or tables
    for table in first:
        table.title += f" (seed {seeds[0]})"
    return seed_tables(per_seed, op_names) + first
