"""One-dimensional Fourier bases of LoRFS, with exact derivatives, Grams and quadrature.

Paper: N. Kaminsky, D. Freedman, K. Radinsky, "Overcoming PINNs Failure Modes in High
Dimension with Low-Rank Fourier Sum" (LoRFS), ICML 2026, https://openreview.net/forum?id=fq3yjso8Tn

Every axis of the box is expanded in complex exponentials ``e^{i omega k (s - a)}``,
``k = -K..K``, ``omega = 2 pi / P``. The kinds differ only in the period ``P`` and in
which coefficient vectors are allowed (a linear *synthesis* map from the free parameters):

- ``periodic``: ``P = b - a``, all ``2K+1`` coefficients free (periodic boundary conditions
  hold by construction);
- ``extension``: Fourier extension for non-periodic axes such as time, ``P = gamma (b - a)``;
- ``sine``: ``P = 2 (b - a)`` and ``c_{-k} = -c_k``, i.e. ``sum_k p_k sin(k pi (s-a)/(b-a))``:
  homogeneous Dirichlet conditions hold term by term;
- ``cosine``: ``P = 2 (b - a)`` and ``c_{-k} = c_k`` (homogeneous Neumann conditions).

Map to the method (research notes, Sec. B1):

- derivative multipliers ``d^m/ds^m -> (i omega k)^m`` .......... :meth:`FourierAxis.multiplier`
- closed-form 1-D Gram ``int e^{i omega (k -+ l)(s-a)} ds`` ...... :meth:`FourierAxis.gram`
- point evaluation (initial conditions) .......................... :meth:`FourierAxis.point_gram`
- exact 1-D quadrature rule for trig polynomials (nonlinear terms) :meth:`FourierAxis.exact_quadrature`
- projection of a periodic function by FFT ....................... :meth:`FourierAxis.project`
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

KINDS = ("periodic", "extension", "sine", "cosine")
CDTYPE = torch.complex128
RDTYPE = torch.float64


def positive_int(value: object, what: str) -> int:
    """``value`` if it is a positive ``int`` (not a bool), else ``ValueError`` naming ``what``.

    >>> positive_int(3, "rank")
    3
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


