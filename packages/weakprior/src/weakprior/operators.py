"""Forward operators of the inverse problems, with their adjoints (paper Sec. 2).

The measurement model is ``y = A(x*) + eps``, ``eps ~ N(0, sigma^2 I)``, on images scaled to
``[-1, 1]`` (the paper uses ``sigma = 0.01``). Every operator here is linear and exposes

* :meth:`Operator.forward` -- ``A x``;
* :meth:`Operator.adjoint` -- ``A^T y`` (tested through ``<A x, y> = <x, A^T y>``);
* :meth:`Operator.observed` -- a 0/1 tensor in measurement space marking the entries that carry
  information (the kept pixels of an inpainting mask, every entry otherwise). The solvers fit
  and hold out *observed* entries only.

Operators: :class:`RandomInpainting` (Bernoulli keep-mask, ``keep_ratio``), :class:`BoxInpainting`
(a centred square hiding ``box_frac`` of the area), :class:`GaussianBlur` (circular convolution,
so the adjoint is exact), :class:`Downsample` (``factor x factor`` average pooling; the
super-resolution operator) and :class:`MatrixOperator` (a dense matrix on flat vectors, for the
closed-form Gaussian/GMM tests). :func:`measure` adds the Gaussian noise;
:func:`make_operator` builds the experiment's operators by name (:func:`operator_names`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F


def check_sigma(sigma: float) -> float:
    """Return ``sigma`` as a float, rejecting a negative noise level."""
    sigma = float(sigma)
    if not sigma >= 0.0:  # also rejects NaN
        raise ValueError(f"noise sigma must be >= 0, got {sigma}")
    return sigma


def check_image_range(x: torch.Tensor, low: float = -1.0, high: float = 1.0, tol: float = 1e-4):
    """Raise ``ValueError`` when an image leaves the prior's value range ``[low, high]``."""
    lo, hi = float(x.min()), float(x.max())
    if lo < low - tol or hi > high + tol:
        raise ValueError(
            f"images must lie in [{low:g}, {high:g}] (the diffusion prior's range); got values in [{lo:.3g}, {hi:.3g}]"
        )
    return x


class Operator:
    """A linear measurement operator on batches of images ``(B, C, H, W)``.

    Subclasses implement :meth:`forward` and :meth:`adjoint`; :meth:`observed` defaults to
    "every measurement entry is observed".
    """

    name = "operator"

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward(x)

    def observed(self, x_shape: tuple[int, ...]) -> torch.Tensor:
        """0/1 tensor over the measurement, 1 where an entry is observed."""
        return torch.ones(self.forward(torch.zeros(x_shape)).shape)

    def missing_pixels(self, x_shape: tuple[int, ...]) -> torch.Tensor | None:
        """0/1 image-space tensor of the unobserved pixels (inpainting only, else ``None``)."""
        return None


def _check_shape(x: torch.Tensor, shape: tuple[int, ...], what: str) -> None:
    if tuple(x.shape[1:]) != tuple(shape):
        raise ValueError(
            f"{what} shape {tuple(x.shape)} does not match the operator's (B, {', '.join(map(str, shape))})"
        )


class _MaskOperator(Operator):
    """``A x = m * x`` for a fixed 0/1 mask ``m`` of shape ``(B, C, H, W)``; self-adjoint."""

    def __init__(self, mask: torch.Tensor) -> None:
        self.mask = mask.float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape != self.mask.shape:
            raise ValueError(
                f"image shape {tuple(x.shape)} does not match the mask shape {tuple(self.mask.shape)}"
            )
        return self.mask * x

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        if y.shape != self.mask.shape:
            raise ValueError(
                f"measurement shape {tuple(y.shape)} does not match the mask shape {tuple(self.mask.shape)}"
            )
        return self.mask * y

    def observed(self, x_shape: tuple[int, ...]) -> torch.Tensor:
        if tuple(x_shape) != tuple(self.mask.shape):
            raise ValueError(
                f"shape {tuple(x_shape)} does not match the mask shape {tuple(self.mask.shape)}"
            )
        return self.mask.clone()

    def missing_pixels(self, x_shape: tuple[int, ...]) -> torch.Tensor:
        return 1.0 - self.observed(x_shape)


class MaskInpainting(_MaskOperator):
    """Inpainting with a given 0/1 keep-mask ``(B, C, H, W)`` (1 = observed).

    Every sample has its own mask, so several inpainting problems (random masks at different
    keep ratios, a box) can be stacked into one batch and solved at once by the per-sample
    solvers; :func:`stack_inpainting` builds one from a list of mask operators.

    Examples
    --------
    >>> op = MaskInpainting(torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]]))
    >>> op(torch.ones(1, 1, 2, 2)).sum().item(), op.missing_pixels((1, 1, 2, 2)).sum().item()
    (2.0, 2.0)
    """

    name = "mask"

    def __init__(self, mask: torch.Tensor) -> None:
        if mask.dim() != 4:
            raise ValueError(f"the mask must have shape (B, C, H, W), got {tuple(mask.shape)}")
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise ValueError("the mask must contain only 0 and 1")
        super().__init__(mask)


