"""The Orthogonal Projection Layer (OPL) and its face-guided variant (G-OPL).

Paper: Wang, Diao, Busch, Zhou & Gao, "Privacy-aware video anomaly detection through
orthogonal subspace projection", ICML 2026 (arXiv:2605.08651). The authors' code is not
released; the layer below is the construction the paper's summaries describe (a learnable
orthogonal subspace from a QR decomposition whose component is removed from every snippet
feature). Each piece is configurable.

- :class:`OrthogonalProjection`: ``Q = qr(W).Q`` (``(D, k)``, orthonormal columns), removed
  part ``r = Q Q^T x``, kept part ``z = (I - Q Q^T) x``, coefficients ``Q^T x``
- :class:`GuidedOrthogonalProjection`: ``Q = qr([W_task | W_face]).Q``, so the task and face
  subspaces are orthogonal to each other; both are removed and the face coefficients feed
  the face-presence guidance (:mod:`opl_vad.face_guidance`)

- :class:`ProjectedHead`: the drop-in use, ``head((I - Q Q^T) x)`` for any head module
- :class:`FixedProjection` / :func:`save_projection`: the trained projection frozen into a
  standalone tensor file and a parameter-free module (``opl-vad export-projector``)

Only the column space of ``W`` matters: ``Q Q^T`` is unchanged by the sign convention of the
QR and by ``W -> W R`` for any invertible ``R``.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

__all__ = [
    "FixedProjection",
    "GuidedOrthogonalProjection",
    "OrthogonalProjection",
    "ProjectedHead",
    "ProjectionOutput",
    "save_projection",
]


class ProjectionOutput(NamedTuple):
    """What a projection layer returns; every tensor has the input's leading shape ``(..., .)``."""

    z: torch.Tensor  # (..., D) kept features, orthogonal to every removed subspace
    removed: torch.Tensor  # (..., D) everything removed, r = x - z
    coeffs: torch.Tensor  # (..., k) coordinates of x in the removed basis
    face_removed: torch.Tensor | None = None  # (..., D) G-OPL: the face part of `removed`
    face_coeffs: torch.Tensor | None = None  # (..., k_face) G-OPL: Q_face^T x


def _orthonormal(W: torch.Tensor) -> torch.Tensor:
    Q, _ = torch.linalg.qr(W, mode="reduced")
    return Q


def _check_input(x: torch.Tensor, dim: int) -> None:
    if x.shape[-1] != dim:
        raise ValueError(f"feature dimension {x.shape[-1]} does not match the layer's dim={dim}")


class OrthogonalProjection(nn.Module):
    """Remove a learnable ``rank``-dimensional subspace from features of size ``dim``.

    Parameters
    ----------
    dim:
        Feature size ``D``.
    rank:
        Dimension ``k`` of the removed subspace, ``1 <= k < D``.
    seed:
        Seed of the random initialisation of ``W`` (``(D, k)``, standard normal / sqrt(D)).

    References
    ----------
    Wang et al., ICML 2026 (OPL); the QR parameterisation of a subspace.

    Examples
    --------
    >>> import torch
    >>> layer = OrthogonalProjection(8, 2, seed=0)
    >>> x = torch.randn(5, 8)
    >>> out = layer(x)
    >>> out.z.shape, out.coeffs.shape
    (torch.Size([5, 8]), torch.Size([5, 2]))
    >>> bool(torch.allclose(out.z + out.removed, x, atol=1e-6))
    True
    >>> bool(torch.allclose(out.z @ layer.basis(), torch.zeros(5, 2), atol=1e-5))
    True
    """

    def __init__(self, dim: int, rank: int, seed: int = 0):
        super().__init__()
        if not 1 <= rank < dim:
            raise ValueError(f"need 1 <= rank < dim, got rank={rank}, dim={dim}")
        g = torch.Generator().manual_seed(seed)
        self.dim, self.rank = int(dim), int(rank)
        self.W = nn.Parameter(torch.randn(dim, rank, generator=g) / dim**0.5)

    def basis(self) -> torch.Tensor:
        """``Q``: ``(D, k)`` orthonormal basis of the removed subspace."""
        return _orthonormal(self.W)

    def projector(self) -> torch.Tensor:
        """``P = I - Q Q^T``: ``(D, D)``, symmetric and idempotent."""
        Q = self.basis()
        return torch.eye(self.dim, dtype=Q.dtype, device=Q.device) - Q @ Q.T

    def forward(self, x: torch.Tensor) -> ProjectionOutput:
        _check_input(x, self.dim)
        Q = self.basis()
        c = x @ Q  # (..., k)
        r = c @ Q.T  # (..., D)
        return ProjectionOutput(x - r, r, c)


