"""Anchors of the ICL splits: what copying and ideal induction score on the same sets.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

Two rules that use the context only, computed on the fixed evaluation sets the models are
scored on (``test/IC/IC2/IW``, :func:`mmicl.gmm_data.eval_splits` or
:func:`mmicl.multimodal_data.multimodal_eval_splits`):

1. *random context label*: answer the label of a uniformly drawn context item, i.e.
   ``y_hat = y_j`` with ``j ~ U{1..N}`` (what copying without matching gives; about ``B/N``
   on bursty sequences) -> ``"random context label"``;
2. *nearest context item* (the ideal induction rule): ``y_hat = y_j`` with
   ``j = argmin_j ||x_j - x_q||^2`` over the context items (the M2 items when multimodal)
   -> ``"nearest context item (ideal induction)"``.

:func:`context_anchors` returns both, per split; ``mmicl benchmark`` prints them and
``reproduce`` adds them as rows of the stage-1 table.
"""

from __future__ import annotations

RANDOM_LABEL = "random context label"
NEAREST_ITEM = "nearest context item (ideal induction)"


def context_anchors(sets: dict, N: int, seed: int = 0) -> dict[str, dict[str, float]]:
    """Accuracy of the two context-only rules on each evaluation set.

    Args:
        sets: ``{split: batch}`` with ``labels`` (context labels first), ``target`` and
            either ``tokens`` (unimodal, items at even positions, query last) or ``m2``
            (multimodal: ``N`` context items then the query).
        N: Context length.
        seed: Seed of the random context pick.

    Returns:
        ``{anchor name: {split: accuracy}}``.

    Examples
    --------
    >>> import torch
    >>> from mmicl.gmm_data import BurstySampler, GMMBank, eval_splits
    >>> sets = eval_splits(BurstySampler(GMMBank(64, 8, 8, seed=0), 4, 2), 64, 0)
    >>> acc = context_anchors(sets, 4)
    >>> acc[NEAREST_ITEM]["IC"] > acc[RANDOM_LABEL]["IC"]
    True
    """
    import torch

    out: dict[str, dict[str, float]] = {RANDOM_LABEL: {}, NEAREST_ITEM: {}}
    g = torch.Generator().manual_seed(seed)
    for name, b in sets.items():
        labels = b["labels"][:, :N]
        rows = torch.arange(len(labels))
        pick = torch.randint(0, N, (len(labels),), generator=g)
        out[RANDOM_LABEL][name] = float((labels[rows, pick] == b["target"]).float().mean())
        if "tokens" in b:
            items, query = b["tokens"][:, 0 : 2 * N : 2], b["tokens"][:, -1:]
        else:
            items, query = b["m2"][:, :N], b["m2"][:, N:]
        nearest = (items - query).pow(2).sum(-1).argmin(1)
        out[NEAREST_ITEM][name] = float((labels[rows, nearest] == b["target"]).float().mean())
    return out