def stack_inpainting(ops: list[Operator]) -> MaskInpainting:
    """One :class:`MaskInpainting` whose batch is the concatenation of the masks of ``ops``.

    Examples
    --------
    >>> a = RandomInpainting((2, 1, 4, 4), 0.5, seed=0)
    >>> b = BoxInpainting((2, 1, 4, 4), 0.25)
    >>> stack_inpainting([a, b]).mask.shape
    torch.Size([4, 1, 4, 4])
    """
    if not ops or not all(isinstance(op, _MaskOperator) for op in ops):
        raise ValueError("stack_inpainting needs one or more inpainting (mask) operators")
    return MaskInpainting(torch.cat([op.mask for op in ops]))


class RandomInpainting(_MaskOperator):
    """Random inpainting: every pixel is kept independently with probability ``keep_ratio``.

    The mask is shared across channels and drawn per image from ``seed``.

    Examples
    --------
    >>> op = RandomInpainting((2, 1, 4, 4), keep_ratio=0.5, seed=0)
    >>> x = torch.ones(2, 1, 4, 4)
    >>> bool(((op(x) == 0) | (op(x) == 1)).all()), op(x).shape
    (True, torch.Size([2, 1, 4, 4]))
    """

    name = "random"

    def __init__(self, shape: tuple[int, int, int, int], keep_ratio: float, seed: int = 0):
        keep_ratio = float(keep_ratio)
        if not 0.0 < keep_ratio <= 1.0:
            raise ValueError(f"keep_ratio must lie in (0, 1], got {keep_ratio}")
        b, c, h, w = shape
        gen = torch.Generator().manual_seed(int(seed))
        mask = (torch.rand(b, 1, h, w, generator=gen) < keep_ratio).float().expand(b, c, h, w)
        super().__init__(mask.contiguous())
        self.keep_ratio = keep_ratio


class BoxInpainting(_MaskOperator):
    """Box inpainting: a centred square covering ``box_frac`` of the image area is hidden.

    Examples
    --------
    >>> op = BoxInpainting((1, 1, 10, 10), box_frac=0.36)
    >>> int(op.missing_pixels((1, 1, 10, 10)).sum())
    36
    """

    name = "box"

    def __init__(self, shape: tuple[int, int, int, int], box_frac: float = 0.5):
        box_frac = float(box_frac)
        if not 0.0 < box_frac < 1.0:
            raise ValueError(f"box_frac must lie in (0, 1), got {box_frac}")
        b, c, h, w = shape
        side_h = max(1, round(h * math.sqrt(box_frac)))
        side_w = max(1, round(w * math.sqrt(box_frac)))
        top, left = (h - side_h) // 2, (w - side_w) // 2
        mask = torch.ones(b, c, h, w)
        mask[:, :, top : top + side_h, left : left + side_w] = 0.0
        super().__init__(mask)
        self.box_frac = box_frac


