"""ICL vs IWL evaluation and circuit read-outs of trained models.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. accuracy on the splits ``test`` / ``IC`` (ICL on novel classes) / ``IC2`` (context
   overrides memory) / ``IW`` (in-weights) -> :func:`split_accuracies`;
2. the progress measures of :mod:`mmicl.progress_measures` on the IC split: IH strength and
   TILA of the last layer, TLA, previous-token strength of the first layer, CLA, and TIIA
   (per modality when multimodal) -> :func:`circuit_measures`;
3. per-head induction / previous-token scores and the knockout comparison (top induction
   head vs a random head vs the top previous-token head) -> :func:`head_scores`,
   :func:`knockout_table`;
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
    decoder: ICLDecoder, sets: dict[str, dict[str, torch.Tensor]], seed: int = 0
) -> list[dict]:
    """IC / IW accuracy with no knockout, the top induction head, a random other head (not
    the top induction or previous-token head when the model has more than two heads), the
    top previous-token head and every head knocked out. Heads are ranked on the IC set."""
    scores = head_scores(decoder, sets["IC"])
    top_ih = max(scores, key=lambda k: scores[k]["ih"])
    top_prev = max(scores, key=lambda k: scores[k]["prev"])
    others = [h for h in scores if h not in (top_ih, top_prev)] or [
        h for h in scores if h != top_ih
    ]
    rand = random.Random(seed).choice(others) if others else top_ih
    variants = [
        ("none", []),
        ("top induction head", [top_ih]),
        ("random other head", [rand]),
        ("top previous-token head", [top_prev]),
        ("all heads", list(scores)),
    ]
    rows = []
    for name, heads in variants:
        with knockout(decoder, heads):
            acc = split_accuracies(decoder, sets)
        rows.append(
            {
                "knockout": name,
                "heads": ", ".join(f"L{layer}H{h}" for layer, h in heads) or "-",
                "IC acc": acc["IC"],
                "IC2 acc": acc["IC2"],
                "IW acc": acc["IW"],
            }
        )
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
