"""External anchor: the DPS sampler and physics operators of ``deepinv`` (optional ``bench`` extra).

deepinv (https://deepinv.github.io) ships its own forward operators and its own DPS sampler. This
module connects both to this package so ``reproduce`` can run an *independent* DPS
implementation on the same measurements and with the same tiny prior:

* :func:`deepinv_physics` -- the deepinv ``Physics`` equal to one of our operators
  (``Inpainting`` for random / box masks, ``Blur(padding="circular")``, ``Downsampling`` with a
  2x2 box filter); the tests check ``A`` and ``A^T`` agree entry for entry;
* :class:`EpsDenoiser` -- turns an eps-model on the DDPM schedule into the denoiser deepinv
  expects, ``D(x0 + sigma n, sigma) ~ E[x0 | .]``. With ``abar(t)`` the DDPM schedule, an input at
  noise level ``sigma`` is the scaled state ``x_t / sqrt(abar_t)`` for the (continuous) ``t`` with
  ``sqrt((1 - abar_t) / abar_t) = sigma``; then ``D = x - sigma * eps(sqrt(abar_t) x, t)``;
* :class:`DeepinvDPSSolver` -- ``deepinv.sampling.DPS`` (VP schedule, DDPM solver, residual-norm
  guidance with weight ``zeta``) with that denoiser, returning a
  :class:`~weakprior.noise_optimisation.SolveResult`;
* :class:`DeepinvDiffPIRSolver` -- ``deepinv.sampling.DiffPIR`` (Zhu et al. 2023: denoise, then
  the proximal step of the data term, then re-noise) and :class:`DeepinvDDRMSolver` --
  ``deepinv.sampling.DDRM`` (Kawar et al. 2022: diffusion in the spectral domain of ``A``).
  Both samplers work on images in ``[0, 1]``; :class:`UnitRangeDenoiser` gives them our
  ``[-1, 1]`` denoiser in that range (``x01 = (x + 1) / 2``, so noise ``sigma`` on ``x01`` is
  ``2 sigma`` on ``x``) and :func:`unit_range_measurement` maps ``y = A x + n`` to
  ``A x01 + n / 2``; their shared set-up (that denoiser, the operator, the noise level, the
  measurement mapped to ``[0, 1]``) is the base class :class:`UnitRangeSampler`. DDRM needs an
  SVD of ``A``: deepinv's ``Inpainting`` is one (solved one image at a time, each with its own
  mask), and :func:`svd_physics` builds one from the dense matrix of a blur or a down-sampling
  (small images only).

deepinv is imported lazily; :func:`deepinv_available` says whether it is installed.
"""

from __future__ import annotations

import importlib.util

import torch

from .ddim import EpsModel, linear_alphas_cumprod
from .noise_optimisation import SolveResult
from .operators import (
    BoxInpainting,
    Downsample,
    GaussianBlur,
    MaskInpainting,
    Operator,
    RandomInpainting,
    check_measurement,
)


def deepinv_available() -> bool:
    """Whether the optional ``deepinv`` package is installed (without importing it)."""
    return importlib.util.find_spec("deepinv") is not None


def deepinv_physics(operator: Operator, x_shape: tuple[int, ...]):
    """The ``deepinv.physics.Physics`` computing the same ``A`` (and ``A^T``) as ``operator``."""
    import deepinv as dinv

    if isinstance(operator, (RandomInpainting, BoxInpainting, MaskInpainting)):
        return dinv.physics.Inpainting(img_size=tuple(x_shape[1:]), mask=operator.mask)
    if isinstance(operator, GaussianBlur):
        return dinv.physics.Blur(filter=operator.kernel[None, None], padding="circular")
    if isinstance(operator, Downsample):
        f = operator.factor
        box = torch.full((1, 1, f, f), 1.0 / f**2)
        return dinv.physics.Downsampling(
            img_size=tuple(x_shape[1:]), filter=box, factor=f, padding="valid"
        )
    raise ValueError(f"no deepinv counterpart for operator {type(operator).__name__}")