def gaussian_kernel(size: int, sigma: float) -> torch.Tensor:
    """Normalised 2-D Gaussian kernel of odd ``size`` and width ``sigma`` (pixels)."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"blur kernel size must be a positive odd integer, got {size}")
    if not sigma > 0:
        raise ValueError(f"blur sigma must be > 0, got {sigma}")
    r = torch.arange(size, dtype=torch.float64) - size // 2
    g = torch.exp(-(r**2) / (2 * sigma**2))
    k = torch.outer(g, g)
    return (k / k.sum()).float()


class GaussianBlur(Operator):
    """Gaussian blur by circular convolution (kernel ``size``, width ``sigma``).

    The paper blurs 256 px images with a 61-tap, ``sigma = 3`` kernel; at 24 px the default is
    a 5-tap, ``sigma = 1`` kernel. Circular padding makes ``A`` a circulant matrix whose
    transpose is correlation with the same (symmetric) kernel.

    Examples
    --------
    >>> op = GaussianBlur(size=3, sigma=1.0)
    >>> float(op(torch.ones(1, 1, 6, 6)).mean())  # blur keeps constants
    1.0
    """

    name = "blur"

    def __init__(self, size: int = 5, sigma: float = 1.0) -> None:
        self.kernel = gaussian_kernel(size, sigma)
        self.pad = size // 2

    def _conv(self, x: torch.Tensor, kernel: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        if self.pad >= min(h, w):
            raise ValueError(f"blur kernel of size {2 * self.pad + 1} is too large for {h}x{w}")
        xp = F.pad(x.reshape(b * c, 1, h, w), [self.pad] * 4, mode="circular")
        return F.conv2d(xp, kernel[None, None].to(x)).reshape(b, c, h, w)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv(x, self.kernel)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        return self._conv(y, self.kernel.flip(0, 1))


class Downsample(Operator):
    """Super-resolution operator: ``factor x factor`` average pooling (adjoint: replicate / f^2).

    Examples
    --------
    >>> Downsample(2)(torch.arange(16.0).reshape(1, 1, 4, 4)).squeeze().tolist()
    [[2.5, 4.5], [10.5, 12.5]]
    """

    name = "sr"

    def __init__(self, factor: int = 2) -> None:
        factor = int(factor)
        if factor < 1:
            raise ValueError(f"super-resolution factor must be >= 1, got {factor}")
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if h % self.factor or w % self.factor:
            raise ValueError(
                f"image size {h}x{w} is not divisible by the super-resolution factor {self.factor}"
            )
        return F.avg_pool2d(x, self.factor)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        up = F.interpolate(y, scale_factor=self.factor, mode="nearest")
        return up / self.factor**2


class MatrixOperator(Operator):
    """``A x = x @ M^T`` for flat vectors ``(B, d)``; used with the analytic priors.

    Examples
    --------
    >>> op = MatrixOperator(torch.eye(3)[:2])
    >>> op(torch.tensor([[1.0, 2.0, 3.0]])).tolist()
    [[1.0, 2.0]]
    """

    name = "matrix"

    def __init__(self, matrix: torch.Tensor) -> None:
        if matrix.ndim != 2:
            raise ValueError(f"matrix must be 2-D, got shape {tuple(matrix.shape)}")
        self.matrix = matrix

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_shape(x, (self.matrix.shape[1],), "input")
        return x @ self.matrix.T.to(x)

    def adjoint(self, y: torch.Tensor) -> torch.Tensor:
        _check_shape(y, (self.matrix.shape[0],), "measurement")
        return y @ self.matrix.to(y)


def measure(
    operator: Operator, x: torch.Tensor, sigma: float = 0.01, seed: int = 0
) -> torch.Tensor:
    """Noisy measurement ``y = A(x) + sigma * eps`` with seeded Gaussian ``eps``."""
    sigma = check_sigma(sigma)
    clean = operator(x)
    # salted: a mask and the noise drawn from the same integer seed must be independent
    gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + 0x4015E)
    noise = torch.randn(clean.shape, generator=gen, dtype=clean.dtype)
    # keep unobserved entries exactly zero: they carry no measurement
    return clean + sigma * noise * operator.observed(tuple(x.shape)).to(clean)


def check_measurement(operator: Operator, x_shape: tuple[int, ...], y: torch.Tensor) -> None:
    """Raise ``ValueError`` when ``y`` does not have the shape ``A`` produces for ``x_shape``."""
    expected = tuple(operator(torch.zeros(x_shape)).shape)
    if tuple(y.shape) != expected:
        raise ValueError(
            f"measurement shape {tuple(y.shape)} does not match the operator output {expected}"
        )


EXTRA_OPERATORS = ("box", "blur", "sr2")


def operator_names(keeps: Sequence[float], extra: Sequence[str] = EXTRA_OPERATORS) -> list[str]:
    """Names of an experiment's operators: ``keep<r>`` per keep ratio, then ``extra``.

    >>> operator_names([0.2, 0.5], ["box", "sr2"])
    ['keep0.2', 'keep0.5', 'box', 'sr2']
    """
    unknown = sorted(set(extra) - set(EXTRA_OPERATORS))
    if unknown:
        raise ValueError(f"unknown operator(s) {unknown}; choose from {list(EXTRA_OPERATORS)}")
    return [f"keep{k:g}" for k in keeps] + list(extra)


def make_operator(name: str, shape: tuple[int, ...], seed: int = 0) -> Operator:
    """The operator named by :func:`operator_names` for images of ``shape``.

    ``keep<r>``: :class:`RandomInpainting` keeping a fraction ``r`` (mask drawn from ``seed``);
    ``box``: :class:`BoxInpainting` hiding 50 % of the area; ``blur``: 5-tap
    :class:`GaussianBlur` with sigma 1; ``sr2``: x2 :class:`Downsample`.

    >>> type(make_operator("keep0.3", (2, 1, 8, 8), seed=0)).__name__
    'RandomInpainting'
    """
    if name.startswith("keep"):
        return RandomInpainting(shape, float(name[4:]), seed=seed)
    if name == "box":
        return BoxInpainting(shape, 0.5)
    if name == "blur":
        return GaussianBlur(5, 1.0)
    if name == "sr2":
        return Downsample(2)
    raise ValueError(f"unknown operator {name!r}; use keep<ratio>, box, blur or sr2")
