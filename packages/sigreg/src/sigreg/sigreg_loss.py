"""Sketched Isotropic Gaussian Regularization (SIGReg): the loss of the paper.

Paper: "Stable Deep Reinforcement Learning via Isotropic Gaussian Representations",
Saheb, Obando-Ceron, Courville, Bashivan, Castro, ICML 2026 (arXiv 2602.19373).
Authors' code: github.com/asahebpa/IsoGaussian-DRL.

For a batch of embeddings ``Phi`` of shape ``(N, D)`` SIGReg draws ``M`` random unit
directions ``u_m``, projects ``z_{m,i} = u_m^T phi_i`` and compares the empirical
characteristic function of every 1-D slice with the one of ``N(0, 1)``,
``exp(-t^2 / 2)``, on a grid of frequencies ``t_k``:

1. slices ``u_m ~ N(0, I_D) / ||.||``  -> :func:`draw_slices`
2. ``c_m(t) = mean_i cos(t z_{m,i})``, ``s_m(t) = mean_i sin(t z_{m,i})``
   (all-reduced *before* squaring when ``global_batch``)  -> :func:`empirical_cf`;
   computed in one fused trig pass on the distinct positive frequencies (the error is
   even in ``t`` and zero at ``t = 0``)  -> :func:`folded_grid`; on one process the
   projection, the trig pass and steps 3-4 are a single autograd node with a closed-form
   backward (``_LocalStatistic``), across ranks two stages around the all-reduce
   (``_CosSinSums``)
3. per-frequency error ``e_m(t) = (c_m(t) - exp(-t^2/2))^2 + s_m(t)^2``
4. the two presets (:data:`PRESETS`):

   * ``isogaussian-drl`` (the released code, default): 16 slices, 8 frequencies evenly
     spaced on [-5, 5] (symmetric, no 0), ``loss = mean_t mean_m e_m(t)``; no weight, no
     ``N`` factor, no centring: every marginal is pulled to exactly ``N(0, 1)``.
   * ``lejepa`` (the Epps-Pulley form of LeJEPA / ``lightly`` / ``stable-pretraining``):
     1024 slices, 17 knots on [0, 3], trapezoid weights (``dt`` at the ends, ``2 dt``
     inside: the integrand is even) times ``exp(-t^2/2)``,
     ``EP = N * sum_k w_k e_m(t_k)``, averaged over slices.

   -> :func:`sigreg`, :class:`SIGReg`
5. total loss: ``L_task + lam * SIGReg`` (``additive``, the code) or
   ``(1 - lam) L_task + lam * SIGReg`` (``convex``, the paper's text)
   -> :func:`combine_losses`
6. closed forms used by the tests: for i.i.d. ``N(0, I)`` rows
   ``E|cf_N(t) - exp(-t^2/2)|^2 = (1 - exp(-t^2)) / N`` -> :func:`gaussian_expectation`;
   for a collapsed batch (all rows equal to ``c``) -> :func:`collapsed_value`.

Multi-view inputs ``(V, N, D)`` are either ``pooled`` (one statistic over the ``V * N``
rows) or ``per-view`` (the mean of ``V`` statistics). With ``global_batch=True`` and an
initialised ``torch.distributed`` process group the cos/sin sums and the row count are
all-reduced before squaring, so the statistic is the one of the global batch and the
regulariser's strength does not change with the number of ranks. Slices drawn with a
seed (``seed + step``) are identical on every rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from torch.autograd.function import once_differentiable

Preset = Literal["isogaussian-drl", "lejepa"]


@dataclass(frozen=True)
class PresetConfig:
    """Defaults of one SIGReg preset."""

    num_slices: int
    num_t: int
    t_max: float
    grid: Literal["symmetric", "half"]
    weight: Literal["none", "gaussian"]
    scale_by_n: bool


PRESETS: dict[str, PresetConfig] = {
    # released IsoGaussian-DRL code: M=16, T=8 points on [-5, 5], plain mean
    "isogaussian-drl": PresetConfig(16, 8, 5.0, "symmetric", "none", False),
    # LeJEPA / lightly / stable-pretraining Epps-Pulley: 1024 slices, 17 knots on [0, 3]
    "lejepa": PresetConfig(1024, 17, 3.0, "half", "gaussian", True),
}


def _check_preset(preset: str) -> PresetConfig:
    if preset not in PRESETS:
        raise ValueError(f"unknown SIGReg preset {preset!r}; choose one of {sorted(PRESETS)}")
    return PRESETS[preset]


def check_features(x: torch.Tensor, name: str = "features", finite: bool = True) -> None:
    """Reject what SIGReg cannot score: not (N, D), N < 2, non-float, NaN/Inf.

    ``finite=False`` skips the element-wise NaN/Inf pass (:func:`sigreg` checks its scalar
    result instead: any non-finite feature makes the statistic NaN).
    """
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must have shape (N, D), got {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.shape[0] < 2:
        raise ValueError(f"{name}: SIGReg needs a batch of at least 2 rows, got {x.shape[0]}")
    if x.shape[1] < 1:
        raise ValueError(f"{name}: feature dimension must be >= 1")
    if finite and not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} contain NaN or Inf values")


def frequency_grid(
    num_t: int, t_max: float, grid: Literal["symmetric", "half"], dtype=torch.float32
) -> torch.Tensor:
    """The frequencies ``t_k``: ``linspace(-t_max, t_max, T)`` or ``linspace(0, t_max, T)``."""
    if int(num_t) < 1:
        raise ValueError(f"num_t must be >= 1, got {num_t}")
    if not float(t_max) > 0:
        raise ValueError(f"t_max must be > 0, got {t_max}")
    if grid == "symmetric":
        if num_t == 1:
            return torch.tensor([float(t_max)], dtype=dtype)
        return torch.linspace(-t_max, t_max, num_t, dtype=dtype)
    if grid == "half":
        if num_t < 2:
            raise ValueError("the half grid needs at least 2 knots")
        return torch.linspace(0.0, t_max, num_t, dtype=dtype)
    raise ValueError(f"unknown grid {grid!r}; choose 'symmetric' or 'half'")


def frequency_weights(
    t: torch.Tensor, weight: Literal["none", "gaussian"], grid: Literal["symmetric", "half"]
) -> torch.Tensor:
    """Quadrature weights over the grid.

    ``none`` + symmetric: ``1 / T`` (a plain mean, the released code). ``gaussian`` + half:
    trapezoid weights doubled inside (even integrand) times ``exp(-t^2/2)`` (LeJEPA).
    """
    if weight == "none":
        return torch.full_like(t, 1.0 / t.numel())
    if weight != "gaussian":
        raise ValueError(f"unknown weight {weight!r}; choose 'none' or 'gaussian'")
    if grid == "half":
        dt = t[1] - t[0]
        w = torch.full_like(t, 2.0) * dt
        w[0] = dt
        w[-1] = dt
    else:
        dt = (t[1] - t[0]) if t.numel() > 1 else torch.ones((), dtype=t.dtype)
        w = torch.full_like(t, 1.0) * dt
        w[0] = dt / 2
        w[-1] = dt / 2
    return w * torch.exp(-0.5 * t**2)


def draw_slices(
    dim: int,
    num_slices: int,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Random unit directions ``(D, M)``, drawn on CPU (same values on every device/rank).

    >>> a = draw_slices(5, 3, generator=torch.Generator().manual_seed(0))
    >>> a.shape, bool(torch.allclose(a.norm(dim=0), torch.ones(3)))
    (torch.Size([5, 3]), True)
    """
    if int(num_slices) <= 0:
        raise ValueError(f"num_slices must be > 0, got {num_slices}")
    a = torch.randn(int(dim), int(num_slices), generator=generator, dtype=torch.float32)
    a = a / a.norm(dim=0, keepdim=True).clamp_min(1e-12)
    return a.to(device=device, dtype=dtype)


