"""Group actions of C4 (2D) and the chiral octahedral group O (3D) on grid fields.

Paper: "ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers"
(Wei, List, Thuerey, ICML 2026), Sec. "Group action": ``[L_g u](x) = R_g u(R_g^{-1} x)``.

Conventions (the one place they are defined; every test and metric uses :func:`rotate`):

* 2D arrays are ``(B, C, H, W)``, 3D arrays ``(B, C, D, H, W)``. Coordinates are ordered
  ``(x, y[, z])`` with x along W, y along H and z along D; a vector channel tuple lists the
  components in that order, ``(u_x, u_y[, u_z])``.
* A group element is a signed permutation matrix ``R`` with ``det R = +1`` acting on
  coordinate vectors about the grid centre. ``R = [[0, 1], [-1, 0]]`` (the generator of C4)
  is exactly ``torch.rot90(x, 1, dims=(-2, -1))`` for scalars, so it maps
  ``(u_x, u_y) -> (u_y, -u_x)`` (the sign-convention trap of the notes).

Map of the section to functions:

1. ``s(R^{-1} x)`` (scalars, grid only): :func:`transform_grid`.
2. ``R u(R^{-1} x)`` (vectors and proper-rotation pseudovectors) and ``R T R^T`` (rank-2
   tensors): :func:`rotate` with a :class:`FieldSpec`.
3. C4 and the 24 elements of O as words in 90-degree generators: :func:`c4`,
   :func:`octahedral`.
4. ``max_g ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)||``: :func:`equivariance_error`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

#: generator of C4: a -90 degree rotation of (x, y), the action of torch.rot90(k=1, dims=(H, W))
R_C4 = ((0, 1), (-1, 0))
#: generators of O: 90-degree rotations about the x and the z axis (coordinates (x, y, z))
R_OX = ((1, 0, 0), (0, 0, -1), (0, 1, 0))
R_OZ = ((0, -1, 0), (1, 0, 0), (0, 0, 1))


@dataclass(frozen=True)
class FieldSpec:
    """Which channels of a field are scalars, vectors, pseudovectors and rank-2 tensors.

    Parameters
    ----------
    n_channels:
        Total number of channels C.
    scalars:
        Channel indices of scalar fields.
    vectors:
        Tuples of ``d`` channel indices ``(u_x, u_y[, u_z])``, one per vector field.
    pseudovectors:
        Like ``vectors`` (for proper rotations a pseudovector transforms as a vector).
    tensors:
        Tuples of ``d*d`` channel indices of rank-2 tensors, row-major ``(T_xx, T_xy, ...)``.

    Examples
    --------
    >>> spec = FieldSpec(4, vectors=((0, 1), (2, 3)))
    >>> spec.dim, spec.n_vectors
    (2, 2)
    """

    n_channels: int
    scalars: tuple[int, ...] = ()
    vectors: tuple[tuple[int, ...], ...] = ()
    pseudovectors: tuple[tuple[int, ...], ...] = ()
    tensors: tuple[tuple[int, ...], ...] = ()
    dim: int = field(default=0)

    def __post_init__(self) -> None:
        groups = [*self.vectors, *self.pseudovectors]
        dims = {len(v) for v in groups} | {round(len(t) ** 0.5) for t in self.tensors}
        if any(len(t) not in (4, 9) for t in self.tensors):
            raise ValueError("a rank-2 tensor needs 4 (2D) or 9 (3D) channels")
        if len(dims) > 1 or dims - {2, 3}:
            raise ValueError(f"vector/tensor channel groups must all be 2D or all 3D, got {dims}")
        object.__setattr__(self, "dim", self.dim or (dims.pop() if dims else 0))
        used = [
            *self.scalars,
            *(c for g in groups for c in g),
            *(c for t in self.tensors for c in t),
        ]
        if len(set(used)) != len(used):
            raise ValueError(f"a channel is listed twice in the field spec: {sorted(used)}")
        if any(c < 0 or c >= self.n_channels for c in used):
            raise ValueError(f"field spec uses channels outside 0..{self.n_channels - 1}")
        if len(used) != self.n_channels:
            raise ValueError(
                f"field spec covers {len(used)} of {self.n_channels} channels; every channel "
                "must be declared scalar, vector, pseudovector or tensor"
            )

    @property
    def all_vectors(self) -> tuple[tuple[int, ...], ...]:
        """Vectors and pseudovectors (they act alike under proper rotations)."""
        return (*self.vectors, *self.pseudovectors)

    @property
    def n_vectors(self) -> int:
        return len(self.all_vectors)

    def check(self, x: torch.Tensor) -> None:
        """Raise ``ValueError`` if ``x`` does not fit the spec (channels, ndim)."""
        if x.shape[1] != self.n_channels:
            raise ValueError(
                f"field has {x.shape[1]} channels but the field spec declares {self.n_channels}"
            )
        if self.dim and x.ndim != 2 + self.dim:
            raise ValueError(
                f"a {self.dim}D field spec needs a {2 + self.dim}-dim (B, C, ...) tensor, "
                f"got {x.ndim} dims"
            )


def as_matrix(r: Sequence[Sequence[int]] | torch.Tensor) -> torch.Tensor:
    """A group element as an integer tensor, checked to be a proper signed permutation."""
    m = torch.as_tensor(r, dtype=torch.int64)
    d = m.shape[0]
    ok = m.shape == (d, d) and bool(((m.abs().sum(0) == 1) & (m.abs().sum(1) == 1)).all())
    if not ok or round(float(torch.det(m.double()))) != 1:
        raise ValueError(f"not a proper signed permutation matrix: {m.tolist()}")
    return m


def transform_grid(x: torch.Tensor, r: Sequence[Sequence[int]] | torch.Tensor) -> torch.Tensor:
    """Move grid values: ``out(q) = x(R^T q)`` on the last ``d`` (spatial) axes.

    The coordinate ``a`` (x, y, z) lives on tensor axis ``-1 - a``. Leading axes are batch and
    channels. Rotating needs equal sizes on the permuted axes (square / cubic grids).
    """
    m = as_matrix(r)
    d = m.shape[0]
    nd = x.ndim
    perm = list(range(nd))
    flips = []
    for b in range(d):  # output coordinate b comes from input coordinate a with sign s
        a = int(m[b].abs().argmax())
        s = int(m[b, a])
        perm[nd - 1 - b] = nd - 1 - a
        if s < 0:
            flips.append(nd - 1 - b)
    sizes = {x.shape[nd - 1 - b] for b in range(d) if perm[nd - 1 - b] != nd - 1 - b}
    if len(sizes) > 1:
        raise ValueError(
            f"rotating needs a square/cubic grid, got spatial shape {tuple(x.shape[-d:])}"
        )
    out = x.permute(perm)
    return out.flip(flips) if flips else out


def rotate_components(
    x: torch.Tensor, spec: FieldSpec, r: Sequence[Sequence[int]] | torch.Tensor, axis: int = 1
) -> torch.Tensor:
    """Rotate the vector / tensor components on channel axis ``axis`` (values only, no grid)."""
    m = as_matrix(r).to(x.dtype) if x.is_floating_point() else as_matrix(r)
    out = x.clone()
    xm = x.movedim(axis, -1)
    om = out.movedim(axis, -1)
    for vec in spec.all_vectors:
        om[..., list(vec)] = xm[..., list(vec)] @ m.T
    for ten in spec.tensors:
        d = m.shape[0]
        t = xm[..., list(ten)].reshape(*xm.shape[:-1], d, d)
        om[..., list(ten)] = (m @ t @ m.T).reshape(*xm.shape[:-1], d * d)
    return out


def rotate(
    x: torch.Tensor, spec: FieldSpec, r: Sequence[Sequence[int]] | torch.Tensor | int
) -> torch.Tensor:
    """Apply ``L_g`` to a field ``(B, C, *grid)``: move the grid and rotate the components.

    ``r`` is a group element (signed permutation matrix) or, in 2D, an integer ``k`` meaning
    ``g^k`` for the C4 generator :data:`R_C4`.

    Examples
    --------
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> u = torch.zeros(1, 2, 2, 2); u[0, 0, 0, 1] = 1.0  # u_x = 1 at (x=1, y=0)
    >>> rotate(u, spec, 1)[0, :, 0, 0].tolist()  # moved to (x=0, y=0), now pointing to -y
    [0.0, -1.0]
    >>> bool(torch.equal(rotate(rotate(u, spec, 2), spec, 2), u))
    True
    """
    if isinstance(r, int):
        r = c4()[r % 4]
    spec.check(x)
    return rotate_components(transform_grid(x, r), spec, r, axis=1)


def _compose(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def c4() -> list[torch.Tensor]:
    """The four elements ``g^0..g^3`` of C4 as 2x2 integer matrices (``g = R_C4``)."""
    g = as_matrix(R_C4)
    out = [torch.eye(2, dtype=torch.int64)]
    for _ in range(3):
        out.append(_compose(g, out[-1]))
    return out


def octahedral_words() -> list[tuple[str, torch.Tensor]]:
    """The 24 elements of O as (word in the generators ``x``, ``z``, matrix), shortest first.

    Breadth-first search from the identity; the word ``"xz"`` means ``R_x @ R_z``.
    """
    gens = {"x": as_matrix(R_OX), "z": as_matrix(R_OZ)}
    found: dict[tuple, tuple[str, torch.Tensor]] = {}
    eye = torch.eye(3, dtype=torch.int64)
    frontier = [("", eye)]
    found[tuple(eye.flatten().tolist())] = ("", eye)
    while frontier:
        nxt = []
        for word, m in frontier:
            for name, g in gens.items():
                mm = _compose(m, g)
                key = tuple(mm.flatten().tolist())
                if key not in found:
                    found[key] = (word + name, mm)
                    nxt.append((word + name, mm))
        frontier = nxt
    return list(found.values())


def octahedral() -> list[torch.Tensor]:
    """The 24 proper rotations of the cube (chiral octahedral group O) as 3x3 matrices.

    Examples
    --------
    >>> len(octahedral())
    24
    """
    return [m for _, m in octahedral_words()]


def group_elements(group: str) -> list[torch.Tensor]:
    """``"c4"`` or ``"o"`` (also ``"octahedral"``) as a list of matrices."""
    key = group.lower()
    if key == "c4":
        return c4()
    if key in {"o", "octahedral"}:
        return octahedral()
    raise ValueError(f"unknown group {group!r}; choose 'c4' or 'o'")


@torch.no_grad()
def equivariance_error(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    spec: FieldSpec,
    group: str | Sequence[torch.Tensor] = "c4",
    out_spec: FieldSpec | None = None,
) -> float:
    """``max_g ||Phi(L_g x) - L_g Phi(x)|| / ||Phi(x)||`` over the group's non-identity elements.

    ``out_spec`` describes the output channels (default: ``spec``).

    Examples
    --------
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> u = torch.randn(1, 2, 8, 8)
    >>> equivariance_error(lambda v: 2 * v, u, spec) < 1e-7  # a scalar multiple commutes
    True
    >>> equivariance_error(lambda v: v.roll(1, -1) * torch.arange(8.0), u, spec) > 1e-2
    True
    """
    out_spec = out_spec or spec
    elems = group_elements(group) if isinstance(group, str) else list(group)
    y = model(x)
    norm = y.double().norm().clamp_min(1e-30)
    worst = 0.0
    for r in elems:
        if torch.equal(r, torch.eye(r.shape[0], dtype=r.dtype)):
            continue
        diff = model(rotate(x, spec, r)).double() - rotate(y, out_spec, r).double()
        worst = max(worst, float(diff.norm() / norm))
    return worst


def rotate_angle(x: torch.Tensor, spec: FieldSpec, theta: float) -> torch.Tensor:
    """Approximate ``L_g`` for a continuous 2D rotation by ``theta`` radians (x towards y).

    The grid is resampled bilinearly, periodically wrapped, about the grid centre
    (``out(q) = x(R^T q)``, the convention of :func:`transform_grid`) and the components are
    rotated by ``R(theta)``; ``theta = -pi/2`` reproduces ``rotate(x, spec, 1)`` exactly.
    Only 90-degree multiples map the grid onto itself, so other angles carry interpolation
    error (and, on a periodic domain, seams in the corners outside the inscribed disk).

    Examples
    --------
    >>> import math
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> u = torch.randn(1, 2, 8, 8)
    >>> bool(torch.allclose(rotate_angle(u, spec, -math.pi / 2), rotate(u, spec, 1), atol=1e-6))
    True
    """
    spec.check(x)
    if x.ndim != 4 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"rotate_angle needs a square 2D field (B, C, n, n), got {tuple(x.shape)}")
    n = x.shape[-1]
    c, s = math.cos(theta), math.sin(theta)
    r = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    idx = torch.arange(n, dtype=torch.float64) - (n - 1) / 2
    qy, qx = torch.meshgrid(idx, idx, indexing="ij")  # q = (x along W, y along H)
    px = r[0, 0] * qx + r[1, 0] * qy + (n - 1) / 2  # p = R^T q, back to index coordinates
    py = r[0, 1] * qx + r[1, 1] * qy + (n - 1) / 2
    # snap round-off so that 90-degree multiples hit grid points exactly
    px = torch.where((px - px.round()).abs() < 1e-9, px.round(), px)
    py = torch.where((py - py.round()).abs() < 1e-9, py.round(), py)
    x0, y0 = px.floor(), py.floor()
    wx, wy = (px - x0).to(x.dtype), (py - y0).to(x.dtype)
    x0, y0 = x0.long(), y0.long()
    out = 0
    for dy, fy in ((0, 1 - wy), (1, wy)):
        for dx, fx in ((0, 1 - wx), (1, wx)):
            out = out + fy * fx * x[..., (y0 + dy) % n, (x0 + dx) % n]
    m = r.to(x.dtype)
    res = out.clone()
    om, xm = res.movedim(1, -1), out.movedim(1, -1)
    for vec in spec.all_vectors:
        om[..., list(vec)] = xm[..., list(vec)] @ m.T
    for ten in spec.tensors:
        t = xm[..., list(ten)].reshape(*xm.shape[:-1], 2, 2)
        om[..., list(ten)] = (m @ t @ m.T).reshape(*xm.shape[:-1], 4)
    return res


@torch.no_grad()
def so2_equivariance_error(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    spec: FieldSpec,
    theta: float,
    out_spec: FieldSpec | None = None,
    radius: float = 0.35,
) -> float:
    """``||M (Phi(L_theta x) - L_theta Phi(x))|| / ||M L_theta Phi(x)||`` for one angle.

    ``M`` keeps the disk of radius ``radius * n`` about the grid centre (away from the seams
    of :func:`rotate_angle`). Only approximate for angles off the 90-degree multiples: the
    bound the paper claims for SO(2), not an exactness check.

    Examples
    --------
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> so2_equivariance_error(lambda v: 2 * v, torch.randn(1, 2, 16, 16), spec, 0.3) < 1e-6
    True
    """
    out_spec = out_spec or spec
    n = x.shape[-1]
    idx = torch.arange(n, dtype=torch.float64) - (n - 1) / 2
    mask = ((idx[:, None] ** 2 + idx[None, :] ** 2) <= (radius * n) ** 2).to(torch.float64)
    target = rotate_angle(model(x), out_spec, theta).double() * mask
    diff = model(rotate_angle(x, spec, theta)).double() * mask - target
    return float(diff.norm() / target.norm().clamp_min(1e-30))
