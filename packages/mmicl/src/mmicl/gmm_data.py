"""Bursty Gaussian-mixture in-context classification data (Reddy-style), vectorised.

Paper: "Dissecting Multimodal In-Context Learning: Modality Asymmetries and Circuit
Dynamics in Modern Transformers", Huang, Roth, Bouniot, Xu, Akata, ICML 2026
(arXiv 2601.20796); the task follows Reddy (2023) and Chan et al. (2022).

Map of the generator to the paper's data section:

1. class means ``mu_k ~ N(0, I/D)``, label embeddings ``l_m ~ N(0, I/D)``, class ``k`` has
   label ``k mod L`` -> :class:`GMMBank`;
2. an item of class ``k`` is ``(mu_k + eps * eta) / sqrt(1 + eps^2)``, ``eta ~ N(0, I/D)``
   -> :meth:`GMMBank.items`;
3. Zipf class frequencies ``P(k) ∝ (k + 1)^(-alpha)`` -> :func:`zipf_probs`;
4. bursty sequences (fraction ``p_B``): ``N/B`` classes, each repeated ``B`` times, the
   query's class one of them; non-bursty ones draw context and query i.i.d. from ``P``;
   a fraction ``p_C`` uses novel classes with per-sequence random labels
   -> :meth:`BurstySampler.sample` (no Python loop over sequences);
5. the sequence ``[x_1, l_1, ..., x_N, l_N, x_q]`` of length ``2N + 1``, the loss at the
   last token -> ``tokens`` / ``target`` of a sampled batch;
6. evaluation splits ``test`` (training distribution), ``IC`` (bursty, novel classes),
   ``IC2`` (bursty, labels shifted by ``+1 mod L``), ``IW`` (non-bursty) and ``IW0``
   (non-bursty and query-free: no context item shares the query's class or label, so an
   accuracy above ``1/L`` can only come from the weights) -> :func:`eval_splits`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

SPLITS = ("test", "IC", "IC2", "IW", "IW0")


def check_probability(name: str, value: float) -> float:
    """Return ``value`` if it lies in ``[0, 1]``, else raise a one-line ``ValueError``."""
    if not (0.0 <= float(value) <= 1.0) or math.isnan(float(value)):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value}")
    return float(value)


def zipf_probs(n: int, alpha: float) -> torch.Tensor:
    """Zipf law over ``n`` ranks: ``P(k) ∝ (k + 1)^(-alpha)``.

    Examples
    --------
    >>> zipf_probs(4, 0.0).tolist()
    [0.25, 0.25, 0.25, 0.25]
    >>> p = zipf_probs(3, 1.0); round(float(p[0] / p[1]), 6)
    2.0
    """
    if alpha < 0:
        raise ValueError(f"the Zipf exponent alpha must be >= 0, got {alpha}")
    w = torch.arange(1, n + 1, dtype=torch.float64) ** (-float(alpha))
    return w / w.sum()


class GMMBank:
    """Class means, novel-class means and label embeddings of one modality.

    Parameters
    ----------
    K:
        Number of training (item) classes; must be a positive multiple of ``L``.
    L:
        Number of labels; class ``k`` has label ``k mod L``.
    D:
        Item / label dimension.
    n_novel:
        Number of novel classes (never trained on; used by the IC split and ``p_C``).
    seed:
        Seed of the means and embeddings.

    Examples
    --------
    >>> bank = GMMBank(K=8, L=4, D=16, seed=0)
    >>> bank.means.shape, bank.label_emb.shape, bank.class_label[:6].tolist()
    (torch.Size([8, 16]), torch.Size([4, 16]), [0, 1, 2, 3, 0, 1])
    """

    def __init__(self, K: int, L: int, D: int, n_novel: int = 128, seed: int = 0) -> None:
        if L < 2:
            raise ValueError(f"the label count L must be >= 2, got {L}")
        if K < L:
            raise ValueError(f"the class count K={K} must be at least the label count L={L}")
        if K % L != 0:
            raise ValueError(f"the class count K={K} must be a multiple of the label count L={L}")
        if D < 1 or n_novel < 0:
            raise ValueError(f"need D >= 1 and n_novel >= 0, got D={D}, n_novel={n_novel}")
        self.K, self.L, self.D, self.n_novel, self.seed = K, L, D, n_novel, seed
        g = torch.Generator().manual_seed(seed)
        scale = 1.0 / math.sqrt(D)
        self.means = torch.randn(K, D, generator=g) * scale
        self.label_emb = torch.randn(L, D, generator=g) * scale
        self.novel_means = torch.randn(max(n_novel, 1), D, generator=g) * scale
        self.class_label = torch.arange(K) % L

    def items(
        self, classes: torch.Tensor, eps: float, g: torch.Generator, novel: torch.Tensor | None
    ) -> torch.Tensor:
        """Noisy items ``(mu_k + eps * eta) / sqrt(1 + eps^2)`` for a tensor of class ids.

        ``novel`` (same shape, bool) picks the mean from the novel bank instead.
        """
        mu = self.means[classes.clamp_max(self.K - 1)]
        if novel is not None and self.n_novel > 0:
            mu_novel = self.novel_means[classes.clamp_max(self.n_novel - 1)]
            mu = torch.where(novel[..., None], mu_novel, mu)
        eta = torch.randn(mu.shape, generator=g) / math.sqrt(self.D)
        return (mu + eps * eta) / math.sqrt(1.0 + eps**2)


@dataclass
class ClassDraw:
    """Class ids and labels of a batch of sequences (before items are drawn).

    ``classes``: (S, N + 1) class ids (the last one is the query's); ``labels``: (S, N + 1)
    labels; ``novel``: (S,) whether the sequence uses novel classes; ``bursty``: (S,).
    """

    classes: torch.Tensor
    labels: torch.Tensor
    novel: torch.Tensor
    bursty: torch.Tensor


class BurstySampler:
    """Vectorised sampler of bursty / non-bursty in-context classification sequences.

    Parameters
    ----------
    bank:
        The :class:`GMMBank` of the modality.
    N:
        Context length (number of item-label pairs).
    B:
        Burstiness: each context class of a bursty sequence appears ``B`` times; ``N`` must
        be a multiple of ``B`` and ``B < N``.
    p_B:
        Fraction of bursty sequences.
    p_C:
        Fraction of sequences that use novel classes (random labels per sequence).
    eps:
        Within-class noise.
    alpha:
        Zipf exponent of the class frequencies.
    no_repeats:
        Give the ``N/B`` classes of a bursty sequence distinct labels.
    label_shift:
        Add this to every label (mod ``L``); 1 gives the IC2 split.
    query_free:
        In non-bursty sequences, redraw every context item whose class has the query's
        label (hence also its class): the in-weights test ``IW0``, where copying from the
        context cannot help.

    Examples
    --------
    >>> bank = GMMBank(K=64, L=8, D=8, seed=0)
    >>> s = BurstySampler(bank, N=8, B=2, eps=0.1)
    >>> batch = s.sample(5, torch.Generator().manual_seed(0))
    >>> tuple(batch["tokens"].shape), tuple(batch["target"].shape)
    ((5, 17, 8), (5,))
    """

    def __init__(
        self,
        bank: GMMBank,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        no_repeats: bool = False,
        label_shift: int = 0,
        query_free: bool = False,
    ) -> None:
        if N < 1 or B < 1:
            raise ValueError(f"need N >= 1 and B >= 1, got N={N}, B={B}")
        if B >= N:
            raise ValueError(f"the burst size B={B} must be smaller than the context length N={N}")
        if N % B != 0:
            raise ValueError(f"the context length N={N} must be a multiple of the burst size B={B}")
        if eps < 0:
            raise ValueError(f"the within-class noise eps must be >= 0, got {eps}")
        self.p_B = check_probability("p_B (bursty fraction)", p_B)
        self.p_C = check_probability("p_C (novel-class fraction)", p_C)
        if self.p_C > 0 and bank.n_novel < N // B:
            raise ValueError(
                f"p_C > 0 needs at least N/B={N // B} novel classes, the bank has {bank.n_novel}"
            )
        if self.p_B > 0 and self.p_C < 1 and bank.K < N // B:
            raise ValueError(
                f"bursty sequences need N/B={N // B} distinct classes; the bank has K={bank.K}"
            )
        if query_free and bank.L < 2:
            raise ValueError("query-free contexts need at least two labels")
        if no_repeats and N // B > bank.L:
            raise ValueError(f"no_repeats needs N/B={N // B} <= L={bank.L} distinct labels")
        self.bank, self.N, self.B = bank, N, B
        self.eps, self.alpha, self.no_repeats, self.label_shift = (
            eps,
            alpha,
            no_repeats,
            label_shift,
        )
        self.query_free = query_free
        self.probs = zipf_probs(bank.K, alpha)

    @property
    def seq_len(self) -> int:
        """Length ``2N + 1`` of a sequence."""
        return 2 * self.N + 1

    def _distinct_classes(self, S: int, n: int, g: torch.Generator) -> torch.Tensor:
        """``n`` distinct classes per row: i.i.d. draws from ``P`` conditioned on distinctness.

        Rows with a repeat are redrawn (vectorised rejection); rows still repeating after a
        few rounds (tiny ``K`` or steep Zipf laws) fall back to sequential draws without
        replacement.
        """
        p = self.probs.float()
        out = torch.multinomial(p, S * n, replacement=True, generator=g).view(S, n)
        for _ in range(8):
            srt = out.sort(1).values
            bad = (srt[:, 1:] == srt[:, :-1]).any(1)
            if not bad.any():
                return out
            k = int(bad.sum())
            redraw = torch.multinomial(p, k * n, replacement=True, generator=g).view(k, n)
            out[bad] = redraw
        srt = out.sort(1).values
        bad = (srt[:, 1:] == srt[:, :-1]).any(1)
        if bad.any():
            k = int(bad.sum())
            out[bad] = torch.multinomial(p.expand(k, -1), n, replacement=False, generator=g)
        return out

    def _query_free(self, classes: torch.Tensor, rows: torch.Tensor, g) -> torch.Tensor:
        """Redraw, in ``rows``, the context classes whose label is the query's: from ``P``
        conditioned on a different label (vectorised rejection; after a few rounds a
        uniform draw among the classes of the other labels)."""
        bank, N = self.bank, self.N
        classes = classes.clone()
        ctx, q_lab = classes[:, :N], bank.class_label[classes[:, N]][:, None]
        p = self.probs.float()
        for _ in range(16):
            clash = (bank.class_label[ctx] == q_lab) & rows[:, None]
            if not clash.any():
                break
            ctx[clash] = torch.multinomial(p, int(clash.sum()), replacement=True, generator=g)
        clash = (bank.class_label[ctx] == q_lab) & rows[:, None]
        if clash.any():  # label q + r (r in 1..L-1), then one of that label's K/L classes
            n = int(clash.sum())
            lab = (q_lab.expand_as(ctx)[clash] + 1 + torch.randint(0, bank.L - 1, (n,), generator=g)) % bank.L  # fmt: skip
            ctx[clash] = lab + bank.L * torch.randint(0, bank.K // bank.L, (n,), generator=g)
        classes[:, :N] = ctx
        return classes

    def draw_classes(self, S: int, g: torch.Generator) -> ClassDraw:
        """Class ids and labels of ``S`` sequences (vectorised, no loop over sequences)."""
        N, B, n_cls, bank = self.N, self.B, self.N // self.B, self.bank
        bursty = torch.rand(S, generator=g) < self.p_B
        novel = torch.rand(S, generator=g) < self.p_C
        # bursty: N/B distinct classes from P, each B times, in random order; query one of them
        distinct = self._distinct_classes(S, n_cls, g)  # (S, N/B)
        novel_distinct = torch.argsort(torch.rand(S, max(bank.n_novel, n_cls), generator=g), 1)
        novel_distinct = novel_distinct[:, :n_cls]
        distinct = torch.where(novel[:, None], novel_distinct, distinct)
        order = torch.argsort(torch.rand(S, N, generator=g), dim=1)
        slot = (torch.arange(N) // B)[order]  # (S, N): which of the N/B classes per position
        ctx_b = torch.gather(distinct, 1, slot)
        q_slot = torch.randint(0, n_cls, (S, 1), generator=g)
        q_b = torch.gather(distinct, 1, q_slot)
        # non-bursty: context and query i.i.d. from P (novel ones uniformly)
        iid = torch.multinomial(self.probs.float(), S * (N + 1), replacement=True, generator=g)
        iid = iid.view(S, N + 1)
        iid_novel = torch.randint(0, max(bank.n_novel, 1), (S, N + 1), generator=g)
        iid = torch.where(novel[:, None], iid_novel, iid)
        classes = torch.where(bursty[:, None], torch.cat([ctx_b, q_b], 1), iid)
        if self.query_free:
            classes = self._query_free(classes, ~bursty & ~novel, g)
        # labels: k mod L for training classes, random per sequence for novel ones
        labels = bank.class_label[classes.clamp_max(bank.K - 1)]
        if self.no_repeats:  # distinct labels for the N/B classes of a bursty sequence
            perm = torch.argsort(torch.rand(S, bank.L, generator=g), 1)[:, :n_cls]
            lab_b = torch.gather(perm, 1, torch.cat([slot, q_slot], 1))
            labels = torch.where(bursty[:, None] & ~novel[:, None], lab_b, labels)
        # novel classes: a random label per (sequence, class); classes < n_novel index a table
        novel_table = torch.randint(0, bank.L, (S, max(bank.n_novel, n_cls)), generator=g)
        # the N/B classes of a bursty novel sequence get distinct labels (a pure ICL task)
        perm = torch.argsort(torch.rand(S, bank.L, generator=g), 1)
        k = min(n_cls, bank.L)
        novel_table.scatter_(1, novel_distinct[:, :k], perm[:, :k])
        novel_labels = torch.gather(novel_table, 1, classes.clamp_max(novel_table.shape[1] - 1))
        labels = torch.where(novel[:, None], novel_labels, labels)
        labels = (labels + self.label_shift) % bank.L
        return ClassDraw(classes, labels, novel, bursty)

    def sample(self, S: int, g: torch.Generator) -> dict[str, torch.Tensor]:
        """``S`` sequences as a batch dict.

        Keys: ``tokens`` (S, 2N+1, D), ``target`` (S,) the query's label, ``classes``
        (S, N+1), ``labels`` (S, N+1), ``bursty`` / ``novel`` (S,), ``label_mask`` (S, 2N+1)
        marking label tokens, ``match_label`` (S, 2N+1) label tokens equal to the target,
        ``match_item`` (S, 2N+1) item tokens of the query's class.
        """
        draw = self.draw_classes(S, g)
        bank, N = self.bank, self.N
        items = bank.items(draw.classes, self.eps, g, draw.novel[:, None].expand_as(draw.classes))
        lab = bank.label_emb[draw.labels[:, :N]]  # (S, N, D)
        ctx = torch.stack([items[:, :N], lab], dim=2).reshape(S, 2 * N, bank.D)
        tokens = torch.cat([ctx, items[:, N:]], dim=1)
        target = draw.labels[:, N]
        label_mask = torch.zeros(S, 2 * N + 1, dtype=torch.bool)
        label_mask[:, 1 : 2 * N : 2] = True
        match_label = torch.zeros_like(label_mask)
        match_label[:, 1 : 2 * N : 2] = draw.labels[:, :N] == target[:, None]
        match_item = torch.zeros_like(label_mask)
        match_item[:, 0 : 2 * N : 2] = draw.classes[:, :N] == draw.classes[:, N:]
        return {
            "tokens": tokens,
            "target": target,
            "classes": draw.classes,
            "labels": draw.labels,
            "bursty": draw.bursty,
            "novel": draw.novel,
            "label_mask": label_mask,
            "match_label": match_label,
            "match_item": match_item,
        }


def eval_samplers(train: BurstySampler) -> dict[str, BurstySampler]:
    """The four evaluation distributions of a training sampler.

    ``test``: the training distribution; ``IC``: bursty, novel classes (pure ICL);
    ``IC2``: bursty training classes with labels shifted by ``+1 mod L`` (context must
    override memory); ``IW``: non-bursty training classes; ``IW0``: non-bursty and
    query-free (no context item has the query's label: in-weights memory only).
    """
    bank, kw = train.bank, {"N": train.N, "B": train.B, "eps": train.eps, "alpha": train.alpha}
    return {
        "test": train,
        "IC": BurstySampler(bank, p_B=1.0, p_C=1.0, no_repeats=train.no_repeats, **kw),
        "IC2": BurstySampler(
            bank, p_B=1.0, p_C=0.0, no_repeats=train.no_repeats, label_shift=1, **kw
        ),
        "IW": BurstySampler(bank, p_B=0.0, p_C=0.0, **kw),
        "IW0": BurstySampler(bank, p_B=0.0, p_C=0.0, query_free=True, **kw),
    }


def eval_splits(
    train: BurstySampler, n: int = 1000, seed: int = 12345
) -> dict[str, dict[str, torch.Tensor]]:
    """Fixed, seeded evaluation sets (``n`` sequences each) for ``test/IC/IC2/IW/IW0``.

    Examples
    --------
    >>> s = BurstySampler(GMMBank(32, 8, 8), N=4, B=2)
    >>> sets = eval_splits(s, n=10)
    >>> sorted(sets), int(sets["IC"]["novel"].sum())
    (['IC', 'IC2', 'IW', 'IW0', 'test'], 10)
    """
    out = {}
    for i, (name, sampler) in enumerate(eval_samplers(train).items()):
        out[name] = sampler.sample(n, torch.Generator().manual_seed(seed + 7919 * i))
    return out