def _is_distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _distributed_sum(x: torch.Tensor) -> torch.Tensor:
    import torch.distributed as dist

    if not _is_distributed():
        return x
    from torch.distributed.nn.functional import all_reduce

    return all_reduce(x, op=dist.ReduceOp.SUM)  # differentiable all-reduce


class _CosSinSums(torch.autograd.Function):
    """``[sum_i cos(t z_i), sum_i sin(t z_i)]`` (M, 2T) in one trig pass, fused backward.

    ``sin(x) = cos(x - pi/2)``, so one ``cos`` over the ``(N, M, 2T)`` phases gives both
    parts; the backward reuses the saved values
    (``d/dz cos(t z) = -t sin(t z)``, ``d/dz sin(t z) = t cos(t z)``) instead of
    recomputing two more trig passes as autograd would.
    """

    @staticmethod
    def forward(ctx, z, t2, phase):
        cs = torch.addcmul(phase, z.unsqueeze(-1), t2).cos_()  # (N, M, 2T)
        ctx.save_for_backward(cs, t2)
        return cs.sum(0)

    @staticmethod
    @once_differentiable  # a second derivative would need more than the saved values
    def backward(ctx, grad):
        cs, t2 = ctx.saved_tensors
        half = t2.numel() // 2
        # d sum cos / dz = -t sin, d sum sin / dz = t cos: swap the halves of the gradient
        g = torch.cat([grad[:, half:], -grad[:, :half]], dim=1) * t2  # (M, 2T)
        return (cs * g).sum(-1), None, None