class EpsDenoiser(torch.nn.Module):
    """Denoiser ``D(x, sigma)`` (variance-exploding form) from an eps-model on a DDPM schedule.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> prior = GaussianPrior(torch.zeros(1), torch.eye(1) * 0.25)
    >>> d = EpsDenoiser(prior.eps)
    >>> x = torch.full((1, 1), 1.0)
    >>> round(float(d(x, torch.tensor(0.5))), 3)  # E[x0 | x0 + 0.5 n = 1] = 0.25 / (0.25 + 0.25)
    0.5
    """

    def __init__(self, eps_model: EpsModel, alphas_cumprod: torch.Tensor | None = None) -> None:
        super().__init__()
        abar = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod.double()
        self.eps_model = eps_model
        self.register_buffer("log_sigma", 0.5 * torch.log((1 - abar) / abar))

    def _continuous_t(self, sigma: torch.Tensor) -> torch.Tensor:
        """The fractional timestep whose DDPM noise level equals ``sigma`` (log-linear interp.)."""
        ls = sigma.double().clamp_min(1e-8).log()
        grid = self.log_sigma
        ls = ls.clamp(float(grid[0]), float(grid[-1]))
        i = torch.searchsorted(grid, ls).clamp(1, len(grid) - 1)
        w = (ls - grid[i - 1]) / (grid[i] - grid[i - 1])
        return (i - 1).double() + w

    def forward(self, x: torch.Tensor, sigma) -> torch.Tensor:
        sigma = torch.as_tensor(sigma, dtype=torch.float64).flatten()
        if sigma.numel() == 1:
            sigma = sigma.expand(x.shape[0])
        t = self._continuous_t(sigma)
        shape = (-1,) + (1,) * (x.ndim - 1)
        scale = (1 + sigma**2).rsqrt().to(x).view(shape)  # sqrt(abar_t) = 1 / sqrt(1 + sigma^2)
        eps = self.eps_model(scale * x, t.to(x.dtype))
        return x - sigma.to(x).view(shape) * eps


class DeepinvDPSSolver:
    """deepinv's DPS sampler over one of our eps-models, solving our measurement problem.

    Parameters
    ----------
    eps_model:
        The prior's ``eps_model(x_t, t)`` on the linear 1000-step schedule.
    operator:
        One of our operators; :func:`deepinv_physics` gives deepinv's copy.
    weight:
        deepinv's DPS guidance weight on ``grad ||y - A D(x_t)||`` (the analogue of zeta).
    num_steps:
        Steps of deepinv's DDPM solver (the paper's DPS: 1000).
    seed:
        Seed of deepinv's sampler.
    """

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        weight: float = 1.0,
        num_steps: int = 100,
        seed: int = 0,
    ) -> None:
        if not weight >= 0:
            raise ValueError(f"deepinv DPS weight must be >= 0, got {weight}")
        if num_steps < 2:
            raise ValueError(f"deepinv DPS num_steps must be >= 2, got {num_steps}")
        self.denoiser = EpsDenoiser(eps_model)
        self.operator, self.weight = operator, float(weight)
        self.num_steps, self.seed = int(num_steps), int(seed)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """One deepinv DPS sample per measurement in the batch."""
        import deepinv as dinv

        x_shape = tuple(self.operator.adjoint(y).shape) if x_shape is None else tuple(x_shape)
        check_measurement(self.operator, x_shape, y)
        physics = deepinv_physics(self.operator, x_shape)
        rng = torch.Generator().manual_seed(self.seed)
        sampler = dinv.sampling.DPS(
            self.denoiser, num_steps=self.num_steps, weight=self.weight,
            dtype=torch.float32, rng=rng, minus_one_one=False,
        )  # fmt: skip
        x = sampler(y, physics, x_init=x_shape, seed=self.seed)
        return SolveResult(x.detach().float(), self.num_steps, 2 * self.num_steps)


