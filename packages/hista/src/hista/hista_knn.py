"""Hista: hidden-state prefix distances and inverse-distance k-NN values over disjoint rollouts.

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782); authors' code ``src/rl/utils/hista_utils.py``.

1. ``ema_embed``: per-token EMA of the last-layer hidden states,
   ``m_t = alpha m_{t-1} + (1 - alpha) h_t`` with Adam-style bias correction
   ``m_t / (1 - alpha^{t+1})``, batched over rollouts. ``ema_init="standard"`` starts from
   ``m_0 = (1 - alpha) h_0`` (so the corrected ``m_0 = h_0``); ``ema_init="reference"`` starts
   from ``m_0 = h_0`` as the authors' code does (the first position is then scaled by
   ``1 / (1 - alpha)``).
2. ``downsample``: mean over non-overlapping windows of ``mean_window`` tokens.
3. ``prefix_chamfer_batch`` / ``prefix_chamfer``: for every prefix pair ``(a[:i], b[:j])`` the
   mean, over the positions of the *longer* prefix, of the minimum L2 distance to the other
   prefix (equal lengths: the average of both directions, so the matrix is symmetric); for all
   pairs of rollouts and all prefix pairs at once with one batched ``cdist``, ``cummin`` and
   ``cumsum`` (shapes (Na, La, H) x (Nb, Lb, H) -> (Na, Nb, La, Lb)).
4. ``knn_value``: ``V = sum w r / sum w`` over the ``k`` nearest pool prefixes,
   ``w = 1 / max(d, min_distance)^temperature``. Beyond the reference (all off by default):
   ``baseline_weight`` b adds the group mean ``g`` as a pseudo-neighbour of weight
   ``b / min_distance^temperature`` (b neighbours at the closest possible distance), so
   ``V = (sum w r + b w_max g) / (sum w + b w_max)``: the estimate falls back to the group
   mean when its neighbours are far (weak evidence) and follows them when they are close.
5. ``k_schedule``: ``k_i = max_k - floor((max_k - min_k) / m) * i`` along the response.
6. ``HistaEstimator``: options beyond the reference: ``length_window`` (only pool nodes whose
   prefix length is within that many units of the query's, the length-restricted Chamfer
   comparison), ``per_rollout`` (each pool rollout contributes its nearest node only, so
   long rollouts do not outvote short ones and ``k >= G`` with equal weights is exactly the
   group mean) and ``baseline_weight`` (above). Nodes every ``min_interval`` tokens (plus the response end), the pool of
   prefixes of the *other* rollouts of the group; ``group_values`` gives every intermediate
   node of every rollout of a group in one vectorised pass (the RL step), ``estimate`` one
   query (SVEB). The authors' k-NN also keeps the query's own prefixes (no longer than the
   query), whose reward is the very outcome being estimated (a self-reward leak, weight up to
   ``1 / min_distance``); the paper speaks of disjoint rollouts, so ``include_self=False`` is
   our default and ``True`` reproduces the code.

:data:`ARITH_HISTA` holds the hyper-parameters used at ArithChain scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

#: Hista at ArithChain scale: one token per character, so windows and intervals shrink
#: (research notes C4: ``min_interval = 4``, ``mean_window = 1``); ``alpha`` is the recipes' 0.7.
ARITH_HISTA = {"alpha": 0.7, "mean_window": 1, "min_interval": 2, "min_distance": 0.05, "k": 16}


def ema_embed(h: torch.Tensor, alpha: float, ema_init: str = "standard") -> torch.Tensor:
    """Bias-corrected EMA along the token axis of (T, H) or batched (B, T, H) hidden states.

    A batch runs the recursion once for all rows (one tensor op per position); right padding
    does not change the valid positions (the EMA is causal).

    Examples
    --------
    >>> ema_embed(torch.tensor([[1.0], [1.0], [1.0]]), 0.5).flatten().tolist()
    [1.0, 1.0, 1.0]
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    if ema_init not in ("standard", "reference"):
        raise ValueError(f"unknown ema_init {ema_init!r}; use 'standard' or 'reference'")
    if h.ndim == 2:
        return ema_embed(h[None], alpha, ema_init)[0]
    if h.ndim != 3:
        raise ValueError(f"need (T, H) or (B, T, H) hidden states, got {tuple(h.shape)}")
    out = torch.empty_like(h)  # (B, T, H)
    m = h[:, 0] if ema_init == "reference" else (1 - alpha) * h[:, 0]
    out[:, 0] = m / (1 - alpha)
    for t in range(1, h.shape[1]):
        m = alpha * m + (1 - alpha) * h[:, t]
        out[:, t] = m / (1 - alpha ** (t + 1))
    return out


