"""Hista: hidden-state prefix distances and inverse-distance k-NN values over disjoint rollouts.

1. ``ema_embed``: per-token EMA of the last-layer hidden states,
   ``m_t = alpha m_{t-1} + (1 - alpha) h_t`` with Adam-style bias correction
   ``m_t / (1 - alpha^{t+1})``. ``ema_init="standard"`` starts from ``m_0 = (1 - alpha) h_0``
   (so the corrected ``m_0 = h_0``); ``ema_init="reference"`` starts from ``m_0 = h_0`` as the
   authors' code does (the first position is then scaled by ``1 / (1 - alpha)``).
2. ``downsample``: mean over non-overlapping windows of ``mean_window`` tokens.
3. ``prefix_chamfer``: for every prefix pair ``(a[:i], b[:j])`` the mean, over the positions
   of the *longer* prefix, of the minimum L2 distance to the other prefix (equal lengths: the
   average of both directions, so the matrix is symmetric); computed with one ``cdist``,
   ``cummin`` and ``cumsum``.
4. ``knn_value``: ``V = sum w r / sum w`` over the ``k`` nearest pool prefixes,
   ``w = 1 / max(d, min_distance)^temperature``.
5. ``k_schedule``: ``k_i = max_k - floor((max_k - min_k) / m) * i`` along the response.
6. ``HistaEstimator``: nodes every ``min_interval`` tokens (plus the response end), the pool of
   prefixes of the *other* rollouts of the group. The authors' k-NN also keeps the query's own
   prefixes (no longer than the query), whose reward is the very outcome being estimated
   (a self-reward leak, weight up to ``1 / min_distance``); the paper speaks of disjoint
   rollouts, so ``include_self=False`` is our default and ``True`` reproduces the code.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def ema_embed(h: torch.Tensor, alpha: float, ema_init: str = "standard") -> torch.Tensor:
    """Bias-corrected EMA along the token axis of (T, H) hidden states.

    Examples
    --------
    >>> ema_embed(torch.tensor([[1.0], [1.0], [1.0]]), 0.5).flatten().tolist()
    [1.0, 1.0, 1.0]
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    if ema_init not in ("standard", "reference"):
        raise ValueError(f"unknown ema_init {ema_init!r}; use 'standard' or 'reference'")
    out = torch.empty_like(h)
    m = h[0] if ema_init == "reference" else (1 - alpha) * h[0]
    out[0] = m / (1 - alpha)
    for t in range(1, h.shape[0]):
        m = alpha * m + (1 - alpha) * h[t]
        out[t] = m / (1 - alpha ** (t + 1))
    return out


def downsample(h: torch.Tensor, mean_window: int) -> torch.Tensor:
    """Mean over windows of ``mean_window`` rows of (T, H); the last window may be shorter."""
    if mean_window < 1:
        raise ValueError(f"mean_window must be >= 1, got {mean_window}")
    return torch.stack([c.mean(0) for c in torch.split(h, mean_window)])


def prefix_chamfer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(La, Lb) matrix ``D[i-1, j-1] = dist(a[:i], b[:j])`` of one-sided Chamfer distances.

    Examples
    --------
    >>> a = torch.tensor([[0.0], [1.0]]); b = torch.tensor([[0.0], [3.0]])
    >>> prefix_chamfer(a, b).tolist()
    [[0.0, 1.5], [0.5, 0.75]]
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"need (La, H) and (Lb, H) embeddings, got {tuple(a.shape)}, {tuple(b.shape)}"
        )
    d = torch.cdist(a[None], b[None])[0]  # (La, Lb)
    la, lb = d.shape
    # a-side: mean_{p < i} min_{q < j} d[p, q]
    a_side = d.cummin(1).values.cumsum(0) / torch.arange(1, la + 1, dtype=d.dtype)[:, None]
    b_side = d.cummin(0).values.cumsum(1) / torch.arange(1, lb + 1, dtype=d.dtype)[None, :]
    i = torch.arange(1, la + 1)[:, None]
    j = torch.arange(1, lb + 1)[None, :]
    return torch.where(i > j, a_side, torch.where(i < j, b_side, (a_side + b_side) / 2))


