"""Induction-circuit progress measures, read off the attention of the final (query) token.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

With ``a_j`` the attention of the last token to token ``j`` (one layer, averaged over heads
or one head), ``M`` the label tokens whose label equals the target, ``U`` the other label
tokens and ``I`` the item tokens of the query's class:

1. IH strength ``= mean_{j in M} a_j - mean_{j in U} a_j`` -> :func:`induction_strength`;
2. TILA (target-label attention) ``= sum_{j in M} a_j`` -> :func:`target_label_attention`;
3. TIIA (target-item attention) ``= sum_{j in I} a_j`` (per modality in the multimodal
   case, by passing that modality's item mask) -> :func:`target_item_attention`;
4. TLA (total label attention) ``= sum_{j in M ∪ U} a_j`` over **all** ``N`` label tokens
   (the reference code sums only the first ``(T - 1) // 3`` of them in the unimodal case;
   here the label tokens come from the sequence layout) -> :func:`total_label_attention`;
5. previous-token strength: the mean of the ``k``-th subdiagonal ``A[t, t - k]``
   -> :func:`previous_token_strength`;
6. CLA: the fraction of predictions that are one of the context's labels
   -> :func:`context_label_accuracy`.

Each has a torchmetrics :class:`~torchmetrics.Metric` (:class:`InductionStrength`,
:class:`TILA`, :class:`TIIA`, :class:`TLA`, :class:`PrevTokenStrength`,
:class:`ContextLabelAccuracy`) that averages it over sequences.
"""

from __future__ import annotations

import torch
from torchmetrics import Metric


def final_row(attn: torch.Tensor, head: int | None = None) -> torch.Tensor:
    """Attention row of the last token, (S, T), from a layer's pattern (S, H, T, T).

    ``head=None`` averages over heads.
    """
    if attn.dim() != 4:
        raise ValueError(f"expected an attention pattern (S, H, T, T), got {tuple(attn.shape)}")
    row = attn[:, :, -1, :]
    return row.mean(1) if head is None else row[:, head]


