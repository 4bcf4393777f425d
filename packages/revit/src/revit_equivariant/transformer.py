"""The ReViT network: invariant tokens, rebased attention, frame-aware merge/expand.

Paper: "ReViT: Rotational-equivariant Vision Transformers for Neural PDE Solvers"
(Wei, List, Thuerey, ICML 2026). Map of the method to classes:

* Sec. 3.2 invariant patch embedding ``z_k = [B_i^T u_k, B_i^T (x_k - c_i), s_k]``,
  ``h_k = MLP(z_k)``, ``t_i = Linear(LN(pool_k h_k))`` with ``pool`` the mean or attention
  pooling ``sum_k softmax_k(a(h_k)) h_k`` (a permutation-invariant weighted mean):
  :class:`FrameEmbedding` (``equivariant=False``: a flatten-and-project / strided-conv patch
  embedding);
* Sec. 3.3 rebased relative position bias ``P_ij^h = MLP_h(|p_ij|, B_i^T p_ij)``:
  :class:`RebasedRelPosBias`;
* Sec. 3.4 window attention ``softmax(Q K^T / sqrt(d) + P) V`` with shifted windows
  (shift ``w/2``, cyclic roll; Swin mask on non-periodic domains): :class:`WindowAttention`,
  :class:`SwinBlock`;
* Sec. 3.5 globalize-resample-localize merge ``B^(l+1)^T AvgPool_2(B^(l) v)`` and expand
  (bilinear x2 with the coarse frame, localize with the fine one, concatenate the skip):
  :class:`FrameMerge`, :class:`FrameExpand`;
* Sec. 3.6 equivariant decoder ``y_k = B_i MLP([t_i, B_i^T (x_k - c_i)])`` and the residual
  "Euler" step ``u_{t+1} = u_t + Phi(u_t)``: :class:`FrameDecoder`, :class:`ReViT`;
* the 2D / 3D models and the Swin baseline (same backbone, ``equivariant=False``, identity
  frames): :class:`ReViT2d`, :class:`ReViT3d`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from .frames import FRAME_METHODS, FramePyramid, patch_mean, rebase, unbase
from .group import FieldSpec
from .windows import merge_windows, partition, shift_mask, window_offsets

#: pixel-feature pooling of the invariant patch embedding (:class:`FrameEmbedding`)
POOLINGS = ("mean", "attention")


def patchify(x: torch.Tensor, patch: int, dim: int) -> torch.Tensor:
    """``(B, C, *grid) -> (B, *tokens, patch^d, C)`` (pixels row-major inside a patch)."""
    b, c = x.shape[:2]
    shape = [b, c]
    for n in x.shape[2:]:
        shape += [n // patch, patch]
    perm = [0, *(2 + 2 * k for k in range(dim)), *(3 + 2 * k for k in range(dim)), 1]
    tokens = [n // patch for n in x.shape[2:]]
    return x.reshape(shape).permute(perm).reshape(b, *tokens, patch**dim, c)


def unpatchify(y: torch.Tensor, patch: int, dim: int) -> torch.Tensor:
    """Inverse of :func:`patchify`."""
    b, c = y.shape[0], y.shape[-1]
    tokens = y.shape[1 : 1 + dim]
    z = y.reshape(b, *tokens, *([patch] * dim), c)
    perm = [0, 1 + 2 * dim]
    for k in range(dim):
        perm += [1 + k, 1 + dim + k]
    return z.permute(perm).reshape(b, c, *(n * patch for n in tokens))


def _mlp(n_in: int, hidden: int, n_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(n_in, hidden), nn.GELU(), nn.Linear(hidden, n_out))


def rebase_channels(
    x: torch.Tensor, b: torch.Tensor, spec: FieldSpec, inverse: bool = False
) -> torch.Tensor:
    """Express the vector / tensor channels (last axis) of ``x`` in frames ``b``.

    ``x`` is ``(..., C)`` and ``b`` broadcasts to ``(..., d, d)``. ``inverse=True`` lifts
    local components back to the global axes (``B v``, ``B T B^T``).
    """
    out = x.clone()
    d = b.shape[-1]
    for vec in spec.all_vectors:
        v = x[..., list(vec)]
        out[..., list(vec)] = unbase(b, v) if inverse else rebase(b, v)
    for ten in spec.tensors:
        t = x[..., list(ten)].unflatten(-1, (d, d))
        bt = b.transpose(-1, -2)
        t = b @ t @ bt if inverse else bt @ t @ b
        out[..., list(ten)] = t.flatten(-2)
    return out


class FrameEmbedding(nn.Module):
    """Invariant patch embedding: per-pixel features in the patch frame, pooled by a mean.

    Parameters
    ----------
    spec:
        Field spec of the input channels.
    patch, dim:
        Patch side and spatial dimension.
    embed_dim:
        Token width C.
    hidden:
        Width of the per-pixel MLP.
    equivariant:
        False: flatten the patch and project it (a strided convolution), as in Swin.
    pooling:
        ``mean`` (``mean_k h_k``) or ``attention`` (``sum_k w_k h_k`` with
        ``w = softmax_k(MLP(h_k))``, a learned score per pixel feature). Both are
        invariant to the order of the pixels, so both keep the embedding invariant.

    Examples
    --------
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> emb = FrameEmbedding(spec, patch=2, dim=2, embed_dim=8)
    >>> frames = torch.eye(2).expand(1, 4, 4, 2, 2)
    >>> emb(torch.randn(1, 2, 8, 8), frames).shape
    torch.Size([1, 4, 4, 8])
    """

    def __init__(
        self,
        spec: FieldSpec,
        patch: int,
        dim: int,
        embed_dim: int,
        hidden: int | None = None,
        equivariant: bool = True,
        pooling: str = "mean",
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"unknown pooling {pooling!r}; choose from {POOLINGS}")
        self.spec, self.patch, self.dim, self.equivariant = spec, patch, dim, equivariant
        self.pooling = pooling
        hidden = hidden or embed_dim
        self.register_buffer("offsets", window_offsets(patch, dim).float(), persistent=False)
        if equivariant:
            self.pixel_mlp = _mlp(spec.n_channels + dim, hidden, hidden)
            if pooling == "attention":
                self.score = _mlp(hidden, max(1, hidden // 2), 1)
            self.norm = nn.LayerNorm(hidden)
            self.proj = nn.Linear(hidden, embed_dim)
        else:
            self.proj = nn.Linear(spec.n_channels * patch**dim, embed_dim)
            self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        pix = patchify(x, self.patch, self.dim)  # (B, *tokens, P^d, C_in)
        if not self.equivariant:
            return self.norm(self.proj(pix.flatten(-2)))
        b = frames.unsqueeze(-3)  # (B, *tokens, 1, d, d)
        local = rebase_channels(pix, b, self.spec)
        pos = rebase(b, self.offsets.to(x.dtype))  # B_i^T (x_k - c_i)
        z = torch.cat([local, pos], -1)
        h = self.pixel_mlp(z)  # (B, *tokens, P^d, hidden)
        # order-independent pooling over the patch: the mean, or the attention-weighted mean
        pooled = (self.score(h).softmax(-2) * h).sum(-2) if self.pooling == "attention" else None
        return self.proj(self.norm(h.mean(-2) if pooled is None else pooled))


class RebasedRelPosBias(nn.Module):
    """``P_ij^h = MLP_h(|p_ij|, B_i^T p_ij)`` with ``p_ij = c_j - c_i`` inside a window.

    Examples
    --------
    >>> bias = RebasedRelPosBias(window=2, dim=2, heads=3)
    >>> bias(torch.eye(2).expand(5, 4, 2, 2)).shape
    torch.Size([5, 3, 4, 4])
    """

    def __init__(self, window: int, dim: int, heads: int, hidden: int = 16) -> None:
        super().__init__()
        off = window_offsets(window, dim).float()
        self.register_buffer("rel", off[None, :, :] - off[:, None, :], persistent=False)
        self.mlp = _mlp(dim + 1, hidden, heads)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        """``frames``: ``(n_windows, N, d, d)`` of the query tokens -> ``(n_windows, h, N, N)``."""
        rel = self.rel.to(frames.dtype)  # (N, N, d)
        local = torch.einsum("wiab,ija->wijb", frames, rel)
        feat = torch.cat([rel.norm(dim=-1, keepdim=True).expand(*local.shape[:-1], 1), local], -1)
        return self.mlp(feat).permute(0, 3, 1, 2)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside windows, plus the rebased relative position bias.

    Examples
    --------
    >>> att = WindowAttention(8, heads=2, window=2, dim=2)
    >>> att(torch.randn(3, 4, 8), torch.eye(2).expand(3, 4, 2, 2)).shape
    torch.Size([3, 4, 8])
    """

    def __init__(self, channels: int, heads: int, window: int, dim: int) -> None:
        super().__init__()
        if channels % heads:
            raise ValueError(f"embed width {channels} is not divisible by heads={heads}")
        self.heads = heads
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)
        self.bias = RebasedRelPosBias(window, dim, heads)

    def forward(
        self, x: torch.Tensor, frames: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``x``: ``(B*nW, N, C)``; ``mask``: ``(nW, N, N)`` True = blocked."""
        bw, n, c = x.shape
        q, k, v = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        logits = q @ k.transpose(-1, -2) / math.sqrt(c // self.heads) + self.bias(frames)
        if mask is not None:
            nw = mask.shape[0]
            logits = logits.reshape(bw // nw, nw, self.heads, n, n)
            logits = logits.masked_fill(mask[None, :, None], float("-inf")).reshape(bw, -1, n, n)
        out = logits.softmax(-1) @ v
        return self.proj(out.transpose(1, 2).reshape(bw, n, c))


class SwinBlock(nn.Module):
    """Pre-norm (shifted-)window attention block with an MLP; shift must be 0 or ``w/2``.

    Examples
    --------
    >>> blk = SwinBlock(8, heads=2, window=2, shift=1, dim=2)
    >>> blk(torch.randn(1, 4, 4, 8), torch.eye(2).expand(1, 4, 4, 2, 2)).shape
    torch.Size([1, 4, 4, 8])
    """

    def __init__(
        self,
        channels: int,
        heads: int,
        window: int,
        shift: int,
        dim: int,
        mlp_ratio: float = 2.0,
        periodic: bool = True,
        drop_path: float = 0.0,
    ) -> None:
        super().__init__()
        if not 0.0 <= drop_path < 1.0:
            raise ValueError(f"drop_path must be in [0, 1), got {drop_path}")
        self.drop_path = drop_path
        self.window, self.shift, self.dim, self.periodic = window, shift, dim, periodic
        self.norm1 = nn.LayerNorm(channels)
        self.attn = WindowAttention(channels, heads, window, dim)
        self.norm2 = nn.LayerNorm(channels)
        self.mlp = _mlp(channels, int(mlp_ratio * channels), channels)

    def forward(self, t: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        grid = tuple(t.shape[1 : 1 + self.dim])
        axes = tuple(range(1, 1 + self.dim))
        h = self.norm1(t)
        f = frames.flatten(-2)
        if self.shift:
            h = h.roll([-self.shift] * self.dim, axes)
            f = f.roll([-self.shift] * self.dim, axes)
        hw = partition(h, self.window, self.dim)
        fw = partition(f, self.window, self.dim).unflatten(-1, (self.dim, self.dim))
        mask = None
        if self.shift and not self.periodic:
            mask = shift_mask(grid, self.window, self.shift).to(t.device)
        out = merge_windows(self.attn(hw, fw, mask), self.window, grid, t.shape[0])
        if self.shift:
            out = out.roll([self.shift] * self.dim, axes)
        t = t + self._drop(out)
        return t + self._drop(self.mlp(self.norm2(t)))

    def _drop(self, branch: torch.Tensor) -> torch.Tensor:
        """Drop-path (stochastic depth): drop the whole residual branch of a sample in training.

        One Bernoulli draw per sample, scaled by ``1 / (1 - p)``: a per-sample scalar, so it
        keeps every symmetry of the branch (identity in eval mode).
        """
        if not self.training or self.drop_path == 0.0:
            return branch
        keep = 1.0 - self.drop_path
        mask = torch.rand(branch.shape[0], *(1,) * (branch.ndim - 1), device=branch.device)
        return branch * (mask < keep).to(branch.dtype) / keep


def _split_vectors(t: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Read a latent C-vector as ``C // d`` local d-vectors and ``C % d`` scalars."""
    m = t.shape[-1] // dim
    return t[..., : m * dim].unflatten(-1, (m, dim)), t[..., m * dim :]


def _globalize(t: torch.Tensor, frames: torch.Tensor, dim: int) -> torch.Tensor:
    vec, sca = _split_vectors(t, dim)
    return torch.cat([unbase(frames.unsqueeze(-3), vec).flatten(-2), sca], -1)


def _localize(t: torch.Tensor, frames: torch.Tensor, dim: int) -> torch.Tensor:
    vec, sca = _split_vectors(t, dim)
    return torch.cat([rebase(frames.unsqueeze(-3), vec).flatten(-2), sca], -1)


class FrameMerge(nn.Module):
    """Globalize with ``B^(l)``, AvgPool 2^d, localize with ``B^(l+1)``, LN, Linear C -> 2C.

    Examples
    --------
    >>> m = FrameMerge(8, dim=2)
    >>> eye = torch.eye(2)
    >>> m(torch.randn(1, 4, 4, 8), eye.expand(1, 4, 4, 2, 2), eye.expand(1, 2, 2, 2, 2)).shape
    torch.Size([1, 2, 2, 16])
    """

    def __init__(self, channels: int, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.norm = nn.LayerNorm(channels)
        self.proj = nn.Linear(channels, 2 * channels)

    def forward(self, t: torch.Tensor, fine: torch.Tensor, coarse: torch.Tensor) -> torch.Tensor:
        g = patch_mean(_globalize(t, fine, self.dim), 2, self.dim)
        return self.proj(self.norm(_localize(g, coarse, self.dim)))


class FrameExpand(nn.Module):
    """Globalize with the coarse frame, upsample x2 (symmetric kernel), localize, add the skip.

    Examples
    --------
    >>> e = FrameExpand(16, 8, dim=2)
    >>> eye = torch.eye(2)
    >>> t, skip = torch.randn(1, 2, 2, 16), torch.randn(1, 4, 4, 8)
    >>> e(t, skip, eye.expand(1, 2, 2, 2, 2), eye.expand(1, 4, 4, 2, 2)).shape
    torch.Size([1, 4, 4, 8])
    """

    def __init__(self, channels: int, out_channels: int, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.norm = nn.LayerNorm(channels + out_channels)
        self.proj = nn.Linear(channels + out_channels, out_channels)

    def forward(
        self, t: torch.Tensor, skip: torch.Tensor, coarse: torch.Tensor, fine: torch.Tensor
    ) -> torch.Tensor:
        g = _globalize(t, coarse, self.dim).movedim(-1, 1)
        mode = "bilinear" if self.dim == 2 else "trilinear"
        up = F.interpolate(g, scale_factor=2, mode=mode, align_corners=False).movedim(1, -1)
        local = _localize(up, fine, self.dim)
        return self.proj(self.norm(torch.cat([local, skip], -1)))


class FrameDecoder(nn.Module):
    """Per-pixel decoder ``y_k = B_i MLP([t_i, B_i^T (x_k - c_i)])`` lifted to global axes.

    Examples
    --------
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> dec = FrameDecoder(8, spec, patch=2, dim=2)
    >>> dec(torch.randn(1, 4, 4, 8), torch.eye(2).expand(1, 4, 4, 2, 2)).shape
    torch.Size([1, 2, 8, 8])
    """

    def __init__(
        self, channels: int, out_spec: FieldSpec, patch: int, dim: int, hidden: int | None = None
    ) -> None:
        super().__init__()
        self.spec, self.patch, self.dim = out_spec, patch, dim
        self.register_buffer("offsets", window_offsets(patch, dim).float(), persistent=False)
        self.norm = nn.LayerNorm(channels)
        self.mlp = _mlp(channels + dim, hidden or channels, out_spec.n_channels)

    def forward(self, t: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        b = frames.unsqueeze(-3)  # (B, *tokens, 1, d, d)
        pos = rebase(b, self.offsets.to(t.dtype))  # (B, *tokens, P^d, d)
        tok = self.norm(t).unsqueeze(-2).expand(*pos.shape[:-1], t.shape[-1])
        y_loc = self.mlp(torch.cat([tok, pos], -1))
        y = rebase_channels(y_loc, b, self.spec, inverse=True)
        return unpatchify(y, self.patch, self.dim)


class ReViT(nn.Module):
    """Swin-style U-shaped ReViT emulator ``u_{t+1} = u_t + Phi(u_t)`` (2D or 3D).

    Parameters
    ----------
    spec:
        Field spec of the input channels (state and conditioning, e.g. a forcing vector).
    state_channels:
        Input channels that form the predicted state; the output has these channels, with
        the same field types, and the residual adds them.
    dim:
        2 (C4) or 3 (O).
    patch, window:
        Patch side and window side (in tokens, even; the shifted blocks use ``window // 2``).
    embed_dim, heads, mlp_ratio:
        Token width at level 0 (doubled at every merge), heads and MLP ratio.
    depths:
        Blocks per stage of the U: ``L`` encoder stages then ``L - 1`` decoder stages
        (odd length), e.g. ``(2, 2, 2)``.
    frame_method:
        ``aov`` | ``boa`` | ``grad`` (2D), ``aovc`` (3D).
    equivariant:
        False gives the Swin baseline from the same code (identity frames, conv patch embed).
    periodic:
        Cyclic windows without a mask (True) or the Swin mask for non-periodic domains.
    drop_path:
        Stochastic-depth rate of every block's residual branches (the authors' 2D default is
        0.1; 0 here, the default of the CPU configs).
    pooling:
        Pixel pooling of the invariant patch embedding: ``mean`` or ``attention``
        (:class:`FrameEmbedding`; ignored by the Swin baseline's linear patch embedding).
    residual:
        Add the input state to the network output.

    Examples
    --------
    >>> from revit_equivariant.group import equivariance_error
    >>> spec = FieldSpec(2, vectors=((0, 1),))
    >>> net = ReViT(spec, (0, 1), patch=2, window=2, embed_dim=8, heads=2, depths=(1, 1, 1))
    >>> u = torch.randn(2, 2, 8, 8)
    >>> net(u).shape
    torch.Size([2, 2, 8, 8])
    >>> equivariance_error(net, u, spec, "c4", net.out_spec) < 1e-5
    True
    """

    def __init__(
        self,
        spec: FieldSpec,
        state_channels: Sequence[int],
        dim: int = 2,
        patch: int = 2,
        window: int = 4,
        embed_dim: int = 32,
        heads: int = 2,
        depths: Sequence[int] = (2, 2, 2),
        mlp_ratio: float = 2.0,
        frame_method: str = "aov",
        equivariant: bool = True,
        periodic: bool = True,
        residual: bool = True,
        drop_path: float = 0.0,
        pooling: str = "mean",
    ) -> None:
        super().__init__()
        if dim not in (2, 3):
            raise ValueError(f"dim must be 2 or 3, got {dim}")
        if spec.dim and spec.dim != dim:
            raise ValueError(f"the field spec is {spec.dim}D but the model is {dim}D")
        if window < 2 or window % 2:
            raise ValueError(
                f"window must be even (shift = window/2 keeps equivariance), got {window}"
            )
        if patch < 1:
            raise ValueError(f"patch must be >= 1, got {patch}")
        if len(depths) % 2 == 0 or any(int(n) < 1 for n in depths):
            raise ValueError(
                f"depths must have odd length (L encoder + L-1 decoder stages), got {depths}"
            )
        if frame_method not in FRAME_METHODS:
            raise ValueError(f"unknown frame method {frame_method!r}; choose from {FRAME_METHODS}")
        if equivariant and frame_method != "grad" and not spec.all_vectors:
            raise ValueError(
                f"frame method {frame_method!r} needs a vector field; this field is scalar-only "
                "(use frame_method='grad')"
            )
        if equivariant and frame_method == "grad" and not spec.scalars:
            raise ValueError("frame method 'grad' needs a scalar field")
        state = tuple(int(c) for c in state_channels)
        self.spec, self.dim, self.patch, self.window = spec, dim, patch, window
        self.frame_method, self.equivariant, self.state = frame_method, equivariant, state
        self.residual = residual
        self.out_spec = _sub_spec(spec, state)
        self.levels = (len(depths) + 1) // 2
        enc, dec = list(depths[: self.levels]), list(depths[self.levels :])
        widths = [embed_dim * 2**level for level in range(self.levels)]

        def stage(n: int, c: int) -> nn.ModuleList:
            return nn.ModuleList(
                SwinBlock(
                    c, heads, window, (i % 2) * (window // 2), dim, mlp_ratio, periodic, drop_path
                )
                for i in range(n)
            )

        self.embed = FrameEmbedding(
            spec, patch, dim, embed_dim, equivariant=equivariant, pooling=pooling
        )
        self.encoder = nn.ModuleList(stage(n, widths[i]) for i, n in enumerate(enc))
        self.merges = nn.ModuleList(FrameMerge(widths[i], dim) for i in range(self.levels - 1))
        self.expands = nn.ModuleList(
            FrameExpand(widths[lv + 1], widths[lv], dim) for lv in reversed(range(self.levels - 1))
        )
        self.decoder = nn.ModuleList(
            stage(n, widths[lv])
            for n, lv in zip(dec, reversed(range(self.levels - 1)), strict=True)
        )
        self.head = FrameDecoder(embed_dim, self.out_spec, patch, dim)
        self.last_fallbacks = 0

    @property
    def multiple(self) -> int:
        """Grid sides must be multiples of ``patch * window * 2^(L-1)``."""
        return self.patch * self.window * 2 ** (self.levels - 1)

    def check_input(self, x: torch.Tensor) -> None:
        """Raise ``ValueError`` with one clear line for any input the model cannot take."""
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"expected a tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise ValueError(f"expected a floating-point field, got dtype {x.dtype}")
        if x.ndim != 2 + self.dim:
            raise ValueError(
                f"a {self.dim}D model needs a (B, C{', D' if self.dim == 3 else ''}, H, W) "
                f"tensor with {2 + self.dim} dims, got {x.ndim}"
            )
        self.spec.check(x)
        grid = tuple(x.shape[2:])
        if self.equivariant and len(set(grid)) != 1:
            raise ValueError(f"equivariant mode needs a square/cubic grid, got {grid}")
        coarsest = [n // (self.patch * 2 ** (self.levels - 1)) for n in grid]
        if min(coarsest) < self.window:
            raise ValueError(
                f"window {self.window} is larger than the coarsest token grid {coarsest} "
                f"(grid {grid}, patch {self.patch}, {self.levels} levels)"
            )
        if any(n % self.multiple for n in grid):
            raise ValueError(
                f"grid {grid} is not divisible by patch*window*2^(levels-1) = {self.multiple} "
                "(no silent padding)"
            )
        if not bool(torch.isfinite(x).all()):
            raise ValueError("the input field contains NaN or inf")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.check_input(x)
        method = self.frame_method if self.equivariant else None
        pyr = FramePyramid.build(x, self.spec, self.patch, self.levels, method, self.dim)
        self.last_fallbacks = pyr.fallbacks
        fr = pyr.frames
        t = self.embed(x, fr[0])
        skips = []
        for level, blocks in enumerate(self.encoder):
            for blk in blocks:
                t = blk(t, fr[level])
            if level < self.levels - 1:
                skips.append(t)
                t = self.merges[level](t, fr[level], fr[level + 1])
        for i, level in enumerate(reversed(range(self.levels - 1))):
            t = self.expands[i](t, skips[level], fr[level + 1], fr[level])
            for blk in self.decoder[i]:
                t = blk(t, fr[level])
        y = self.head(t, fr[0])
        return x[:, list(self.state)] + y if self.residual else y


def _sub_spec(spec: FieldSpec, channels: tuple[int, ...]) -> FieldSpec:
    """The spec of ``channels`` (renumbered 0..k-1); vector/tensor groups must be whole."""
    pos = {c: i for i, c in enumerate(channels)}
    if len(pos) != len(channels):
        raise ValueError(f"state channels repeat: {channels}")
    if any(c < 0 or c >= spec.n_channels for c in channels):
        raise ValueError(f"state channels {channels} outside 0..{spec.n_channels - 1}")

    def take(groups):
        out = []
        for g in groups:
            inside = [c in pos for c in g]
            if any(inside) and not all(inside):
                raise ValueError(f"state channels {channels} split the field group {g}")
            if all(inside):
                out.append(tuple(pos[c] for c in g))
        return tuple(out)

    return FieldSpec(
        len(channels),
        scalars=tuple(pos[c] for c in spec.scalars if c in pos),
        vectors=take(spec.vectors),
        pseudovectors=take(spec.pseudovectors),
        tensors=take(spec.tensors),
        dim=spec.dim,
    )


class ReViT2d(ReViT):
    """ReViT on 2D grids (exactly C4 equivariant); defaults sized for a CPU.

    Examples
    --------
    >>> spec = FieldSpec(3, scalars=(2,), vectors=((0, 1),))
    >>> ReViT2d(spec, (0, 1, 2), window=2, embed_dim=8, depths=(1, 1, 1))(torch.randn(1, 3, 8, 8)).shape
    torch.Size([1, 3, 8, 8])
    """

    def __init__(self, spec: FieldSpec, state_channels: Sequence[int], **kwargs) -> None:
        kwargs.setdefault("frame_method", "aov")
        super().__init__(spec, state_channels, dim=2, **kwargs)


class ReViT3d(ReViT):
    """ReViT on 3D grids (exactly equivariant to the 24 rotations of O); frame ``aovc``.

    Examples
    --------
    >>> spec = FieldSpec(3, vectors=((0, 1, 2),))
    >>> net = ReViT3d(spec, (0, 1, 2), window=2, embed_dim=6, depths=(1,))
    >>> net(torch.randn(1, 3, 4, 4, 4)).shape
    torch.Size([1, 3, 4, 4, 4])
    """

    def __init__(self, spec: FieldSpec, state_channels: Sequence[int], **kwargs) -> None:
        kwargs.setdefault("frame_method", "aovc")
        kwargs.setdefault("window", 2)
        super().__init__(spec, state_channels, dim=3, **kwargs)
