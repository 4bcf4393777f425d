"""Evaluation of quantized models: perplexity and KL for causal LMs, fidelity for encoders.

Metrics of Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956): perplexity and the token-mean
KL(P_fp || P_q) in bits per token for causal LMs; for the MiniLM encoder (no LM head) the
cosine between full-precision and quantized mean-pooled embeddings, the Spearman correlation of
their pairwise-similarity matrices and the top-k neighbour overlap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torchmetrics.text import Perplexity


@torch.no_grad()
def perplexity(model: nn.Module, tokens: torch.Tensor, batch_size: int = 16) -> float:
    """Next-token perplexity on ``tokens`` ``(N, T)`` (torchmetrics ``Perplexity``)."""
    metric = Perplexity()
    for b in tokens.split(batch_size):
        logits = model(input_ids=b).logits.float()
        metric.update(logits[:, :-1], b[:, 1:])
    return float(metric.compute())


def kl_bits(teacher_logits: torch.Tensor, student_logits: torch.Tensor) -> torch.Tensor:
    """Token-mean KL(P_teacher || P_student) in bits (differentiable in the student)."""
    lp = torch.log_softmax(teacher_logits.float(), dim=-1)
    lq = torch.log_softmax(student_logits.float(), dim=-1)
    return (lp.exp() * (lp - lq)).sum(-1).mean() / math.log(2)


@torch.no_grad()
def lm_report(
    reference: nn.Module, model: nn.Module, tokens: torch.Tensor, batch_size: int = 16
) -> dict[str, float]:
    """Perplexity of ``model`` and its KL to ``reference`` (bits/token) on ``tokens``."""
    kls = []
    for b in tokens.split(batch_size):
        kls.append(
            float(kl_bits(reference(input_ids=b).logits, model(input_ids=b).logits)) * len(b)
        )
    return {"perplexity": perplexity(model, tokens, batch_size), "kl_bits": sum(kls) / len(tokens)}


def _spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a.numpy(), b.numpy()).statistic)


def embedding_fidelity(
    reference: torch.Tensor, quantized: torch.Tensor, k: int = 10
) -> dict[str, float]:
    """Fidelity of sentence embeddings ``(N, D)``: cosine, similarity Spearman, top-k overlap.

    >>> e = torch.randn(20, 8, generator=torch.Generator().manual_seed(0))
    >>> embedding_fidelity(e, e)["neighbour_overlap"]
    1.0
    """
    r = torch.nn.functional.normalize(reference.double(), dim=-1)
    q = torch.nn.functional.normalize(quantized.double(), dim=-1)
    cos = float((r * q).sum(-1).mean())
    sr, sq = r @ r.T, q @ q.T
    iu = torch.triu_indices(len(r), len(r), 1)
    spear = _spearman(sr[iu[0], iu[1]], sq[iu[0], iu[1]])
    k = min(k, len(r) - 1)
    eye = torch.eye(len(r), dtype=torch.bool)
    nr = sr.masked_fill(eye, -2).topk(k, dim=-1).indices
    nq = sq.masked_fill(eye, -2).topk(k, dim=-1).indices
    overlap = sum(len(set(a.tolist()) & set(b.tolist())) for a, b in zip(nr, nq, strict=True))
    return {
        "cosine": cos,
        "similarity_spearman": spear,
        "neighbour_overlap": overlap / (k * len(r)),
    }


def layer_relative_mse(
    reference: nn.Module, model: nn.Module, inputs: Sequence[torch.Tensor], names: Sequence[str]
) -> dict[str, float]:
    """Per-layer relative output MSE ||W x - What xhat||^2 / ||W x||^2 of the named linears.

    Runs both models on the same inputs (``input_ids`` batches, or tokenizer dicts) with forward
    hooks, so xhat is the input the quantized model really sees. Padded positions of a dict
    batch (``attention_mask == 0``) are left out: their hidden states never reach an output
    (attention and mean pooling mask them), and counting them would score the layers on
    inputs no real token produces.
    """
    ref_mods, q_mods = dict(reference.named_modules()), dict(model.named_modules())
    num = dict.fromkeys(names, 0.0)
    den = dict.fromkeys(names, 0.0)
    for batch in inputs:
        outs: dict[str, list[torch.Tensor]] = {n: [] for n in names}
        handles = []
        for mods in (ref_mods, q_mods):
            for n in names:
                handles.append(
                    mods[n].register_forward_hook(
                        lambda m, i, o, n=n, outs=outs: outs[n].append(o.detach())
                    )
                )
        try:
            with torch.no_grad():
                reference(**batch) if isinstance(batch, dict) else reference(input_ids=batch)
                model(**batch) if isinstance(batch, dict) else model(input_ids=batch)
        finally:
            for h in handles:
                h.remove()
        mask = batch.get("attention_mask") if isinstance(batch, dict) else None
        for n in names:
            y, yh = outs[n][0].double(), outs[n][1].double()
            if mask is not None and y.dim() == 3:
                keep = mask.to(torch.bool)
                y, yh = y[keep], yh[keep]
            num[n] += float((y - yh).pow(2).sum())
            den[n] += float(y.pow(2).sum())
    return {n: num[n] / den[n] if den[n] > 0 else float("nan") for n in names}
