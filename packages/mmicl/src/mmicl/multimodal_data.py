"""Multimodal in-context sequences: a primary modality M1 paired with a secondary M2.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. the sequence ``[M1_1, M2_1, y_1, ..., M1_N, M2_N, y_N, M1_q, M2_q]`` of length
   ``3N + 2``; ``y`` are primary-modality label embeddings -> :meth:`MultimodalSampler.sample`;
2. M2 has ``K2`` classes whose ``L2`` labels map into a subset of the ``L1`` labels
   (``L2 <= L1``) -> :attr:`MultimodalSampler.label_map`;
3. each M2 class of a sequence is paired with one (novel) M1 class, so an M1 item travels
   with every M2 item. In the authors' generator the M1 query is drawn from the class paired
   with the target, so ICL can succeed from M1 alone; ``control="m1_random"`` draws the M1
   query from an unrelated M1 class and ``control="m1_zero"`` zeroes it, so that only the
   cross-modal M2 association can solve the task;
4. the secondary modality is a :class:`~mmicl.gmm_data.GMMBank` or real images,
   :class:`DigitsModality` (scikit-learn's 8x8 digits), offline.
"""

from __future__ import annotations

import torch

from mmicl.gmm_data import BurstySampler, GMMBank

CONTROLS = ("none", "m1_random", "m1_zero")


class DigitsModality:
    """scikit-learn's handwritten digits as a secondary modality (64-pixel images).

    Duck-types the :class:`~mmicl.gmm_data.GMMBank` interface used by
    :class:`~mmicl.gmm_data.BurstySampler`: the digits ``train_digits`` are the training
    classes, the others the novel ones (for the IC split). Items are real images of the
    class, scaled to ``[0, 1]``; ``eps`` is ignored (the noise is the handwriting).

    Examples
    --------
    >>> m = DigitsModality(train_digits=(0, 1, 2, 3, 4))
    >>> m.K, m.L, m.D, m.n_novel
    (5, 5, 64, 5)
    >>> g = torch.Generator().manual_seed(0)
    >>> m.items(torch.tensor([[0, 1]]), 0.0, g, None).shape
    torch.Size([1, 2, 64])
    """

    def __init__(self, train_digits: tuple[int, ...] = (0, 1, 2, 3, 4), split: str = "all") -> None:
        from sklearn.datasets import load_digits

        digits = load_digits()
        x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
        y = torch.tensor(digits.target)
        if len(set(train_digits)) != len(train_digits) or not set(train_digits) <= set(range(10)):
            raise ValueError(f"train_digits must be distinct digits 0-9, got {train_digits}")
        if split not in ("all", "train", "test"):
            raise ValueError(f"split must be all, train or test, got {split!r}")
        if split != "all":  # every 5th image of each class is held out
            idx = torch.arange(len(y))
            keep = (idx % 5 == 0) if split == "test" else (idx % 5 != 0)
            x, y = x[keep], y[keep]
        novel = tuple(d for d in range(10) if d not in train_digits)
        self.train_digits, self.novel_digits = tuple(train_digits), novel
        self.K = self.L = len(train_digits)
        self.D, self.n_novel = 64, len(novel)
        self.class_label = torch.arange(self.K)
        self._pools = [x[y == d] for d in (*train_digits, *novel)]
        self._sizes = torch.tensor([len(p) for p in self._pools])
        self._offsets = torch.cumsum(torch.cat([torch.tensor([0]), self._sizes[:-1]]), 0)
        self._flat = torch.cat(self._pools)

    def items(self, classes, eps, g, novel):
        """Random images of the given classes (novel ones index the held-out digits)."""
        idx = classes.clone()
        if novel is not None:
            idx = torch.where(novel, classes + self.K, classes)
        idx = idx.clamp_max(len(self._pools) - 1)
        pick = (torch.rand(idx.shape, generator=g) * self._sizes[idx]).long()
        return self._flat[self._offsets[idx] + pick]