class UnitRangeDenoiser(torch.nn.Module):
    """A ``[-1, 1]`` denoiser seen from ``[0, 1]``: ``D01(u, s) = (D(2u - 1, 2s) + 1) / 2``.

    Examples
    --------
    >>> d = UnitRangeDenoiser(lambda x, sigma: 0.5 * x)  # shrink towards 0 in [-1, 1]
    >>> float(d(torch.tensor([1.0]), 0.1))  # 1 in [0, 1] is 1 in [-1, 1], shrunk to 0.5 -> 0.75
    0.75
    """

    def __init__(self, denoiser) -> None:
        super().__init__()
        self.denoiser = denoiser

    def forward(self, u: torch.Tensor, sigma) -> torch.Tensor:
        sigma = torch.as_tensor(sigma, dtype=torch.float64)
        return (self.denoiser(2 * u - 1, 2 * sigma) + 1) / 2


def unit_range_measurement(operator: Operator, y: torch.Tensor, x_shape) -> torch.Tensor:
    """``y = A x + n`` on ``[-1, 1]`` images as a measurement of ``x01 = (x + 1) / 2``:
    ``(y + A 1) / 2 = A x01 + n / 2`` (noise ``sigma / 2``)."""
    return (y + operator(torch.ones(tuple(x_shape), dtype=y.dtype))) / 2


def svd_physics(operator: Operator, image_shape: tuple[int, ...], sigma: float = 0.0):
    """A ``deepinv.physics.DecomposablePhysics`` equal to ``operator`` (the same for every image).

    ``A = U diag(s) V^T`` from the SVD of the dense ``m x d`` matrix of ``A`` on one image of
    shape ``image_shape`` ``(C, H, W)``; ``d = C H W`` must be small (a few thousand at most).
    Measurements are flattened to ``(B, m)`` with ``m = min(m, d)`` (the thin SVD, which is
    ``A`` itself on the range when ``m <= d``).
    """
    import deepinv as dinv

    d = int(torch.tensor(image_shape).prod())
    if d > 4096:
        raise ValueError(f"svd_physics builds a dense {d} x {d} matrix; {d} pixels is too many")
    basis = torch.eye(d, dtype=torch.float64).view(d, *image_shape)
    a = operator(basis).reshape(d, -1).T  # (m, d): column j = A e_j
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    u, s, v = u.float(), s.float(), vh.T.float()

    def flat(x):
        return x.reshape(x.shape[0], -1)

    return dinv.physics.DecomposablePhysics(
        U=lambda z: z @ u.T,
        U_adjoint=lambda y: flat(y) @ u,
        V=lambda z: (z @ v.T).view(z.shape[0], *image_shape),
        V_adjoint=lambda x: flat(x) @ v,
        mask=s[None],
        noise_model=dinv.physics.GaussianNoise(sigma),
    )