def downsample(h: torch.Tensor, mean_window: int) -> torch.Tensor:
    """Mean over windows of ``mean_window`` rows of (T, H); the last window may be shorter."""
    if mean_window < 1:
        raise ValueError(f"mean_window must be >= 1, got {mean_window}")
    if mean_window == 1:
        return h
    return torch.stack([c.mean(0) for c in torch.split(h, mean_window)])


DISTANCES = ("longer", "symmetric")


def prefix_chamfer_batch(
    a: torch.Tensor, b: torch.Tensor, distance: str = "longer"
) -> torch.Tensor:
    """(Na, Nb, La, Lb) prefix Chamfer distances of every pair of sequences in two batches.

    ``a``: (Na, La, H), ``b``: (Nb, Lb, H). ``D[x, y, i-1, j-1] = dist(a[x, :i], b[y, :j])``:
    one batched ``cdist``, then ``cummin`` over the other prefix and ``cumsum`` over the own
    prefix (no per-prefix recomputation). Right padding leaves the entries of the valid
    prefixes unchanged (each depends only on positions ``< i`` and ``< j``). ``distance``:
    ``"longer"`` (the reference: the mean over the longer prefix only, so the shorter
    prefix's positions that match nothing are not counted) or ``"symmetric"`` (the mean of
    both one-sided means at every pair: the classic symmetric Chamfer distance).
    """
    if distance not in DISTANCES:
        raise ValueError(f"unknown distance {distance!r}; use one of {DISTANCES}")
    if a.ndim != 3 or b.ndim != 3 or a.shape[2] != b.shape[2]:
        raise ValueError(
            f"need (Na, La, H) and (Nb, Lb, H) embeddings, got {tuple(a.shape)}, {tuple(b.shape)}"
        )
    d = torch.cdist(a[:, None], b[None])  # (Na, Nb, La, Lb)
    la, lb = d.shape[-2:]
    ia = torch.arange(1, la + 1, dtype=d.dtype, device=d.device)[:, None]  # (La, 1)
    jb = torch.arange(1, lb + 1, dtype=d.dtype, device=d.device)[None, :]  # (1, Lb)
    # a-side: mean_{p < i} min_{q < j} d[p, q]; b-side the same with the roles swapped
    a_side = d.cummin(-1).values.cumsum(-2) / ia
    b_side = d.cummin(-2).values.cumsum(-1) / jb
    if distance == "symmetric":
        return (a_side + b_side) / 2
    return torch.where(ia > jb, a_side, torch.where(ia < jb, b_side, (a_side + b_side) / 2))


def prefix_chamfer(a: torch.Tensor, b: torch.Tensor, distance: str = "longer") -> torch.Tensor:
    """(La, Lb) matrix ``D[i-1, j-1] = dist(a[:i], b[:j])`` of prefix Chamfer distances.

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
    return prefix_chamfer_batch(a[None], b[None], distance)[0, 0]


def pad_embeddings(embs: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad (L_i, H) embeddings to (N, L, H); returns it and the lengths (N,)."""
    lengths = torch.tensor([e.shape[0] for e in embs])
    out = embs[0].new_zeros(len(embs), int(lengths.max()), embs[0].shape[1])
    for i, e in enumerate(embs):
        out[i, : e.shape[0]] = e
    return out, lengths


def knn_value(
    distances: torch.Tensor,
    rewards: torch.Tensor,
    k: int,
    min_distance: float = 3.0,
    temperature: float = 1.0,
    baseline: float | None = None,
    baseline_weight: float = 0.0,
) -> float:
    """Inverse-distance-weighted mean reward of the ``k`` nearest pool prefixes.

    With ``baseline_weight`` b > 0 the ``baseline`` (the group mean) joins as a pseudo-neighbour
    of weight ``b / min_distance^temperature``; with no pool prefix at all the value is the
    baseline.

    Examples
    --------
    >>> round(knn_value(torch.tensor([1.0, 2.0, 10.0]), torch.tensor([1.0, 0.0, 0.0]), k=2, min_distance=0.5), 4)
    0.6667
    >>> round(knn_value(torch.tensor([10.0]), torch.tensor([1.0]), 1, 1.0, baseline=0.0, baseline_weight=1.0), 4)
    0.0909
    """
    if min_distance <= 0 or temperature <= 0 or baseline_weight < 0:
        raise ValueError(
            "min_distance and temperature must be > 0 and baseline_weight >= 0, got "
            f"{min_distance}, {temperature}, {baseline_weight}"
        )
    if baseline_weight > 0 and baseline is None:
        raise ValueError("baseline_weight > 0 needs the baseline (the group mean)")
    distances, rewards = distances.flatten(), rewards.flatten().to(distances.dtype)
    if len(distances) != len(rewards):
        raise ValueError(f"{len(distances)} distances for {len(rewards)} rewards (need equal)")
    if len(distances) == 0:
        if baseline is None:
            raise ValueError("no pool prefixes and no baseline")
        return float(baseline)
    k = max(1, min(int(k), len(distances)))
    near = torch.topk(distances, k, largest=False).indices
    w = distances[near].clamp(min=min_distance).pow(-temperature)
    num, den = (w * rewards[near]).sum(), w.sum()
    if baseline_weight > 0:
        prior = baseline_weight * min_distance ** (-temperature)
        num, den = num + prior * baseline, den + prior
    return float(num / den)