class FourierAxis:
    """One coordinate of the box and its Fourier basis.

    Parameters
    ----------
    name:
        Coordinate name (``"t"``, ``"x"``, ``"x3"``...).
    domain:
        Interval ``(a, b)`` with ``b > a``.
    modes:
        ``K >= 1``: wavenumbers ``-K..K`` (sine: ``1..K``, cosine: ``0..K``).
    kind:
        ``"periodic"``, ``"extension"``, ``"sine"`` (Dirichlet) or ``"cosine"`` (Neumann).
    extension:
        Fourier-extension factor ``gamma > 1`` (``kind="extension"`` only): ``P = gamma (b-a)``.
    period:
        Optional check for periodic axes: must equal ``b - a``.

    References
    ----------
    Kaminsky, Freedman, Radinsky, ICML 2026 (LoRFS).

    Examples
    --------
    >>> ax = FourierAxis("x", (0.0, 2 * math.pi), modes=2)
    >>> ax.size, ax.n_params, round(ax.omega, 6)
    (5, 5, 1.0)
    >>> ax.multiplier(1)[3]  # d/dx of e^{ix} is i e^{ix}
    tensor(0.+1.j, dtype=torch.complex128)
    >>> bool(torch.allclose(ax.gram(), 2 * math.pi * torch.eye(5, dtype=torch.complex128)))
    True
    """

    def __init__(
        self,
        name: str,
        domain: tuple[float, float],
        modes: int,
        kind: str = "periodic",
        extension: float = 2.0,
        period: float | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"axis {name!r}: kind must be one of {KINDS}, got {kind!r}")
        self.name = str(name)
        self.modes = positive_int(modes, f"axis {name!r}: modes")
        a, b = (float(v) for v in domain)
        if not (math.isfinite(a) and math.isfinite(b)) or b <= a:
            raise ValueError(
                f"axis {name!r}: domain must be a finite interval (a, b) with b > a, got {domain!r}"
            )
        self.a, self.b = a, b
        self.kind = kind
        length = b - a
        if kind == "periodic":
            if period is not None:
                if not period > 0:
                    raise ValueError(f"axis {name!r}: period must be positive, got {period!r}")
                if abs(period - length) > 1e-12 * max(1.0, length):
                    raise ValueError(
                        f"axis {name!r}: periodic axis length {length:g} differs from its period {period:g}"
                    )
            self.period = length
        elif kind == "extension":
            if not extension > 1.0:
                raise ValueError(f"axis {name!r}: extension factor must be > 1, got {extension!r}")
            self.period = float(extension) * length
        else:
            self.period = 2.0 * length
        self.extension = self.period / length
        self.omega = 2.0 * math.pi / self.period

    # ------------------------------------------------------------------ layout

    def __repr__(self) -> str:
        return f"FourierAxis({self.name!r}, ({self.a:g}, {self.b:g}), modes={self.modes}, kind={self.kind!r})"

    @property
    def length(self) -> float:
        return self.b - self.a

    @property
    def size(self) -> int:
        """Number of exponential coefficients, ``2K + 1``."""
        return 2 * self.modes + 1

    @property
    def n_params(self) -> int:
        """Number of free (complex) parameters per rank-one factor."""
        return {"sine": self.modes, "cosine": self.modes + 1}.get(self.kind, self.size)

    def wavenumbers(self) -> torch.Tensor:
        """Integer wavenumbers ``-K..K``, shape ``(2K+1,)``."""
        return torch.arange(-self.modes, self.modes + 1, dtype=RDTYPE)

    def synthesis(self) -> torch.Tensor:
        """Matrix ``S`` of shape ``(2K+1, n_params)`` mapping free parameters to coefficients."""
        k0 = self.modes
        if self.kind in ("periodic", "extension"):
            return torch.eye(self.size, dtype=CDTYPE)
        s = torch.zeros(self.size, self.n_params, dtype=CDTYPE)
        if self.kind == "sine":  # sin(k theta) = (e^{ik theta} - e^{-ik theta}) / 2i
            for j, k in enumerate(range(1, self.modes + 1)):
                s[k0 + k, j] = 1 / 2j
                s[k0 - k, j] = -1 / 2j
        else:  # cos(k theta) = (e^{ik theta} + e^{-ik theta}) / 2
            s[k0, 0] = 1.0
            for j, k in enumerate(range(1, self.modes + 1), start=1):
                s[k0 + k, j] = 0.5
                s[k0 - k, j] = 0.5
        return s

    # ------------------------------------------------------------------ operators

    def multiplier(self, order: int) -> torch.Tensor:
        """Exact multiplier of ``d^m/ds^m`` on the coefficients: ``(i omega k)^m``, shape ``(2K+1,)``."""
        if isinstance(order, bool) or not isinstance(order, int) or order < 0:
            raise ValueError(f"derivative order must be a non-negative integer, got {order!r}")
        return (1j * self.omega * self.wavenumbers().to(CDTYPE)) ** order

    def gram(self, conj: bool = True, modes: int | None = None) -> torch.Tensor:
        """Closed-form Gram ``G[k, l] = int_a^b e^{i omega k (s-a)} conj?(e^{i omega l (s-a)}) ds``.

        ``conj=True`` gives the Hermitian inner-product Gram (difference ``k - l``),
        ``conj=False`` the bilinear one (sum ``k + l``) used for ``||Re h||^2``.
        ``modes`` overrides ``K`` (e.g. for products of sums). Shape ``(2K+1, 2K+1)``.
        """
        kk = torch.arange(
            -(self.modes if modes is None else modes),
            (self.modes if modes is None else modes) + 1,
            dtype=RDTYPE,
        )
        diff = kk[:, None] - kk[None, :] if conj else kk[:, None] + kk[None, :]
        return self._integral_of_exponentials(diff)

    def _integral_of_exponentials(self, freq: torch.Tensor) -> torch.Tensor:
        """``int_a^b e^{i omega q (s-a)} ds`` for integer ``q`` (any shape)."""
        theta = self.omega * freq * self.length
        zero = freq == 0
        safe = torch.where(zero, torch.ones_like(freq), freq)
        val = (torch.exp(1j * theta) - 1) / (1j * self.omega * safe)
        val = torch.where(zero, torch.full_like(val, self.length), val)
        if self.kind == "periodic":  # exact zeros (Parseval) rather than round-off
            val = torch.where(zero, val, torch.zeros_like(val))
        return val.to(CDTYPE)

    def basis_matrix(self, s: torch.Tensor, modes: int | None = None) -> torch.Tensor:
        """``E[n, k] = e^{i omega k (s_n - a)}``, shape ``(N, 2K+1)``."""
        kk = torch.arange(
            -(self.modes if modes is None else modes),
            (self.modes if modes is None else modes) + 1,
            dtype=RDTYPE,
        )
        s = torch.as_tensor(s, dtype=RDTYPE).reshape(-1, 1)
        return torch.exp(1j * self.omega * (s - self.a) * kk[None, :])

    def point_gram(self, s0: float) -> torch.Tensor:
        """Rank-one "Gram" ``e(s0) e(s0)^H`` of point evaluation at ``s0`` (initial conditions)."""
        e = self.basis_matrix(torch.tensor([float(s0)]))[0]
        return e[:, None] * e.conj()[None, :]

    def evaluate(self, coeffs: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        """Evaluate expansions ``coeffs`` of shape ``(..., 2K+1)`` at points ``s`` -> ``(..., N)``."""
        modes = (coeffs.shape[-1] - 1) // 2
        return coeffs @ self.basis_matrix(s, modes).T

    # ------------------------------------------------------------------ quadrature

    def exact_quadrature(self, degree: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Nodes and real weights integrating ``e^{i omega q (s-a)}``, ``|q| <= degree``, exactly over ``[a, b]``.

        Periodic axes: the trapezoid rule on ``degree + 1`` equispaced nodes. Other kinds:
        ``N = 2 degree + 1`` equispaced nodes over the whole period ``[a, a + P)`` (some lie in
        the extension region, where the expansion is still defined) with DFT weights
        ``w_n = (1/N) sum_q m_q e^{-i omega q (s_n - a)}``, ``m_q`` the exact moments.
        """
        degree = int(degree)
        if degree < 0:
            raise ValueError(f"quadrature degree must be >= 0, got {degree}")
        if self.kind == "periodic":
            n = degree + 1
            nodes = self.a + self.length * torch.arange(n, dtype=RDTYPE) / n
            return nodes, torch.full((n,), self.length / n, dtype=RDTYPE)
        n = 2 * degree + 1
        nodes = self.a + self.period * torch.arange(n, dtype=RDTYPE) / n
        q = torch.arange(-degree, degree + 1, dtype=RDTYPE)
        moments = self._integral_of_exponentials(q)  # (2M+1,)
        phase = torch.exp(-1j * self.omega * (nodes[:, None] - self.a) * q[None, :])
        weights = (phase @ moments).real / n
        return nodes, weights

    def project(
        self, fn: Callable[[torch.Tensor], torch.Tensor], modes: int | None = None
    ) -> torch.Tensor:
        """Fourier coefficients (``-K..K``) of a periodic function by FFT, shape ``(2K+1,)``."""
        if self.kind != "periodic":
            raise ValueError(
                f"axis {self.name!r}: project() needs a periodic axis, not {self.kind!r}"
            )
        k = self.modes if modes is None else modes
        n = 4 * k + 4
        s = self.a + self.length * torch.arange(n, dtype=RDTYPE) / n
        vals = torch.as_tensor(fn(s)).to(CDTYPE)
        fhat = torch.fft.fft(vals) / n
        idx = torch.arange(-k, k + 1) % n
        return fhat[idx]