def induction_strength(
    row: torch.Tensor, match_label: torch.Tensor, label_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sequence IH strength and a mask of sequences where it is defined.

    Defined where at least one label token matches the target; the non-matching mean is 0
    when every label token matches.

    Examples
    --------
    >>> row = torch.tensor([[0.0, 0.5, 0.0, 0.5, 0.0]])   # all on the two matching labels
    >>> match = torch.tensor([[False, True, False, True, False]])
    >>> labels = torch.tensor([[False, True, False, True, False]])
    >>> induction_strength(row, match, labels)[0].tolist()
    [0.5]
    """
    match = match_label.float()
    other = (label_mask & ~match_label).float()
    n_match, n_other = match.sum(-1), other.sum(-1)
    mean_match = (row * match).sum(-1) / n_match.clamp_min(1)
    mean_other = (row * other).sum(-1) / n_other.clamp_min(1)
    return mean_match - mean_other, n_match > 0


def target_label_attention(row: torch.Tensor, match_label: torch.Tensor) -> torch.Tensor:
    """TILA: attention mass on the label tokens equal to the target, per sequence."""
    return (row * match_label.float()).sum(-1)


def target_item_attention(row: torch.Tensor, match_item: torch.Tensor) -> torch.Tensor:
    """TIIA: attention mass on the items of the query's class, per sequence."""
    return (row * match_item.float()).sum(-1)


def total_label_attention(row: torch.Tensor, label_mask: torch.Tensor) -> torch.Tensor:
    """TLA: attention mass on all label tokens of the sequence, per sequence.

    Examples
    --------
    >>> row = torch.full((1, 9), 1 / 9)
    >>> mask = torch.tensor([[False, True] * 4 + [False]])   # N = 4 label tokens
    >>> round(float(total_label_attention(row, mask)), 4)
    0.4444
    """
    return (row * label_mask.float()).sum(-1)


def previous_token_strength(attn: torch.Tensor, offset: int = 1, head: int | None = None):
    """Mean of the ``offset``-th subdiagonal ``A[t, t - offset]``, per sequence.

    Examples
    --------
    >>> A = torch.eye(5).roll(-1, dims=1).tril()   # every token attends to its predecessor
    >>> A[0, 0] = 1.0
    >>> float(previous_token_strength(A[None, None]).item())
    1.0
    """
    if attn.dim() != 4:
        raise ValueError(f"expected an attention pattern (S, H, T, T), got {tuple(attn.shape)}")
    a = attn.mean(1) if head is None else attn[:, head]
    T = a.shape[-1]
    if not 1 <= offset < T:
        raise ValueError(f"offset must be in [1, {T - 1}], got {offset}")
    return torch.diagonal(a, offset=-offset, dim1=-2, dim2=-1).mean(-1)


def context_label_accuracy(pred: torch.Tensor, context_labels: torch.Tensor) -> torch.Tensor:
    """Per sequence: 1 if the predicted label is one of the context's labels."""
    return (pred[:, None] == context_labels).any(-1).float()


class _MeanMeasure(Metric):
    full_state_update = False
    higher_is_better = True

    def __init__(self, head: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.head = head
        self.add_state(
            "total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum"
        )
        self.add_state(
            "count", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum"
        )

    def _add(self, values: torch.Tensor, valid: torch.Tensor | None = None) -> None:
        if valid is not None:
            values = values[valid]
        self.total += values.double().sum()
        self.count += values.numel()

    def compute(self) -> torch.Tensor:
        return self.total / self.count.clamp_min(1)


class InductionStrength(_MeanMeasure):
    """Mean IH strength of a layer over sequences (see :func:`induction_strength`).

    Examples
    --------
    >>> A = torch.zeros(1, 1, 5, 5); A[0, 0, -1, 1] = 1.0
    >>> batch = {"match_label": torch.tensor([[0, 1, 0, 0, 0]]).bool(),
    ...          "label_mask": torch.tensor([[0, 1, 0, 1, 0]]).bool()}
    >>> m = InductionStrength(); m.update(A, batch); float(m.compute())
    1.0
    """

    def update(self, attn: torch.Tensor, batch: dict) -> None:
        values, valid = induction_strength(
            final_row(attn, self.head), batch["match_label"], batch["label_mask"]
        )
        self._add(values, valid)


class TILA(_MeanMeasure):
    """Mean target-label attention of a layer (see :func:`target_label_attention`).

    Examples
    --------
    >>> A = torch.zeros(1, 1, 3, 3); A[0, 0, -1, 1] = 0.75
    >>> m = TILA(); m.update(A, {"match_label": torch.tensor([[0, 1, 0]]).bool()})
    >>> float(m.compute())
    0.75
    """

    def update(self, attn: torch.Tensor, batch: dict) -> None:
        self._add(target_label_attention(final_row(attn, self.head), batch["match_label"]))


class TIIA(_MeanMeasure):
    """Mean target-item attention of a layer; ``key`` picks the item mask (e.g. ``match_m2``).

    Examples
    --------
    >>> A = torch.zeros(1, 1, 3, 3); A[0, 0, -1, 0] = 0.5
    >>> m = TIIA(); m.update(A, {"match_item": torch.tensor([[1, 0, 0]]).bool()})
    >>> float(m.compute())
    0.5
    """

    def __init__(self, head: int | None = None, key: str = "match_item", **kwargs) -> None:
        super().__init__(head, **kwargs)
        self.key = key

    def update(self, attn: torch.Tensor, batch: dict) -> None:
        self._add(target_item_attention(final_row(attn, self.head), batch[self.key]))


class TLA(_MeanMeasure):
    """Mean total label attention over all label tokens (see :func:`total_label_attention`).

    Examples
    --------
    >>> A = torch.zeros(1, 1, 5, 5); A[0, 0, -1, 1] = A[0, 0, -1, 3] = 0.5
    >>> m = TLA(); m.update(A, {"label_mask": torch.tensor([[0, 1, 0, 1, 0]]).bool()})
    >>> float(m.compute())
    1.0
    """

    def update(self, attn: torch.Tensor, batch: dict) -> None:
        self._add(total_label_attention(final_row(attn, self.head), batch["label_mask"]))


class PrevTokenStrength(_MeanMeasure):
    """Mean ``offset``-th subdiagonal of a layer's attention (see :func:`previous_token_strength`).

    Examples
    --------
    >>> A = torch.full((1, 1, 4, 4), 0.25).tril()
    >>> m = PrevTokenStrength(); m.update(A, {}); float(m.compute())
    0.25
    """

    def __init__(self, head: int | None = None, offset: int = 1, **kwargs) -> None:
        super().__init__(head, **kwargs)
        self.offset = offset

    def update(self, attn: torch.Tensor, batch: dict) -> None:
        self._add(previous_token_strength(attn, self.offset, self.head))


class ContextLabelAccuracy(_MeanMeasure):
    """Fraction of predictions that are one of the context labels (CLA).

    Examples
    --------
    >>> m = ContextLabelAccuracy()
    >>> m.update(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), {"labels": torch.tensor([[1, 1, 0], [1, 1, 1]])})
    >>> float(m.compute())
    0.5
    """

    def update(self, logits: torch.Tensor, batch: dict) -> None:
        n_ctx = batch["labels"].shape[1] - 1  # the last column is the query's label
        self._add(context_label_accuracy(logits.argmax(-1), batch["labels"][:, :n_ctx]))