def k_schedule(m: int, max_k: int = 66, min_k: int = 6) -> list[int]:
    """Neighbour counts for nodes ``0..m-1`` (fewer neighbours later in the response)."""
    if max_k < min_k or min_k < 1:
        raise ValueError(f"need 1 <= min_k <= max_k, got {min_k}, {max_k}")
    step = (max_k - min_k) // max(m, 1)
    return [max_k - step * i for i in range(m)]


@dataclass
class HistaEstimator:
    """State values from hidden-state neighbours among the group's rollouts.

    Parameters
    ----------
    alpha, ema_init: the EMA of ``ema_embed``. mean_window: downsampling window (tokens).
    min_interval: node spacing (tokens). min_distance, temperature: inverse-distance weights
    ``1 / max(d, min_distance)^temperature``. k: neighbours per query (the schedule's ``max_k``
    when ``min_k`` is set). min_k: ``None`` for a fixed ``k``; else the reference's schedule
    ``k_i = k - floor((k - min_k) / m) * i`` over the ``m`` intermediate nodes of a rollout
    (``group_values``). include_self: also keep the query rollout's own nodes no longer than the
    query (the reference code's self-reward leak). distance: ``"longer"`` (the reference's
    one-sided prefix Chamfer distance) or ``"symmetric"`` (:func:`prefix_chamfer_batch`).
    length_window: ``None`` (the reference: pool nodes of every length) or the largest
    difference, in downsampled units, between a pool node's prefix length and the query's.
    per_rollout: one neighbour per pool rollout (its nearest node) instead of every node.
    baseline_weight: weight of the group mean as a pseudo-neighbour (:func:`knn_value`; 0 =
    the reference). prompt_in_prefix: ``False`` (our default: prefixes start at the first
    response token) or ``True`` (the reference's SVEB and trainer code: every prefix starts at
    the first prompt token, so the group's shared prompt states are in both prefixes of a
    pair; pool nodes still sit in the response only). The shared prompt is not a mere rescale:
    it enlarges every denominator by the prompt length, which changes how prefixes of
    different lengths rank, and a response position may find its nearest state in the other
    prefix's prompt. :meth:`estimate` only (SVEB); the RL path keeps response-only prefixes.
    The defaults reproduce the reference; :func:`hista.sveb_mini.validated_hista`
    chooses these options, ``k`` and ``alpha`` on a validation split.

    Reference: Chen et al., "Hista and Numca", ICML 2026 (arXiv 2605.29782), Hista.

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
    min_k: int | None = None
    distance: str = "longer"
    length_window: int | None = None
    per_rollout: bool = False
    baseline_weight: float = 0.0
    prompt_in_prefix: bool = False

    def __post_init__(self) -> None:
        if self.length_window is not None and self.length_window < 0:
            raise ValueError(f"length_window must be None or >= 0, got {self.length_window}")
        if self.baseline_weight < 0:
            raise ValueError(f"baseline_weight must be >= 0, got {self.baseline_weight}")
        if self.min_distance <= 0 or self.temperature <= 0 or self.k < 1 or self.min_interval < 1:
            raise ValueError("min_distance, temperature must be > 0 and k, min_interval >= 1")
        if self.distance not in DISTANCES:
            raise ValueError(f"unknown distance {self.distance!r}; use one of {DISTANCES}")
        if self.min_k is not None and not 1 <= self.min_k <= self.k:
            raise ValueError(f"need 1 <= min_k <= k (max_k), got {self.min_k}, {self.k}")

    def embed(self, hidden: torch.Tensor, response_start: int) -> torch.Tensor:
        """(T, H) hidden states of prompt + response -> downsampled response embedding
        (with ``prompt_in_prefix``: of prompt + response; :meth:`prompt_units` gives where the
        response starts in it)."""
        if not 0 <= response_start < hidden.shape[0]:
            raise ValueError(f"response_start {response_start} outside {hidden.shape[0]} tokens")
        smooth = ema_embed(hidden, self.alpha, self.ema_init)
        return downsample(
            smooth[0 if self.prompt_in_prefix else response_start :], self.mean_window
        )

    def prompt_units(self, response_start: int) -> int:
        """Downsampled units of the prompt at the start of :meth:`embed`'s output (0 unless
        ``prompt_in_prefix``)."""
        return response_start // self.mean_window if self.prompt_in_prefix else 0

    def embed_batch(
        self, hidden: torch.Tensor, starts: list[int], ends: list[int]
    ) -> list[torch.Tensor]:
        """(B, T, H) right-padded hidden states -> the response embedding of every row.

        Row ``b``'s response is positions ``starts[b]:ends[b]``; one batched EMA for all rows
        (what the RL step does with the hidden states of its log-prob forward pass).
        """
        if hidden.ndim != 3 or not len(starts) == len(ends) == hidden.shape[0]:
            raise ValueError(
                f"mismatched lengths: hidden {tuple(hidden.shape)}, {len(starts)} starts, "
                f"{len(ends)} ends"
            )
        if any(not 0 <= s < e <= hidden.shape[1] for s, e in zip(starts, ends, strict=True)):
            raise ValueError("every response span must satisfy 0 <= start < end <= T")
        smooth = ema_embed(hidden, self.alpha, self.ema_init)
        return [
            downsample(smooth[b, s:e], self.mean_window)
            for b, (s, e) in enumerate(zip(starts, ends, strict=True))
        ]

    def nodes(self, length: int) -> list[int]:
        """Prefix lengths (in downsampled units) where pool nodes sit: every interval + end."""
        step = max(1, self.min_interval // self.mean_window)
        return sorted({*range(step, length + 1, step), length})

    def query_nodes(self, length: int) -> list[int]:
        """The intermediate nodes of a rollout of ``length`` units (values to estimate)."""
        return [n for n in self.nodes(length) if n < length]

    def group_values(self, embs: list[torch.Tensor], rewards) -> list[torch.Tensor]:
        """Values at every intermediate node of every rollout of one group, vectorised.

        ``embs``: G embeddings (L_i, H); ``rewards``: (G,). Rollout ``i``'s pool is the nodes
        of the other rollouts (plus its own nodes no longer than the query with
        ``include_self``). All prefix distances come from one batched ``prefix_chamfer_batch``
        per chunk of queries, the k nearest from one ``topk``. Returns G tensors, one value per
        ``query_nodes(L_i)``.
        """
        if self.prompt_in_prefix:
            raise ValueError("prompt_in_prefix is an SVEB option (estimate), not for group_values")
        g = len(embs)
        rewards = torch.as_tensor(rewards, dtype=torch.float32).flatten()
        if g < 2 or len(rewards) != g:
            raise ValueError(f"{g} rollouts for {len(rewards)} rewards (need equal, >= 2)")
        emb, lens = pad_embeddings([e.float() for e in embs])  # (G, L, H), (G,)
        length = emb.shape[1]
        node = torch.zeros(g, length, dtype=torch.bool)  # node[j, m-1]: prefix m is a node
        k_node = torch.zeros(g, length, dtype=torch.long)  # neighbours of query node (i, n-1)
        for j in range(g):
            node[j, [n - 1 for n in self.nodes(int(lens[j]))]] = True
            qn = self.query_nodes(int(lens[j]))
            if self.min_k is None:
                ks = [self.k] * len(qn)
            else:
                ks = k_schedule(len(qn), self.k, self.min_k) if qn else []
            if qn:
                k_node[j, [n - 1 for n in qn]] = torch.tensor(ks)
        pos = torch.arange(length)
        # the group mean each rollout falls back to: the other rollouts' mean reward (with
        # include_self, the whole group's)
        total = rewards.sum()
        base = rewards.new_full((g,), float(total) / g) if self.include_self else (
            (total - rewards) / (g - 1)
        )  # fmt: skip
        in_window = torch.ones(length, length, dtype=torch.bool)  # (query n-1, pool m-1)
        if self.length_window is not None:
            in_window = (pos[:, None] - pos[None, :]).abs() <= self.length_window
        w_prior = self.baseline_weight * self.min_distance ** (-self.temperature)
        chunk = max(1, (1 << 23) // max(1, g * length * length))
        values = torch.zeros(g, length)
        for lo in range(0, g, chunk):
            q = torch.arange(lo, min(g, lo + chunk))
            d = prefix_chamfer_batch(
                emb[q], emb, self.distance
            )  # (c, G, L, L): query (i, n), pool (j, m)
            keep = node[None, :, None, :].expand(len(q), g, length, length).clone()
            own = q[:, None] == torch.arange(g)[None]  # (c, G)
            keep[own] = False
            if self.include_self:  # own nodes no longer than the query (reference code)
                mine = node[q][:, None, :] & (pos[None, None, :] <= pos[None, :, None])
                keep[own] = mine.reshape(-1, length, length)
            keep &= in_window[None, None]
            d = d.masked_fill(~keep, torch.inf).permute(0, 2, 1, 3)  # (c, Lq, G, Lp)
            if self.per_rollout:  # each pool rollout's nearest node
                d, lab = d.min(-1).values, rewards  # (c, Lq, G), (G,)
            else:
                d = d.reshape(len(q), length, -1)  # (c, Lq, G*Lp)
                lab = rewards[:, None].expand(g, length).reshape(-1)
            kmax = min(self.k, d.shape[-1])
            near, idx = torch.topk(d, kmax, dim=-1, largest=False)  # (c, L, kmax)
            rank_ok = torch.arange(kmax)[None, None] < k_node[q][..., None]
            w = near.clamp(min=self.min_distance).pow(-self.temperature)
            w = torch.where(torch.isfinite(near) & rank_ok, w, torch.zeros_like(w))
            num = (w * lab[idx]).sum(-1) + w_prior * base[q][:, None]
            den = w.sum(-1) + w_prior
            # no neighbour in range and no prior: the group mean (nothing else is known)
            values[q] = torch.where(den > 0, num / den.clamp(min=1e-30), base[q][:, None])
        return [values[i, [n - 1 for n in self.query_nodes(int(lens[i]))]] for i in range(g)]

    def estimate(
        self,
        query: torch.Tensor,
        pool: list[torch.Tensor],
        rewards: torch.Tensor,
        own: torch.Tensor | None = None,
        own_reward: float | None = None,
        baseline: float | None = None,
        prompt_units: int = 0,
    ) -> float:
        """Value of the prefix embedded as ``query`` (Lq, H) from the pool rollouts' nodes.

        ``baseline``: the group mean the estimate shrinks toward (``baseline_weight``) and falls
        back to when no pool node is in range; default the pool's mean reward.

        ``own``/``own_reward`` (the query's full rollout) enter only with ``include_self``:
        then its nodes no longer than the query join the pool (the reference behaviour).
        ``prompt_units``: length of the shared prompt at the start of the query and of every
        pool embedding (``prompt_in_prefix``; :meth:`prompt_units`): pool nodes sit at the
        response's nodes after it.
        """
        rewards = torch.as_tensor(rewards, dtype=torch.float32).flatten()
        if len(pool) != len(rewards) or not pool:
            raise ValueError(
                f"{len(pool)} pool rollouts for {len(rewards)} rewards (need equal, > 0)"
            )
        items, labels = list(pool), rewards.tolist()
        if self.include_self:
            if own is None or own_reward is None:
                raise ValueError("include_self=True needs the query's own rollout and reward")
            items.append(own)
            labels.append(float(own_reward))
        lq = query.shape[0]
        emb, lens = pad_embeddings([e.float() for e in items])  # (N, L, H)
        if query.ndim != 2 or query.shape[1] != emb.shape[2]:
            raise ValueError(f"query must be (Lq, {emb.shape[2]}), got {tuple(query.shape)}")
        row = prefix_chamfer_batch(query.float()[None], emb, self.distance)[0, :, lq - 1]  # (N, L)
        dists, labs = [], []
        for idx, lab in enumerate(labels):
            if not 0 <= prompt_units < int(lens[idx]):
                raise ValueError(
                    f"prompt_units {prompt_units} outside a pool item of {int(lens[idx])}"
                )
            nodes = [prompt_units + n for n in self.nodes(int(lens[idx]) - prompt_units)]
            if self.include_self and idx == len(items) - 1:
                nodes = [n for n in nodes if n <= lq]
            if self.length_window is not None:
                nodes = [n for n in nodes if abs(n - lq) <= self.length_window]
            if not nodes:
                continue
            d = row[idx, [n - 1 for n in nodes]]
            if self.per_rollout:
                d = d.min()[None]
            dists.append(d)
            labs.extend([lab] * len(d))
        if baseline is None:
            baseline = float(rewards.mean())
        d = torch.cat(dists) if dists else torch.zeros(0)
        return knn_value(
            d, torch.tensor(labs), self.k, self.min_distance, self.temperature, baseline,
            self.baseline_weight,
        )  # fmt: skip
