"""The weight space of an MLP and its hidden-neuron permutation symmetry (paper, Sec. 2).

An MLP with architecture ``A = (d_0, ..., d_L)`` has parameters
``v = (W_1, b_1, ..., W_L, b_L)`` with ``W_l`` of shape ``(d_l, d_{l-1})``. The group
``G_A = S_{d_1} x ... x S_{d_{L-1}}`` permutes hidden neurons only:

* the action ``rho(tau)``: ``W_l -> P_{tau_l} W_l P_{tau_{l-1}}^T``, ``b_l -> P_{tau_l} b_l``,
  with ``tau_0`` and ``tau_L`` the identity -- :meth:`WeightSpace.permute`;
* it leaves the represented function unchanged, ``f_{rho(tau) v} = f_v`` --
  :meth:`WeightSpace.render` (batched with :func:`torch.func.vmap`);
* how far a network ``f`` on the weight space is from that symmetry,
  ``f(rho(tau) v) = f(v)`` (invariant) or ``f(rho(tau) v) = rho(tau) f(v)`` (equivariant, the
  paper's definition of a ``G_A``-equivariant map) -- :func:`symmetry_gap`;
* general position (GP): all biases of each hidden layer pairwise distinct --
  :meth:`WeightSpace.gp_gap` gives the smallest gap per hidden layer;
* the continuous canonicalisation under GP: sort each hidden layer's neurons by bias --
  :meth:`WeightSpace.canonicalize`.

Layout (channels last, so that a weight-space feature map carries ``C`` channels per entry):
``weights[l]`` is ``(B, d_{l+1}, d_l, C)`` and ``biases[l]`` is ``(B, d_{l+1}, C)`` for
``l = 0..L-1``. Raw MLP parameters have ``C = 1``; an output ensemble of ``F`` edited networks
is stored as ``C = F`` (channel ``f`` is member ``f``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

ACTIVATIONS = ("sine", "relu", "tanh")


class GeneralPositionWarning(UserWarning):
    """Biases of a hidden layer tie, so bias sorting is not a continuous canonicalisation."""


@dataclass
class WeightSpace:
    """A batch of MLP parameters (or of features living on them).

    Parameters
    ----------
    weights:
        ``L`` tensors, ``weights[l]`` of shape ``(B, d_{l+1}, d_l, C)``.
    biases:
        ``L`` tensors, ``biases[l]`` of shape ``(B, d_{l+1}, C)``.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> v = WeightSpace.random([2, 4, 3, 1], batch=5)
    >>> v.arch, v.batch, v.channels
    ((2, 4, 3, 1), 5, 1)
    >>> x = torch.rand(7, 2)
    >>> tau = v.random_permutation(torch.Generator().manual_seed(1))
    >>> bool(torch.allclose(v.render(x, "relu"), v.permute(tau).render(x, "relu"), atol=1e-6))
    True
    """

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]

    def __post_init__(self) -> None:
        self.weights = list(self.weights)
        self.biases = list(self.biases)
        if not self.weights:
            raise ValueError("a weight space needs at least one layer")
        if len(self.weights) != len(self.biases):
            raise ValueError(f"{len(self.weights)} weight matrices but {len(self.biases)} biases")
        b0, c0 = self.weights[0].shape[0], self.weights[0].shape[-1]
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            if w.dim() != 4 or b.dim() != 3:
                raise ValueError(
                    f"layer {i}: weights must be (B, d_out, d_in, C) and biases (B, d_out, C), "
                    f"got {tuple(w.shape)} and {tuple(b.shape)}"
                )
            if w.shape[0] != b0 or b.shape[0] != b0 or w.shape[-1] != c0 or b.shape[-1] != c0:
                raise ValueError(f"layer {i}: batch or channel size differs from layer 0")
            if b.shape[1] != w.shape[1]:
                raise ValueError(
                    f"layer {i}: bias length {b.shape[1]} does not match d_out={w.shape[1]}"
                )
            if i > 0 and w.shape[2] != self.weights[i - 1].shape[1]:
                raise ValueError(
                    f"layer shapes do not chain: layer {i} takes {w.shape[2]} inputs but layer "
                    f"{i - 1} has {self.weights[i - 1].shape[1]} outputs"
                )

    # ------------------------------------------------------------------ shape
    @property
    def arch(self) -> tuple[int, ...]:
        """The architecture ``(d_0, ..., d_L)``."""
        return (self.weights[0].shape[2], *(w.shape[1] for w in self.weights))

    @property
    def batch(self) -> int:
        return self.weights[0].shape[0]

    @property
    def channels(self) -> int:
        return self.weights[0].shape[-1]

    @property
    def n_layers(self) -> int:
        return len(self.weights)

    def n_params(self) -> int:
        """Number of scalar parameters of one network (per channel)."""
        return sum(
            w.shape[1] * w.shape[2] + b.shape[1] for w, b in zip(*self.blocks(), strict=True)
        )

    def blocks(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        return self.weights, self.biases

    def check_finite(self) -> WeightSpace:
        """Raise ``ValueError`` if any entry is NaN or infinite; return ``self``."""
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            if not (torch.isfinite(w).all() and torch.isfinite(b).all()):
                raise ValueError(f"layer {i} has non-finite weights or biases")
        return self

    def check_arch(self, arch: Sequence[int]) -> WeightSpace:
        """Raise ``ValueError`` unless the architecture equals ``arch``; return ``self``."""
        if tuple(arch) != self.arch:
            raise ValueError(
                f"input architecture {list(self.arch)} differs from the configured {list(arch)}"
            )
        return self

    # ------------------------------------------------------------------ builders
    @classmethod
    def random(
        cls, arch: Sequence[int], batch: int = 1, channels: int = 1, scale: float = 1.0
    ) -> WeightSpace:
        """Gaussian parameters (uses the global torch generator)."""
        arch = list(arch)
        ws = [
            torch.randn(batch, o, i, channels) * scale / math.sqrt(i)
            for i, o in zip(arch[:-1], arch[1:], strict=True)
        ]
        bs = [torch.randn(batch, o, channels) * scale for o in arch[1:]]
        return cls(ws, bs)

    @classmethod
    def from_state_dicts(cls, states: Sequence[Mapping[str, torch.Tensor]]) -> WeightSpace:
        """Stack state dicts of MLPs whose parameters alternate ``*.weight`` / ``*.bias``."""
        if not states:
            raise ValueError("no state dicts given")
        per_net = []
        for k, sd in enumerate(states):
            ws = [t for n, t in sd.items() if n.endswith("weight")]
            bs = [t for n, t in sd.items() if n.endswith("bias")]
            if len(ws) != len(bs) or not ws:
                raise ValueError(f"state dict {k}: needs matching '*.weight' and '*.bias' entries")
            per_net.append((ws, bs))
        shapes = [tuple(t.shape) for t in per_net[0][0] + per_net[0][1]]
        for k, (w, b) in enumerate(per_net):
            if [tuple(t.shape) for t in w + b] != shapes:
                raise ValueError(f"state dict {k} has a different architecture from state dict 0")
        n_layers = len(per_net[0][0])
        ws = [
            torch.stack([p[0][i].detach().float() for p in per_net])[..., None]
            for i in range(n_layers)
        ]
        bs = [
            torch.stack([p[1][i].detach().float() for p in per_net])[..., None]
            for i in range(n_layers)
        ]
        return cls(ws, bs)

    @classmethod
    def from_modules(cls, modules: Sequence[nn.Module]) -> WeightSpace:
        """Stack the parameters of MLPs (``nn.Linear`` layers in order) of one architecture."""
        states = []
        for m in modules:
            lins = [x for x in m.modules() if isinstance(x, nn.Linear)]
            if not lins:
                raise ValueError(f"{type(m).__name__} has no nn.Linear layers")
            sd = {}
            for i, lin in enumerate(lins):
                if lin.bias is None:
                    raise ValueError("bias-free linear layers are not supported")
                sd[f"{i}.weight"], sd[f"{i}.bias"] = lin.weight, lin.bias
            states.append(sd)
        return cls.from_state_dicts(states)

    def to_state_dicts(self, channel: int = 0) -> list[dict[str, torch.Tensor]]:
        """One ``{'layers.<l>.weight', 'layers.<l>.bias'}`` dict per network of ``channel``."""
        out = []
        for n in range(self.batch):
            sd = {}
            for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
                sd[f"layers.{i}.weight"] = w[n, ..., channel].detach().clone()
                sd[f"layers.{i}.bias"] = b[n, ..., channel].detach().clone()
            out.append(sd)
        return out

    # ------------------------------------------------------------------ algebra
    def map(self, fn) -> WeightSpace:
        """Apply ``fn`` to every block."""
        return WeightSpace([fn(w) for w in self.weights], [fn(b) for b in self.biases])

    def __add__(self, other: WeightSpace) -> WeightSpace:
        return WeightSpace(
            [a + b for a, b in zip(self.weights, other.weights, strict=True)],
            [a + b for a, b in zip(self.biases, other.biases, strict=True)],
        )

    def flatten(self) -> torch.Tensor:
        """``(B, n_params * C)`` in the order ``W_1, b_1, ..., W_L, b_L``."""
        parts = []
        for w, b in zip(self.weights, self.biases, strict=True):
            parts += [w.reshape(self.batch, -1), b.reshape(self.batch, -1)]
        return torch.cat(parts, dim=1)

    @classmethod
    def unflatten(cls, flat: torch.Tensor, arch: Sequence[int], channels: int = 1) -> WeightSpace:
        """Inverse of :meth:`flatten`."""
        batch, pos, ws, bs = flat.shape[0], 0, [], []
        for i, o in zip(arch[:-1], arch[1:], strict=True):
            ws.append(flat[:, pos : pos + o * i * channels].reshape(batch, o, i, channels))
            pos += o * i * channels
            bs.append(flat[:, pos : pos + o * channels].reshape(batch, o, channels))
            pos += o * channels
        if pos != flat.shape[1]:
            raise ValueError(f"flat vector has {flat.shape[1]} entries, architecture needs {pos}")
        return cls(ws, bs)

    # ------------------------------------------------------------------ symmetry
    def random_permutation(self, generator: torch.Generator | None = None) -> list[torch.Tensor]:
        """A random ``tau``: one permutation per hidden layer, the same for the whole batch."""
        return [torch.randperm(d, generator=generator) for d in self.arch[1:-1]]

    def batch_random_permutation(
        self, generator: torch.Generator | None = None
    ) -> list[torch.Tensor]:
        """One independent ``tau`` per network: ``(B, d_l)`` index tensors per hidden layer."""
        return [
            torch.stack([torch.randperm(d, generator=generator) for _ in range(self.batch)])
            for d in self.arch[1:-1]
        ]

    def permute(self, taus: Sequence[torch.Tensor]) -> WeightSpace:
        """``rho(tau) v``: ``W_l -> P_l W_l P_{l-1}^T``, ``b_l -> P_l b_l`` (hidden layers only).

        ``taus[k]`` permutes hidden layer ``k+1``; ``(P x)_i = x_{tau(i)}``. Each ``taus[k]``
        is ``(d,)`` (whole batch) or ``(B, d)`` (one permutation per network).
        """
        if len(taus) != self.n_layers - 1:
            raise ValueError(f"need {self.n_layers - 1} hidden permutations, got {len(taus)}")
        B = self.batch
        dev = self.weights[0].device
        full = [None, *[(t if t.dim() == 2 else t.expand(B, -1)).to(dev) for t in taus], None]

        def rows(x: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
            if idx is None:
                return x
            shape = idx.shape + (1,) * (x.dim() - 2)
            return torch.gather(x, 1, idx.reshape(shape).expand(-1, -1, *x.shape[2:]))

        def cols(x: torch.Tensor, idx: torch.Tensor | None) -> torch.Tensor:
            if idx is None:
                return x
            i = idx[:, None, :, None].expand(-1, x.shape[1], -1, x.shape[3])
            return torch.gather(x, 2, i)

        ws = [cols(rows(w, full[i + 1]), full[i]) for i, w in enumerate(self.weights)]
        bs = [rows(b, full[i + 1]) for i, b in enumerate(self.biases)]
        return WeightSpace(ws, bs)

    def gp_gap(self) -> torch.Tensor:
        """``(B, L-1)``: smallest pairwise gap between biases of each hidden layer (channel 0)."""
        gaps = []
        for b in self.biases[:-1]:
            s = torch.sort(b[..., 0], dim=1).values
            gaps.append(
                (s[:, 1:] - s[:, :-1]).min(dim=1).values
                if s.shape[1] > 1
                else torch.full((s.shape[0],), math.inf)
            )
        return torch.stack(gaps, dim=1)

    def canonical_permutation(self) -> list[torch.Tensor]:
        """The ``(B, d_l)`` permutations that sort each hidden layer by bias (channel 0)."""
        return [torch.argsort(b[..., 0], dim=1, stable=True) for b in self.biases[:-1]]

    def canonicalize(self, warn: bool = True) -> WeightSpace:
        """Sort every hidden layer's neurons by bias: invariant under ``G_A`` under GP.

        Warns with :class:`GeneralPositionWarning` when biases tie (then the result is only
        one of several equally valid orders and not a continuous function of ``v``).
        """
        if warn and self.n_layers > 1 and bool((self.gp_gap() <= 0).any()):
            warnings.warn(
                "biases tie in a hidden layer (gp_gap() == 0): the network is not in general "
                "position and bias sorting is not a continuous canonicalisation",
                GeneralPositionWarning,
                stacklevel=2,
            )
        return self.permute(self.canonical_permutation())

    # ------------------------------------------------------------------ function
    def render(
        self,
        coords: torch.Tensor,
        activation: str = "sine",
        w0: float = 30.0,
        offset: float = 0.0,
    ) -> torch.Tensor:
        """Evaluate every network at ``coords``: ``(N, d_0)`` or ``(B, N, d_0)`` -> ``(B, N, d_L, C)``.

        Hidden layers apply ``sigma(W h + b)``; ``sine`` means ``sin(w0 (W h + b))`` (SIREN);
        the last layer is linear and ``offset`` is added to the output. Vectorised over the
        batch and the channels with :func:`torch.func.vmap`.
        """
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"unsupported activation {activation!r} for rendering; choose from {ACTIVATIONS}"
            )
        if coords.shape[-1] != self.arch[0]:
            raise ValueError(
                f"coordinates have {coords.shape[-1]} features, the networks take {self.arch[0]}"
            )

        def sigma(z: torch.Tensor) -> torch.Tensor:
            if activation == "sine":
                return torch.sin(w0 * z)
            return torch.relu(z) if activation == "relu" else torch.tanh(z)

        def one(ws, bs, x):  # x: (N, d_0); ws[l]: (d_out, d_in)
            h = x
            for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
                h = h @ w.T + b
                if i < len(ws) - 1:
                    h = sigma(h)
            return h + offset

        ws = [w.movedim(-1, 1) for w in self.weights]  # (B, C, d_out, d_in)
        bs = [b.movedim(-1, 1) for b in self.biases]
        over_channels = torch.func.vmap(one, in_dims=(0, 0, None))
        if coords.dim() == 2:
            out = torch.func.vmap(over_channels, in_dims=(0, 0, None))(ws, bs, coords)
        else:
            out = torch.func.vmap(over_channels, in_dims=(0, 0, 0))(ws, bs, coords)
        return out.movedim(1, -1)  # (B, N, d_L, C)


def symmetry_gap(net, v: WeightSpace, generator: torch.Generator | None = None) -> float:
    """``max |net(rho(tau) v) - g| / max |g|``: 0 up to rounding for an exactly symmetric ``net``.

    ``g = rho(tau) net(v)`` when ``net`` returns a :class:`WeightSpace` (an equivariant map) and
    ``g = net(v)`` otherwise (an invariant one); ``tau`` is one random hidden-neuron permutation
    per network of the batch ``v`` (drawn from ``generator``). Evaluated without gradients.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> v = WeightSpace.random([2, 4, 3, 1], batch=3)
    >>> symmetry_gap(lambda u: u.map(torch.tanh), v) < 1e-6  # entrywise maps are equivariant
    True
    >>> symmetry_gap(lambda u: u.flatten(), v) > 0.01  # the flat vector is not invariant
    True
    """
    tau = v.batch_random_permutation(generator)
    with torch.no_grad():
        a, b = net(v.permute(tau)), net(v)
    if isinstance(b, WeightSpace):
        a, b = a.flatten(), b.permute(tau).flatten()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))


def image_coords(size: int) -> torch.Tensor:
    """``(size*size, 2)`` pixel-centre coordinates in ``[-1, 1]^2``, row-major."""
    t = torch.linspace(-1.0, 1.0, size)
    yy, xx = torch.meshgrid(t, t, indexing="ij")
    return torch.stack([xx.reshape(-1), yy.reshape(-1)], dim=1)