class GuidedOrthogonalProjection(nn.Module):
    """OPL with a separate face subspace, orthogonal to the task subspace (G-OPL).

    Parameters
    ----------
    dim:
        Feature size ``D``.
    rank_task, rank_face:
        Dimensions of the task-irrelevant and face subspaces; ``rank_task >= 0``,
        ``rank_face >= 1``, ``rank_task + rank_face < D``.
    seed:
        Seed of the initialisation.

    Examples
    --------
    >>> import torch
    >>> layer = GuidedOrthogonalProjection(16, 3, 2, seed=0)
    >>> Qt, Qf = layer.bases()
    >>> bool(torch.allclose(Qt.T @ Qf, torch.zeros(3, 2), atol=1e-6))
    True
    >>> out = layer(torch.randn(4, 16))
    >>> out.face_coeffs.shape, out.coeffs.shape
    (torch.Size([4, 2]), torch.Size([4, 5]))
    """

    def __init__(self, dim: int, rank_task: int, rank_face: int, seed: int = 0):
        super().__init__()
        if rank_task < 0 or rank_face < 1 or rank_task + rank_face >= dim:
            raise ValueError(
                "need rank_task >= 0, rank_face >= 1 and rank_task + rank_face < dim, got "
                f"rank_task={rank_task}, rank_face={rank_face}, dim={dim}"
            )
        g = torch.Generator().manual_seed(seed)
        self.dim, self.rank_task, self.rank_face = int(dim), int(rank_task), int(rank_face)
        self.W = nn.Parameter(torch.randn(dim, rank_task + rank_face, generator=g) / dim**0.5)

    @property
    def rank(self) -> int:
        return self.rank_task + self.rank_face

    def basis(self) -> torch.Tensor:
        """``Q = [Q_task | Q_face]``: ``(D, k_task + k_face)`` orthonormal."""
        return _orthonormal(self.W)

    def bases(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(Q_task, Q_face)``; the face block is the last ``rank_face`` QR columns."""
        Q = self.basis()
        return Q[:, : self.rank_task], Q[:, self.rank_task :]

    def projector(self) -> torch.Tensor:
        Q = self.basis()
        return torch.eye(self.dim, dtype=Q.dtype, device=Q.device) - Q @ Q.T

    def forward(self, x: torch.Tensor) -> ProjectionOutput:
        _check_input(x, self.dim)
        Q = self.basis()
        c = x @ Q
        r = c @ Q.T
        cf = c[..., self.rank_task :]
        rf = cf @ Q[:, self.rank_task :].T
        return ProjectionOutput(x - r, r, c, rf, cf)


class ProjectedHead(nn.Module):
    """Any head behind a projection layer: ``forward(x) = head(projection(x).z)``.

    The layer is a drop-in module: the head sees features of the same shape ``(..., D)``,
    only with the removed subspace projected out. :meth:`forward_all` also returns the
    :class:`ProjectionOutput` (G-OPL's face coefficients feed its guidance losses).

    Parameters
    ----------
    projection:
        :class:`OrthogonalProjection` or :class:`GuidedOrthogonalProjection`.
    head:
        Any module taking ``(..., D)`` features.

    Examples
    --------
    >>> import torch
    >>> from torch import nn
    >>> head = nn.Sequential(nn.Linear(16, 1), nn.Flatten(-2))   # any scorer
    >>> model = ProjectedHead(GuidedOrthogonalProjection(16, 2, 2), head)
    >>> model(torch.randn(3, 5, 16)).shape                      # (B, T) snippet scores
    torch.Size([3, 5])
    """

    def __init__(self, projection: nn.Module, head: nn.Module):
        super().__init__()
        self.projection, self.head = projection, head

    def forward_all(self, x: torch.Tensor) -> tuple[torch.Tensor, ProjectionOutput]:
        out = self.projection(x)
        return self.head(out.z), out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_all(x)[0]


class FixedProjection(nn.Module):
    """A learned projection frozen for deployment: ``forward(x) = (I - Q Q^T) x``.

    What ``opl-vad export-projector`` writes (:func:`save_projection`) and
    :meth:`from_file` reads back: the orthonormal basis ``Q`` ``(D, k)`` of everything the
    trained layer removes (G-OPL: task and face blocks together), with no trainable
    parameters, usable in front of any head (``nn.Sequential(FixedProjection(Q), head)``).

    Parameters
    ----------
    basis:
        ``(D, k)`` matrix whose column space is removed (orthonormalised here by a QR).
    rank_face:
        How many of the last columns are the face block (G-OPL; 0 otherwise), kept as
        information for :meth:`face_basis`.

    References
    ----------
    Wang et al., ICML 2026 (OPL / G-OPL).

    Examples
    --------
    >>> import torch
    >>> layer = GuidedOrthogonalProjection(8, 2, 1, seed=0)
    >>> fixed = FixedProjection.from_layer(layer)
    >>> x = torch.randn(3, 4, 8)
    >>> bool(torch.allclose(fixed(x), layer(x).z, atol=1e-6)), fixed.face_basis().shape
    (True, torch.Size([8, 1]))
    """

    def __init__(self, basis: torch.Tensor, rank_face: int = 0):
        super().__init__()
        basis = torch.as_tensor(basis)
        if basis.dim() != 2 or not 1 <= basis.shape[1] < basis.shape[0]:
            raise ValueError(f"basis must be (D, k) with 1 <= k < D, got {tuple(basis.shape)}")
        if not 0 <= rank_face <= basis.shape[1]:
            raise ValueError(f"rank_face={rank_face} outside [0, {basis.shape[1]}]")
        self.register_buffer("basis", _orthonormal(basis.detach().clone()))
        self.rank_face = int(rank_face)

    @property
    def dim(self) -> int:
        return int(self.basis.shape[0])

    @classmethod
    def from_layer(cls, layer: nn.Module) -> FixedProjection:
        """Freeze an :class:`OrthogonalProjection` or :class:`GuidedOrthogonalProjection`."""
        return cls(layer.basis().detach(), getattr(layer, "rank_face", 0))

    @classmethod
    def from_file(cls, path) -> FixedProjection:
        """Read what :func:`save_projection` wrote (a ``torch.save`` dict of tensors)."""
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or "basis" not in state:
            raise ValueError(f"{str(path)!r} is not a projection file (no 'basis')")
        return cls(state["basis"], int(state.get("rank_face", 0)))

    def face_basis(self) -> torch.Tensor:
        """The face block ``(D, rank_face)`` (empty for OPL)."""
        return self.basis[:, self.basis.shape[1] - self.rank_face :]

    def projector(self) -> torch.Tensor:
        """``P = I - Q Q^T`` ``(D, D)``."""
        Q = self.basis
        return torch.eye(self.dim, dtype=Q.dtype, device=Q.device) - Q @ Q.T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.dim)
        Q = self.basis.to(x.dtype)
        return x - (x @ Q) @ Q.T


def save_projection(fixed: FixedProjection, path, **info) -> None:
    """Write ``fixed`` as a standalone tensor file (``torch.save`` of ``basis``, ``rank_face``,
    ``projector`` and ``info``), atomically; :meth:`FixedProjection.from_file` reads it."""
    import io

    from icml26_shared.results import atomic_write_bytes

    buf = io.BytesIO()
    state = {"basis": fixed.basis.cpu(), "projector": fixed.projector().cpu(),
             "rank_face": fixed.rank_face, **info}  # fmt: skip
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())