def knn_value(
    distances: torch.Tensor,
    rewards: torch.Tensor,
    k: int,
    min_distance: float = 3.0,
    temperature: float = 1.0,
) -> float:
    """Inverse-distance-weighted mean reward of the ``k`` nearest pool prefixes.

    Examples
    --------
    >>> round(knn_value(torch.tensor([1.0, 2.0, 10.0]), torch.tensor([1.0, 0.0, 0.0]), k=2, min_distance=0.5), 4)
    0.6667
    """
    if min_distance <= 0 or temperature <= 0:
        raise ValueError(
            f"min_distance and temperature must be > 0, got {min_distance}, {temperature}"
        )
    distances, rewards = distances.flatten(), rewards.flatten().to(distances.dtype)
    if len(distances) != len(rewards) or len(distances) == 0:
        raise ValueError(f"{len(distances)} distances for {len(rewards)} rewards (need equal, > 0)")
    k = max(1, min(int(k), len(distances)))
    near = torch.topk(distances, k, largest=False).indices
    w = distances[near].clamp(min=min_distance).pow(-temperature)
    return float((w * rewards[near]).sum() / w.sum())


def k_schedule(m: int, max_k: int = 66, min_k: int = 6) -> list[int]:
    """Neighbour counts for nodes ``0..m-1`` (fewer neighbours later in the response)."""
    if max_k < min_k or min_k < 1:
        raise ValueError(f"need 1 <= min_k <= max_k, got {min_k}, {max_k}")
    step = (max_k - min_k) // max(m, 1)
    return [max_k - step * i for i in range(m)]


@dataclass
class HistaEstimator:
    """State values from hidden-state neighbours among the group's rollouts.

    Examples
    --------
    >>> est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=1, min_distance=0.1, k=1)
    >>> pool = [torch.tensor([[0.0], [0.0]]), torch.tensor([[5.0], [5.0]])]
    >>> est.estimate(torch.tensor([[4.9]]), pool, torch.tensor([0.0, 1.0]))
    1.0
    """

    alpha: float = 0.97
    mean_window: int = 5
    min_interval: int = 50
    min_distance: float = 3.0
    k: int = 66
    temperature: float = 1.0
    include_self: bool = False
    ema_init: str = "standard"

    def __post_init__(self) -> None:
        if self.min_distance <= 0 or self.temperature <= 0 or self.k < 1 or self.min_interval < 1:
            raise ValueError("min_distance, temperature must be > 0 and k, min_interval >= 1")

    def embed(self, hidden: torch.Tensor, response_start: int) -> torch.Tensor:
        """(T, H) hidden states of prompt + response -> downsampled response embedding."""
        if not 0 <= response_start < hidden.shape[0]:
            raise ValueError(f"response_start {response_start} outside {hidden.shape[0]} tokens")
        smooth = ema_embed(hidden, self.alpha, self.ema_init)
        return downsample(smooth[response_start:], self.mean_window)

    def nodes(self, length: int) -> list[int]:
        """Prefix lengths (in downsampled units) where pool nodes sit: every interval + end."""
        step = max(1, self.min_interval // self.mean_window)
        return sorted({*range(step, length + 1, step), length})

    def estimate(
        self,
        query: torch.Tensor,
        pool: list[torch.Tensor],
        rewards: torch.Tensor,
        own: torch.Tensor | None = None,
        own_reward: float | None = None,
    ) -> float:
        """Value of the prefix embedded as ``query`` (Lq, H) from the pool rollouts' nodes.

        ``own``/``own_reward`` (the query's full rollout) enter only with ``include_self``:
        then its nodes no longer than the query join the pool (the reference behaviour).
        """
        rewards = torch.as_tensor(rewards, dtype=torch.float32)
        if len(pool) != len(rewards) or not pool:
            raise ValueError(
                f"{len(pool)} pool rollouts for {len(rewards)} rewards (need equal, > 0)"
            )
        dists, labels = [], []
        items = list(zip(pool, rewards.tolist(), strict=True))
        limit = None
        if self.include_self:
            if own is None or own_reward is None:
                raise ValueError("include_self=True needs the query's own rollout and reward")
            items.append((own, float(own_reward)))
            limit = len(items) - 1
        lq = query.shape[0]
        for idx, (emb, r) in enumerate(items):
            mat = prefix_chamfer(query, emb)[lq - 1]
            nodes = self.nodes(emb.shape[0])
            if idx == limit:
                nodes = [n for n in nodes if n <= lq]
            dists.extend(float(mat[n - 1]) for n in nodes)
            labels.extend([r] * len(nodes))
        if not dists:
            raise ValueError("no pool nodes to compare with")
        return knn_value(
            torch.tensor(dists), torch.tensor(labels), self.k, self.min_distance, self.temperature
        )