class UnitRangeSampler:
    """What deepinv's DiffPIR and DDRM share: our prior and measurement seen from ``[0, 1]``.

    Both samplers take a denoiser on ``[0, 1]`` images and a measurement ``A x01 + n`` whose
    noise level they are told. This base class holds the prior as that denoiser
    (:class:`UnitRangeDenoiser` over :class:`EpsDenoiser`), the operator, the noise level
    ``sigma`` on ``[-1, 1]`` (``sigma / 2`` on ``[0, 1]``), the number of steps and the seed, and
    :meth:`unit_range_problem` checks a measurement and maps it to ``[0, 1]``
    (:func:`unit_range_measurement`). Subclasses implement ``solve``.

    Parameters
    ----------
    eps_model:
        The prior's ``eps_model(x_t, t)`` on the linear 1000-step schedule.
    operator:
        One of our operators.
    sigma:
        Measurement noise on ``[-1, 1]``.
    num_steps:
        Steps of the sampler (at least 2).
    seed:
        Seed of the sampler.

    Examples
    --------
    >>> from weakprior.operators import Downsample
    >>> s = UnitRangeSampler(lambda x, t: 0 * x, Downsample(2), sigma=0.02, num_steps=10)
    >>> shape, y01 = s.unit_range_problem(-torch.ones(1, 1, 2, 2), (1, 1, 4, 4))
    >>> shape, float(y01.abs().max()), s.unit_sigma  # -1 on [-1, 1] is 0 on [0, 1]
    ((1, 1, 4, 4), 0.0, 0.01)
    """

    name = "sampler"  # in error messages
    needs_noise = False  # whether sigma must be > 0 (DiffPIR's data weight divides by it)

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        sigma: float = 0.01,
        num_steps: int = 100,
        seed: int = 0,
    ) -> None:
        if num_steps < 2:
            raise ValueError(f"{self.name} num_steps must be >= 2, got {num_steps}")
        if self.needs_noise and not sigma > 0:
            raise ValueError(f"{self.name} needs a noise level sigma > 0, got {sigma}")
        if not sigma >= 0:
            raise ValueError(f"{self.name} noise level sigma must be >= 0, got {sigma}")
        self.denoiser = UnitRangeDenoiser(EpsDenoiser(eps_model))
        self.operator, self.sigma, self.num_steps = operator, float(sigma), int(num_steps)
        self.seed = int(seed)

    @property
    def unit_sigma(self) -> float:
        """The noise level on ``[0, 1]`` images, ``sigma / 2``."""
        return self.sigma / 2

    def unit_range_problem(
        self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None
    ) -> tuple[tuple[int, ...], torch.Tensor]:
        """``(x_shape, y01)``: the checked image shape and the measurement of ``(x + 1) / 2``."""
        x_shape = tuple(self.operator.adjoint(y).shape) if x_shape is None else tuple(x_shape)
        check_measurement(self.operator, x_shape, y)
        return x_shape, unit_range_measurement(self.operator, y, x_shape)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        raise NotImplementedError


class DeepinvDiffPIRSolver(UnitRangeSampler):
    """deepinv's DiffPIR (Zhu et al., CVPR 2023) over one of our eps-models.

    Parameters
    ----------
    eps_model:
        The prior's ``eps_model(x_t, t)`` on the linear 1000-step schedule.
    operator:
        One of our operators; :func:`deepinv_physics` gives deepinv's copy.
    sigma:
        Measurement noise on ``[-1, 1]`` (deepinv sees ``sigma / 2`` on ``[0, 1]``).
    num_steps:
        DiffPIR iterations (``max_iter``; the DiffPIR paper uses 100).
    zeta, lambda_:
        DiffPIR's re-noising and data-weight hyperparameters (deepinv's defaults 0.1 and 7).
    seed:
        Seed of the sampler.

    References
    ----------
    Zhu et al., "Denoising Diffusion Models for Plug-and-Play Image Restoration", CVPR 2023.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> from weakprior.operators import RandomInpainting, measure
    >>> g = GaussianPrior(torch.zeros(16), 0.2 * torch.eye(16) + 0.1)
    >>> eps = lambda x, t: g.eps(x.reshape(len(x), -1), t.round().long()).reshape(x.shape)
    >>> op = RandomInpainting((2, 1, 4, 4), 0.5, seed=0)
    >>> y = measure(op, torch.zeros(2, 1, 4, 4), 0.01)
    >>> DeepinvDiffPIRSolver(eps, op, num_steps=10).solve(y, (2, 1, 4, 4)).x.shape
    torch.Size([2, 1, 4, 4])
    """

    name, needs_noise = "DiffPIR", True

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        sigma: float = 0.01,
        num_steps: int = 100,
        zeta: float = 0.1,
        lambda_: float = 7.0,
        seed: int = 0,
    ) -> None:
        super().__init__(eps_model, operator, sigma, num_steps, seed)
        self.zeta, self.lambda_ = float(zeta), float(lambda_)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """One DiffPIR reconstruction per measurement in the batch, on ``[-1, 1]``."""
        import deepinv as dinv

        x_shape, y01 = self.unit_range_problem(y, x_shape)
        physics = deepinv_physics(self.operator, x_shape)
        physics.noise_model = dinv.physics.GaussianNoise(self.unit_sigma)
        sampler = dinv.sampling.DiffPIR(
            self.denoiser, dinv.optim.data_fidelity.L2(), sigma=self.unit_sigma,
            max_iter=self.num_steps, zeta=self.zeta, lambda_=self.lambda_,
        )  # fmt: skip
        torch.manual_seed(self.seed)
        with torch.no_grad():
            x01 = sampler(y01, physics)
        return SolveResult((2 * x01 - 1).detach().float(), self.num_steps, self.num_steps)