class _LocalStatistic(torch.autograd.Function):
    """The whole local statistic ``factor * sum_m (r_m^2 @ w2)`` from ``x`` in one node.

    ``z = x U`` (N, M); ``cs = cos([t z, t z - pi/2])`` (N, M, 2T) = ``[cos | sin]``;
    ``r = sum_i cs - n * target`` (M, 2T), i.e. ``n (cf - exp(-t^2/2))`` and ``n sf``;
    ``loss = factor * sum_{m,j} w2_j r_{mj}^2``. Backward in closed form:
    ``dL/dr = 2 factor w2 r``; ``d r_cos / dz = -t sin``, ``d r_sin / dz = t cos`` (the
    halves swap, ``bw`` holds ``[t w2 | -t w2]`` in the swapped order);
    ``dL/dz = sum_j cs * roll(r) * bw * 2 factor``; ``dL/dx = dL/dz U^T``.
    One autograd node instead of about ten: on small batches the cost of SIGReg is
    per-op dispatch, not arithmetic.
    """

    @staticmethod
    def forward(ctx, x, slices, t2, phase, target2, w2, bw, factor):
        z = x @ slices  # (N, M)
        cs = torch.addcmul(phase, z.unsqueeze(-1), t2).cos_()  # (N, M, 2T)
        r = cs.sum(0).sub_(target2, alpha=x.shape[0])  # (M, 2T)
        ctx.save_for_backward(slices, cs, r, bw)
        ctx.factor = factor
        ctx.half = t2.numel() // 2
        return r.square().mv(w2).sum() * factor

    @staticmethod
    @once_differentiable  # a second derivative would need more than the saved values
    def backward(ctx, grad):
        slices, cs, r, bw = ctx.saved_tensors
        g = torch.roll(r, ctx.half, dims=1).mul_(bw * (2.0 * ctx.factor * grad))  # (M, 2T)
        gz = torch.matmul(cs.transpose(0, 1), g.unsqueeze(-1)).squeeze(-1).t()  # (N, M)
        gx = gz @ slices.t() if ctx.needs_input_grad[0] else None  # (N, D)
        return gx, None, None, None, None, None, None, None


_GRID_CACHE: dict[tuple, tuple[torch.Tensor, ...]] = {}