class MultimodalSampler:
    """Vectorised sampler of ``[M1, M2, y] x N + [M1_q, M2_q]`` sequences.

    Parameters
    ----------
    bank1:
        Primary modality (its novel classes supply the paired M1 items, its label
        embeddings the label tokens).
    m2:
        Secondary modality: a :class:`~mmicl.gmm_data.GMMBank` or :class:`DigitsModality`;
        its ``L`` labels (``L2``) must not exceed ``bank1.L``.
    N, B, p_B, p_C, eps, alpha:
        As in :class:`~mmicl.gmm_data.BurstySampler`, applied to the M2 classes.
    control:
        ``none`` (the authors' pairing: the M1 query is from the target's paired class),
        ``m1_random`` (M1 query from an unrelated class) or ``m1_zero`` (M1 query zeroed).
    label_map:
        The L1 label of each M2 label (default: the first ``L2`` labels).
    label_shift:
        Shift of the M2 labels (mod ``L2``) before the map; 1 gives the IC2 split.
    query_free:
        Non-bursty contexts without an M2 item of the query's label (the ``IW0`` split).

    Examples
    --------
    >>> b1, b2 = GMMBank(64, 8, 16, seed=0), GMMBank(4, 4, 6, n_novel=16, seed=1)
    >>> s = MultimodalSampler(b1, b2, N=4, B=2)
    >>> batch = s.sample(3, torch.Generator().manual_seed(0))
    >>> tuple(batch["m1"].shape), tuple(batch["m2"].shape), tuple(batch["target"].shape)
    ((3, 5, 16), (3, 5, 6), (3,))
    """

    def __init__(
        self,
        bank1: GMMBank,
        m2: GMMBank | DigitsModality,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        control: str = "none",
        label_map: torch.Tensor | None = None,
        label_shift: int = 0,
        query_free: bool = False,
    ) -> None:
        if control not in CONTROLS:
            raise ValueError(f"unknown control {control!r}; choose from {', '.join(CONTROLS)}")
        if m2.L > bank1.L:
            raise ValueError(
                f"the secondary label set (L2={m2.L}) is larger than the primary one (L1={bank1.L})"
            )
        if label_map is None:
            label_map = torch.arange(m2.L)
        label_map = torch.as_tensor(label_map, dtype=torch.long)
        if (
            label_map.shape != (m2.L,)
            or label_map.unique().numel() != m2.L
            or not bool(((label_map >= 0) & (label_map < bank1.L)).all())
        ):
            raise ValueError(f"label_map must map the {m2.L} M2 labels to distinct L1 labels")
        n_pairs = max(m2.K, m2.n_novel) + 1
        if bank1.n_novel < n_pairs:
            raise ValueError(
                f"bank1 needs at least {n_pairs} novel classes to pair with M2, has {bank1.n_novel}"
            )
        self.m2_sampler = BurstySampler(
            m2, N, B, p_B, p_C, eps, alpha, label_shift=label_shift, query_free=query_free
        )
        self.bank1, self.m2, self.N, self.B, self.eps = bank1, m2, N, B, eps
        self.control, self.label_map = control, label_map

    @property
    def seq_len(self) -> int:
        """Length ``3N + 2`` of a sequence."""
        return 3 * self.N + 2

    def sample(self, S: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        """``S`` sequences: the raw modalities and the masks the measures need.

        Keys: ``m1`` (S, N+1, D1) and ``m2`` (S, N+1, D2) items (the last is the query),
        ``label_tokens`` (S, N, D1), ``target`` (S,) in L1 labels, ``labels`` (S, N+1),
        ``classes`` (S, N+1) M2 classes, ``label_mask`` / ``match_label`` / ``match_m1`` /
        ``match_m2`` (S, 3N+2) in the layout of :func:`interleave`.
        """
        N, bank1 = self.N, self.bank1
        draw = self.m2_sampler.draw_classes(S, g)
        novel = draw.novel[:, None].expand_as(draw.classes)
        m2 = self.m2.items(draw.classes, self.eps, g, novel)
        # pair each M2 class of a sequence with its own novel M1 class (a random injection)
        n_pairs = bank1.n_novel
        perm = torch.argsort(torch.rand(S, n_pairs, generator=g), 1)
        key = draw.classes % (n_pairs - 1)  # index n_pairs - 1 is kept for control queries
        m1_cls = torch.gather(perm, 1, key)
        if self.control == "m1_random":
            m1_cls[:, N] = perm[:, n_pairs - 1]
        m1 = bank1.items(m1_cls, self.eps, g, torch.ones_like(m1_cls, dtype=torch.bool))
        if self.control == "m1_zero":
            m1[:, N] = 0.0
        labels = self.label_map[draw.labels]
        target = labels[:, N]
        T = 3 * N + 2
        label_mask = torch.zeros(S, T, dtype=torch.bool)
        label_mask[:, 2 : 3 * N : 3] = True
        match_label = torch.zeros_like(label_mask)
        match_label[:, 2 : 3 * N : 3] = labels[:, :N] == target[:, None]
        same = draw.classes[:, :N] == draw.classes[:, N:]
        match_m1 = torch.zeros_like(label_mask)
        match_m1[:, 0 : 3 * N : 3] = (m1_cls[:, :N] == m1_cls[:, N:]) & (self.control == "none")
        match_m2 = torch.zeros_like(label_mask)
        match_m2[:, 1 : 3 * N : 3] = same
        return {
            "m1": m1,
            "m2": m2,
            "label_tokens": bank1.label_emb[labels[:, :N]],
            "target": target,
            "labels": labels,
            "classes": draw.classes,
            "bursty": draw.bursty,
            "novel": draw.novel,
            "label_mask": label_mask,
            "match_label": match_label,
            "match_m1": match_m1,
            "match_m2": match_m2,
        }


def interleave(m1: torch.Tensor, m2: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Token layout ``[M1_1, M2_1, y_1, ..., M1_q, M2_q]`` from (S, N+1, D) parts.

    ``m2`` must already live in the decoder's input space (encoded and projected).

    Examples
    --------
    >>> m1, m2, y = torch.zeros(1, 3, 2), torch.ones(1, 3, 2), torch.full((1, 2, 2), 7.0)
    >>> interleave(m1, m2, y)[0, :, 0].tolist()
    [0.0, 1.0, 7.0, 0.0, 1.0, 7.0, 0.0, 1.0]
    """
    S, n1, D = m1.shape
    N = n1 - 1
    ctx = torch.stack([m1[:, :N], m2[:, :N], labels], dim=2).reshape(S, 3 * N, D)
    return torch.cat([ctx, m1[:, N:], m2[:, N:]], dim=1)


def multimodal_eval_splits(
    train: MultimodalSampler, n: int = 1000, seed: int = 12345
) -> dict[str, dict[str, torch.Tensor]]:
    """Fixed ``test/IC/IC2/IW/IW0`` sets for a multimodal sampler (M2 classes decide the
    split; ``IW0`` is the query-free in-weights test)."""
    s = train.m2_sampler
    kw = {"N": train.N, "B": train.B, "eps": train.eps, "alpha": s.alpha}
    kw.update(control=train.control, label_map=train.label_map)
    samplers = {
        "test": train,
        "IC": MultimodalSampler(train.bank1, train.m2, p_B=1.0, p_C=1.0, **kw),
        "IC2": MultimodalSampler(train.bank1, train.m2, p_B=1.0, p_C=0.0, label_shift=1, **kw),
        "IW": MultimodalSampler(train.bank1, train.m2, p_B=0.0, p_C=0.0, **kw),
        "IW0": MultimodalSampler(train.bank1, train.m2, p_B=0.0, p_C=0.0, query_free=True, **kw),
    }
    return {
        name: smp.sample(n, torch.Generator().manual_seed(seed + 7919 * i))
        for i, (name, smp) in enumerate(samplers.items())
    }