class DeepinvDDRMSolver(UnitRangeSampler):
    """deepinv's DDRM (Kawar et al., NeurIPS 2022) over one of our eps-models.

    Inpainting is solved image by image with deepinv's ``Inpainting`` (its own SVD; every image
    has its own mask); blur and down-sampling through :func:`svd_physics`.

    Parameters
    ----------
    eps_model:
        The prior's ``eps_model(x_t, t)`` on the linear 1000-step schedule.
    operator:
        One of our operators.
    sigma:
        Measurement noise on ``[-1, 1]`` (deepinv sees ``sigma / 2`` on ``[0, 1]``).
    num_steps:
        Noise levels, ``linspace(1, 0, num_steps)`` on ``[0, 1]`` (deepinv's default schedule).
    eta, etab:
        DDRM's hyperparameters (deepinv's defaults 0.85 and 1).
    seed:
        Seed of the sampler.

    References
    ----------
    Kawar, Elad, Ermon, Song, "Denoising Diffusion Restoration Models", NeurIPS 2022.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> from weakprior.operators import Downsample, measure
    >>> g = GaussianPrior(torch.zeros(16), 0.2 * torch.eye(16) + 0.1)
    >>> eps = lambda x, t: g.eps(x.reshape(len(x), -1), t.round().long()).reshape(x.shape)
    >>> y = measure(Downsample(2), torch.zeros(2, 1, 4, 4), 0.01)
    >>> DeepinvDDRMSolver(eps, Downsample(2), num_steps=10).solve(y, (2, 1, 4, 4)).x.shape
    torch.Size([2, 1, 4, 4])
    """

    name = "DDRM"

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        sigma: float = 0.01,
        num_steps: int = 100,
        eta: float = 0.85,
        etab: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__(eps_model, operator, sigma, num_steps, seed)
        self.eta, self.etab = float(eta), float(etab)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """One DDRM sample per measurement in the batch, on ``[-1, 1]``."""
        import deepinv as dinv
        import numpy as np

        x_shape, y01 = self.unit_range_problem(y, x_shape)
        sampler = dinv.sampling.DDRM(
            self.denoiser, sigmas=np.linspace(1, 0, self.num_steps), eta=self.eta, etab=self.etab
        )
        noise = dinv.physics.GaussianNoise(self.unit_sigma)
        torch.manual_seed(self.seed)
        with torch.no_grad():
            if isinstance(self.operator, (RandomInpainting, BoxInpainting, MaskInpainting)):
                out = []
                for i in range(x_shape[0]):
                    physics = dinv.physics.Inpainting(
                        img_size=x_shape[1:], mask=self.operator.mask[i : i + 1], noise_model=noise
                    )
                    out.append(sampler(y01[i : i + 1], physics))
                x01 = torch.cat(out)
            else:
                physics = svd_physics(self.operator, x_shape[1:], self.unit_sigma)
                x01 = sampler(y01, physics).view(x_shape)
        return SolveResult((2 * x01 - 1).detach().float(), self.num_steps, self.num_steps)