def folded_grid(
    num_t: int,
    t_max: float,
    grid: Literal["symmetric", "half"],
    weight: Literal["none", "gaussian"],
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The quadrature folded onto its distinct positive frequencies: ``(t, w)``.

    The error at ``-t`` equals the one at ``t`` (``cos`` is even, ``sin^2`` too), so a
    symmetric grid is folded onto ``t > 0`` with the two weights added; ``t = 0`` has
    error exactly 0 (``cf(0) = 1 = e^0``) and is dropped. The statistic is unchanged,
    at half the trig work. Cached per setting, dtype and device.

    >>> t, w = folded_grid(8, 5.0, "symmetric", "none")
    >>> t.tolist()[0] > 0, len(t), round(float(w.sum()), 6)
    (True, 4, 1.0)
    """
    return _quadrature(num_t, t_max, grid, weight, dtype, device)[:2]


def _quadrature(num_t, t_max, grid, weight, dtype, device) -> tuple[torch.Tensor, ...]:
    """Cached ``(t, w, t2, phase, target2, w2, bw)``: folded grid plus fused-pass constants."""
    key = (int(num_t), float(t_max), grid, weight, dtype, str(device))
    hit = _GRID_CACHE.get(key)
    if hit is not None:
        return hit
    t = frequency_grid(num_t, t_max, grid, dtype=torch.float64)
    w = frequency_weights(t, weight, grid)
    pos = t > 0
    tw, ww = t[pos], w[pos].clone()
    neg = t < 0
    if bool(neg.any()):
        if int(neg.sum()) != int(pos.sum()):
            raise ValueError("a symmetric grid must pair every -t with +t")
        ww = ww + w[neg].flip(0)
    t2 = torch.cat([tw, tw])
    phase = torch.cat([torch.zeros_like(tw), torch.full_like(tw, -0.5 * torch.pi)])
    target2 = torch.cat([torch.exp(-0.5 * tw**2), torch.zeros_like(tw)])
    w2 = torch.cat([ww, ww])
    bw = torch.cat([tw * ww, -tw * ww])  # backward weights in the swapped order (see above)
    out = tuple(v.to(device=device, dtype=dtype) for v in (tw, ww, t2, phase, target2, w2, bw))
    _GRID_CACHE[key] = out
    return out


def empirical_cf(
    z: torch.Tensor, t: torch.Tensor, global_batch: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Real and imaginary parts ``(M, T)`` of the empirical CF of projections ``z`` (N, M).

    Returns ``(c, s, n)`` with ``n`` the (global) number of rows. With ``global_batch``
    the sums (and ``n``) are all-reduced in one collective *before* any squaring.

    >>> c, s, n = empirical_cf(torch.zeros(3, 2), torch.tensor([1.0, 2.0]))
    >>> c.tolist(), s.abs().max().item() < 1e-6, float(n)
    ([[1.0, 1.0], [1.0, 1.0]], True, 3.0)
    """
    k = t.numel()
    t2 = torch.cat([t, t])
    phase = torch.cat([torch.zeros_like(t), torch.full_like(t, -0.5 * torch.pi)])
    sums = _CosSinSums.apply(z, t2, phase)  # (M, 2T)
    n = torch.tensor(float(z.shape[0]), dtype=z.dtype, device=z.device)
    if global_batch:  # all-reduce sums *before* squaring: statistic of the global batch
        packed = _distributed_sum(torch.cat([sums.flatten(), n.reshape(1)]))
        sums, n = packed[:-1].reshape(sums.shape), packed[-1]
    return sums[:, :k] / n, sums[:, k:] / n, n


def sigreg(
    x: torch.Tensor,
    *,
    preset: Preset = "isogaussian-drl",
    num_slices: int | None = None,
    num_t: int | None = None,
    t_max: float | None = None,
    weight: Literal["none", "gaussian"] | None = None,
    scale_by_n: bool | None = None,
    slices: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    global_batch: bool = False,
    return_parts: bool = False,
):
    """SIGReg statistic of a batch ``x`` of shape ``(N, D)`` (differentiable).

    Args:
        x: Embeddings, one row per sample.
        preset: ``isogaussian-drl`` (default, the released code) or ``lejepa``.
        num_slices, num_t, t_max, weight, scale_by_n: Override the preset's values.
        slices: A fixed ``(D, M)`` slice matrix (else drawn with ``generator``; no generator
            means a fresh unseeded draw as in the released code).
        generator: CPU generator for the slice draw.
        global_batch: All-reduce the CF sums over ``torch.distributed`` ranks first.
        return_parts: Also return the real and imaginary error terms (means over slices).

    Examples:
        >>> g = torch.Generator().manual_seed(0)
        >>> gauss = torch.randn(2048, 32, generator=g)
        >>> collapsed = torch.zeros(2048, 32)
        >>> float(sigreg(gauss, generator=g)) < 0.01 < float(sigreg(collapsed, generator=g))
        True
    """
    cfg = _check_preset(preset)
    check_features(x, finite=False)  # non-finite rows make the result NaN: checked below
    num_slices = cfg.num_slices if num_slices is None else int(num_slices)
    num_t = cfg.num_t if num_t is None else int(num_t)
    t_max = cfg.t_max if t_max is None else float(t_max)
    weight = cfg.weight if weight is None else weight
    scale_by_n = cfg.scale_by_n if scale_by_n is None else bool(scale_by_n)
    if num_slices <= 0:
        raise ValueError(f"num_slices must be > 0, got {num_slices}")
    if preset == "lejepa" and num_t % 2 == 0:
        raise ValueError(f"the lejepa preset needs an odd number of knots, got {num_t}")
    q = _quadrature(num_t, t_max, cfg.grid, weight, x.dtype, x.device)
    t, w, t2, phase, target2, w2, bw = q
    if slices is None:
        slices = draw_slices(x.shape[1], num_slices, generator=generator)
    if slices.ndim != 2 or slices.shape[0] != x.shape[1]:
        raise ValueError(f"slices must have shape (D={x.shape[1]}, M), got {tuple(slices.shape)}")
    slices = slices.to(device=x.device, dtype=x.dtype)
    distributed = global_batch and _is_distributed()
    if not (distributed or return_parts or slices.requires_grad):  # common case: one node
        n, m = x.shape[0], slices.shape[1]
        factor = (n if scale_by_n else 1.0) / (m * n * n)
        loss = _LocalStatistic.apply(x, slices, t2, phase, target2, w2, bw, factor)
        _check_finite(loss)
        return loss
    z = x @ slices  # (N, M)
    m, k = z.shape[1], t.numel()
    sums = _CosSinSums.apply(z, t2, phase)  # (M, 2T): [sum cos | sum sin]
    if distributed:
        n = torch.tensor(float(z.shape[0]), dtype=z.dtype, device=z.device)
        packed = _distributed_sum(torch.cat([sums.flatten(), n.reshape(1)]))
        n = packed[-1]
        sq = (packed[:-1].reshape(sums.shape) / n - target2).square()  # (M, 2T) errors
        factor = (n if scale_by_n else 1.0) / m
    else:  # n (cf - target) in one op; the 1 / n^2 goes into the scalar factor
        n = z.shape[0]
        sq = sums.sub(target2, alpha=n).square()
        factor = (n if scale_by_n else 1.0) / (m * n * n)
    loss = sq.mv(w2).sum() * factor
    _check_finite(loss)
    if return_parts:
        return loss, (sq[:, :k] @ w).sum() * factor, (sq[:, k:] @ w).sum() * factor
    return loss


def _check_finite(loss: torch.Tensor) -> None:
    """Any NaN/Inf feature makes the statistic NaN: check the scalar, not the input.

    (On CPU through ``.item()``, which is cheaper than a tensor op; on an accelerator this
    is one scalar device-to-host copy per call.)
    """
    if loss.device.type == "cpu":
        finite = math.isfinite(loss.item())
    else:
        finite = bool(torch.isfinite(loss.detach()))
    if not finite:
        raise ValueError("features contain NaN or Inf values (or overflow in the projection)")


def epps_pulley(x: torch.Tensor, *, num_t: int = 17, t_max: float = 3.0) -> torch.Tensor:
    """Epps-Pulley statistic of 1-D samples ``x`` (N,) against N(0, 1) (the lejepa form).

    >>> g = torch.Generator().manual_seed(0)
    >>> gauss = float(epps_pulley(torch.randn(4096, generator=g)))  # E = 1.05 for any N
    >>> gauss < 5.0 < float(epps_pulley(torch.zeros(4096)))
    True
    """
    if x.ndim != 1:
        raise ValueError(f"epps_pulley expects 1-D samples, got shape {tuple(x.shape)}")
    one = torch.ones(1, 1, dtype=x.dtype, device=x.device)
    return sigreg(x[:, None], preset="lejepa", num_t=num_t, t_max=t_max, slices=one)


def gaussian_expectation(
    n: int,
    *,
    preset: Preset = "isogaussian-drl",
    num_t: int | None = None,
    t_max: float | None = None,
    weight: Literal["none", "gaussian"] | None = None,
    scale_by_n: bool | None = None,
) -> float:
    """Exact ``E[SIGReg]`` for ``n`` i.i.d. ``N(0, I)`` rows: ``sum_k w_k (1 - e^{-t_k^2}) / n``.

    (times ``n`` for ``scale_by_n``: the lejepa value does not depend on ``n``).

    >>> round(gaussian_expectation(100, preset="lejepa") - gaussian_expectation(10, preset="lejepa"), 12)
    0.0
    """
    cfg = _check_preset(preset)
    t = frequency_grid(
        cfg.num_t if num_t is None else num_t,
        cfg.t_max if t_max is None else t_max,
        cfg.grid,
        dtype=torch.float64,
    )
    w = frequency_weights(t, cfg.weight if weight is None else weight, cfg.grid)
    per_n = float(((1.0 - torch.exp(-(t**2))) * w).sum()) / n
    scale = cfg.scale_by_n if scale_by_n is None else scale_by_n
    return per_n * n if scale else per_n


def collapsed_value(
    projections: torch.Tensor, *, preset: Preset = "isogaussian-drl", n: int = 1
) -> float:
    """SIGReg of a batch whose rows all equal ``c``, given ``u_m^T c`` for each slice (M,).

    ``mean_m sum_k w_k [1 - 2 cos(t_k u^T c) e^{-t_k^2/2} + e^{-t_k^2}]`` (times ``n``
    for the lejepa preset).

    >>> round(collapsed_value(torch.zeros(3)), 6) == round(float(((1 - torch.exp(-0.5 * torch.linspace(-5, 5, 8, dtype=torch.float64) ** 2)) ** 2).mean()), 6)
    True
    """
    cfg = PRESETS[preset]
    t = frequency_grid(cfg.num_t, cfg.t_max, cfg.grid, dtype=torch.float64)
    w = frequency_weights(t, cfg.weight, cfg.grid)
    p = projections.to(torch.float64)[:, None]
    err = 1 - 2 * torch.cos(t * p) * torch.exp(-0.5 * t**2) + torch.exp(-(t**2))
    value = float((err @ w).mean())
    return value * n if cfg.scale_by_n else value


def combine_losses(
    task: torch.Tensor,
    reg: torch.Tensor,
    lam: float,
    convention: Literal["additive", "convex"] = "additive",
) -> torch.Tensor:
    """``task + lam * reg`` (released code) or ``(1 - lam) task + lam * reg`` (paper text)."""
    if lam < 0:
        raise ValueError(f"the SIGReg weight lambda must be >= 0, got {lam}")
    if convention == "additive":
        return task + lam * reg
    if convention == "convex":
        if lam > 1:
            raise ValueError(f"the convex convention needs 0 <= lambda <= 1, got {lam}")
        return (1 - lam) * task + lam * reg
    raise ValueError(f"unknown lambda convention {convention!r}; choose 'additive' or 'convex'")


class SIGReg(nn.Module):
    """SIGReg as a module: presets, seeded slices, per-view/pooled, DDP-global statistic.

    Args:
        preset: ``isogaussian-drl`` (default) or ``lejepa``.
        num_slices, num_t, t_max: Override the preset (``None``: the preset's value).
        seed: ``None`` draws fresh unseeded slices every call (the released code); an
            integer seeds the draw with ``seed + step`` where ``step`` counts training
            calls, so every DDP rank uses the same slices.
        views: For ``(V, N, D)`` inputs: ``pooled`` (one statistic on all rows) or
            ``per-view`` (mean of the per-view statistics).
        global_batch: All-reduce the CF sums across ranks before squaring.

    Examples:
        >>> reg = SIGReg(seed=0)
        >>> x = torch.randn(256, 16, requires_grad=True)
        >>> loss = reg(3.0 * x + 1.0)
        >>> loss.backward()
        >>> bool(x.grad.abs().sum() > 0), float(loss) > float(reg(torch.randn(256, 16)))
        (True, True)
    """

    def __init__(
        self,
        preset: Preset = "isogaussian-drl",
        num_slices: int | None = None,
        num_t: int | None = None,
        t_max: float | None = None,
        seed: int | None = None,
        views: Literal["pooled", "per-view"] = "pooled",
        global_batch: bool = False,
    ) -> None:
        super().__init__()
        cfg = _check_preset(preset)
        self.preset = preset
        self.num_slices = cfg.num_slices if num_slices is None else int(num_slices)
        self.num_t = cfg.num_t if num_t is None else int(num_t)
        self.t_max = cfg.t_max if t_max is None else float(t_max)
        if self.num_slices <= 0:
            raise ValueError(f"num_slices must be > 0, got {self.num_slices}")
        frequency_grid(self.num_t, self.t_max, cfg.grid)  # validates num_t / t_max
        if preset == "lejepa" and self.num_t % 2 == 0:
            raise ValueError(f"the lejepa preset needs an odd number of knots, got {self.num_t}")
        if views not in ("pooled", "per-view"):
            raise ValueError(f"views must be 'pooled' or 'per-view', got {views!r}")
        self.seed = seed
        self.views = views
        self.global_batch = global_batch
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def _generator(self) -> torch.Generator | None:
        if self.seed is None:
            return None
        return torch.Generator().manual_seed(int(self.seed) + int(self.step))

    def statistic(self, x: torch.Tensor, slices: torch.Tensor | None = None, **kw):
        """The statistic of one ``(N, D)`` batch with this module's settings."""
        return sigreg(
            x,
            preset=self.preset,
            num_slices=self.num_slices,
            num_t=self.num_t,
            t_max=self.t_max,
            slices=slices,
            global_batch=self.global_batch,
            **kw,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """SIGReg of ``(N, D)`` or ``(V, N, D)`` embeddings (one slice draw per call)."""
        if x.ndim == 3:
            d = x.shape[-1]
        elif x.ndim == 2:
            d = x.shape[1]
        else:
            raise ValueError(f"features must have shape (N, D) or (V, N, D), got {tuple(x.shape)}")
        slices = draw_slices(d, self.num_slices, generator=self._generator())
        if self.training and self.seed is not None:
            self.step += 1
        if x.ndim == 2:
            return self.statistic(x, slices)
        if self.views == "pooled":
            return self.statistic(x.reshape(-1, d), slices)
        return torch.stack([self.statistic(v, slices) for v in x]).mean()

    def extra_repr(self) -> str:
        return (
            f"preset={self.preset!r}, num_slices={self.num_slices}, num_t={self.num_t}, "
            f"t_max={self.t_max}, seed={self.seed}, views={self.views!r}"
        )


__all__ = [
    "PRESETS",
    "SIGReg",
    "check_features",
    "collapsed_value",
    "combine_losses",
    "draw_slices",
    "empirical_cf",
    "epps_pulley",
    "folded_grid",
    "frequency_grid",
    "frequency_weights",
    "gaussian_expectation",
    "sigreg",
]
