"""ICL vs IWL evaluation and circuit read-outs of trained models.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. accuracy on the splits ``test`` / ``IC`` (ICL on novel classes) / ``IC2`` (context
   overrides memory) / ``IW`` (non-bursty) / ``IW0`` (in-weights, query-free contexts)
   -> :func:`split_accuracies`;
2. the progress measures of :mod:`mmicl.progress_measures` on the IC split: IH strength and
   TILA of the last layer, TLA, previous-token strength of the first layer, CLA, and TIIA
   (per modality when multimodal) -> :func:`circuit_measures`;
3. per-head induction / previous-token scores and the knockout comparison (top-k induction
   heads vs k random heads across layers vs the top-k previous-token heads, heads ranked on
   one split and evaluated on another) -> :func:`head_scores`, :func:`knockout_table`;
4. the training-curve recorder used by ``reproduce`` -> :class:`CurveRecorder`.
"""

from __future__ import annotations

import random

import lightning.pytorch as pl
import torch

from mmicl.progress_measures import (
    TIIA,
    TILA,
    TLA,
    ContextLabelAccuracy,
    InductionStrength,
    PrevTokenStrength,
)
from mmicl.transformer import ICLDecoder, knockout


def _logits(model, batch, return_attention: bool = False):
    if "tokens" in batch:
        dec = model.model if isinstance(model, pl.LightningModule) else model
        if not isinstance(dec, ICLDecoder):
            dec = dec.decoder
        return dec(batch["tokens"], return_attention=return_attention)
    inner = model.model if isinstance(model, pl.LightningModule) else model
    return inner(batch, return_attention=return_attention)


@torch.no_grad()
def split_accuracies(model, sets: dict[str, dict[str, torch.Tensor]]) -> dict[str, float]:
    """Accuracy of ``model`` on each fixed evaluation set."""
    was = model.training
    model.eval()
    out = {}
    for name, batch in sets.items():
        out[name] = float((_logits(model, batch).argmax(-1) == batch["target"]).float().mean())
    model.train(was)
    return out


@torch.no_grad()
def circuit_measures(model, batch: dict[str, torch.Tensor]) -> dict[str, float]:
    """Progress measures on one (IC) set: ``ih``, ``tila``, ``tla`` (last layer),
    ``prev`` (first layer, offset 1, or 2 when multimodal: label <- M2 <- M1), ``cla``,
    ``tiia`` (unimodal) or ``tiia_m1`` / ``tiia_m2``."""
    was = model.training
    model.eval()
    logits, attns = _logits(model, batch, return_attention=True)
    model.train(was)
    first, last = attns[0], attns[-1]
    out = {}
    for name, metric in (("ih", InductionStrength()), ("tila", TILA()), ("tla", TLA())):
        metric.update(last, batch)
        out[name] = float(metric.compute())
    multimodal = "match_m2" in batch
    prev = PrevTokenStrength(offset=1)
    prev.update(first, batch)
    out["prev"] = float(prev.compute())
    keys = ("match_m1", "match_m2") if multimodal else ("match_item",)
    for key in keys:
        m = TIIA(key=key)
        m.update(last, batch)
        out["tiia" + key.removeprefix("match").removeprefix("_item")] = float(m.compute())
    cla = ContextLabelAccuracy()
    cla.update(logits, batch)
    out["cla"] = float(cla.compute())
    return out


@torch.no_grad()
def head_scores(decoder: ICLDecoder, batch: dict[str, torch.Tensor]) -> dict[tuple[int, int], dict]:
    """Per ``(layer, head)``: IH strength (final token) and previous-token strength."""
    decoder.eval()
    _, attns = decoder(batch["tokens"], return_attention=True)
    out = {}
    for layer, attn in enumerate(attns):
        for h in range(attn.shape[1]):
            ih = InductionStrength(head=h)
            ih.update(attn, batch)
            prev = PrevTokenStrength(head=h)
            prev.update(attn, batch)
            out[(layer, h)] = {"ih": float(ih.compute()), "prev": float(prev.compute())}
    return out


@torch.no_grad()
def knockout_table(
    decoder: ICLDecoder,
    sets: dict[str, dict[str, torch.Tensor]],
    seed: int = 0,
    rank_batch: dict[str, torch.Tensor] | None = None,
    ks: tuple[int, ...] = (1,),
    draws: int = 10,
) -> list[dict]:
    """Accuracy on ``sets`` with the top-``k`` induction heads, ``k`` random heads and the
    top-``k`` previous-token heads knocked out, for each ``k`` in ``ks``, plus no knockout
    and every head.

    Heads are ranked on ``rank_batch`` (another split than ``sets``, e.g. the validation IC
    set; ``None``: ``sets["IC"]``, ranking and evaluation on the same sequences). The random
    control draws ``k`` heads uniformly across all layers among the heads that are not the
    top-``k`` induction heads (``draws`` seeded draws, or every such set when there are
    fewer); its accuracies are the mean over draws, ``... sd`` their spread.
    """
    import itertools
    import statistics

    scores = head_scores(decoder, sets["IC"] if rank_batch is None else rank_batch)
    heads = sorted(scores)
    by_ih = sorted(heads, key=lambda h: -scores[h]["ih"])
    by_prev = sorted(heads, key=lambda h: -scores[h]["prev"])
    rng = random.Random(seed)

    def name(hs) -> str:
        return ", ".join(f"L{layer}H{h}" for layer, h in hs) or "-"

    def score(hs) -> dict[str, float]:
        with knockout(decoder, list(hs)):
            return split_accuracies(decoder, sets)

    def row(kind: str, k: int, label: str, accs: list[dict]) -> dict:
        out = {"knockout": kind, "k": k, "heads": label}
        for split in ("IC", "IC2", "IW0"):
            vals = [a[split] for a in accs if split in a]
            if vals:
                out[f"{split} acc"] = statistics.fmean(vals)
        ic = [a["IC"] for a in accs]
        out["IC sd"] = statistics.stdev(ic) if len(ic) > 1 else 0.0
        return out

    rows = [row("none", 0, "-", [score([])])]
    for k in ks:
        if not 1 <= k < len(heads):
            continue
        top = by_ih[:k]
        rows.append(row("top induction heads", k, name(top), [score(top)]))
        pool = [h for h in heads if h not in top]
        combos = list(itertools.combinations(pool, k))
        picks = combos if len(combos) <= draws else rng.sample(combos, draws)
        rows.append(row("random heads (across layers)", k, f"{len(picks)} draws",
                        [score(c) for c in picks]))  # fmt: skip
        rows.append(row("top previous-token heads", k, name(by_prev[:k]), [score(by_prev[:k])]))
    rows.append(row("all heads", len(heads), name(heads), [score(heads)]))
    return rows


class CurveRecorder(pl.Callback):
    """Every ``every`` training steps (and at the end), record split accuracies and the
    circuit measures on the IC set into :attr:`rows`."""

    def __init__(self, sets: dict[str, dict[str, torch.Tensor]], every: int) -> None:
        self.sets, self.every, self.rows = sets, every, []

    def _record(self, module, step: int) -> None:
        if self.rows and self.rows[-1]["step"] == step:
            return
        row = {"step": step, **split_accuracies(module, self.sets)}
        row.update(circuit_measures(module, self.sets["IC"]))
        self.rows.append(row)

    def on_train_start(self, trainer, pl_module) -> None:
        self._record(pl_module, 0)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step % self.every == 0:
            self._record(pl_module, trainer.global_step)

    def on_train_end(self, trainer, pl_module) -> None:
        self._record(pl_module, trainer.global_step)
