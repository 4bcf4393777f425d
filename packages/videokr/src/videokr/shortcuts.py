"""Planted text shortcuts and the audit of the blind (video-dependency) filter.

Paper: VideoKR (ICML 2026), Sec. 3.3: items answerable without the video are removed
("video-dependency filtering"), so that blind accuracy on the filtered data is at chance. This
module checks that claim for :class:`~videokr.filters.BlindTextFilter` against shortcut kinds
it must catch, with a learner that is *not* the filter's probe:

* :data:`FAMILIES` and :func:`plant_shortcut` -- five planted shortcut families, each a way for
  the text alone to give the answer away: ``marker_word`` (the right option carries a marker
  word), ``question_overlap`` (the question mentions a topic word that only the right option
  repeats; every option carries *a* topic word, so a bag of words sees nothing),
  ``option_length`` (the right option is the longest), ``negation`` (every wrong option is
  negated), ``answer_prior`` (a question phrasing that always has the same answer text).
* :func:`text_items` -- genuine multiple-choice items of the micro-world's templates (balanced
  answers, no text cue) without rendering any video.
* :class:`CrossEncoderLearner` -- the independent text-only learner: a decomposable-attention
  model reading each option with its question (learned embeddings, word-to-word attention both
  ways), trained with cross-entropy over the options (PyTorch).
* :func:`audit_family` -- one family, one seed: plant it in train and eval, run the blind filter
  (cross-fitted: on train by folds, on eval by folds with train as extra fitting data), train
  the learner on the *unfiltered* train split (every shortcut there to learn) and measure its
  accuracy on the eval split before and after filtering, the filter's catch rate and the
  share of genuine items kept.
* :func:`tune_threshold` -- the filter's threshold chosen on some families only (the others are
  held out of the choice).

>>> items = text_items(4, np.random.default_rng(0))
>>> planted = plant_shortcut(items, "negation", 0.5, np.random.default_rng(1))
>>> r = next(i for i in items if i["id"] in planted)
>>> sum("not" in o or "never" in o for o in r["options"])
3
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .filters import BlindTextFilter, label_index, option_texts
from .generation import TemplateGenerator
from .knowledge import DIRECTIONS, MATERIALS
from .manifest import VideoRecord
from .schema import OPTION_LETTERS

Record = dict[str, Any]
FAMILIES = ("marker_word", "question_overlap", "option_length", "negation", "answer_prior")
MARKERS = ("clearly", "indeed", "certainly")
TOPICS = [
    "window",
    "door",
    "table",
    "lamp",
    "river",
    "bridge",
    "garden",
    "tower",
    "market",
    "field",
    "forest",
    "harbor",
    "kitchen",
    "station",
    "castle",
    "valley",
    "meadow",
    "island",
    "canyon",
    "desert",
    "temple",
    "library",
    "stadium",
    "museum",
]
FILLERS = ("in", "the", "clip", "shown", "here", "as", "seen", "then")
NEGATORS = ("not", "never")
PRIOR_QUESTIONS = {  # a phrasing used only by planted items, with one fixed answer each
    "VidR": ("in short , which way does it travel ?", "down"),
    "KnowVid": ("in short , what is it made of ?", "ice"),
    "KnowVidR": ("in short , where does it travel next ?", "up"),
}


def text_items(n_videos: int, rng: np.random.Generator, prefix: str = "v") -> list[Record]:
    """Genuine items: one per skill for ``n_videos`` random (direction, material) clips."""
    gen = TemplateGenerator()
    items = []
    for i in range(n_videos):
        d = DIRECTIONS[int(rng.integers(4))]
        m = list(MATERIALS)[int(rng.integers(4))]
        video = VideoRecord(f"{prefix}{i:05d}", f"videos/{prefix}{i:05d}.npy", "CC-BY-4.0",
                            caption=f"the object moves {d} ; it is made of {m}")  # fmt: skip
        items.extend(gen.generate(video, s, rng) for s in ("VidR", "KnowVid", "KnowVidR"))
    return items


def _set_options(r: Record, texts: list[str]) -> None:
    r["options"] = [f"{OPTION_LETTERS[k]}. {t}" for k, t in enumerate(texts)]


def plant_shortcut(
    items: list[Record], family: str, rate: float, rng: np.random.Generator
) -> set[str]:
    """Rewrite a ``rate`` share of ``items`` (in place) so that ``family`` gives the answer away.

    Returns the ids of the planted items. Labels stay balanced except for ``answer_prior``,
    whose planted items take the phrasing's fixed answer.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown shortcut family {family!r}; choose from {FAMILIES}")
    n = int(round(rate * len(items)))
    chosen = rng.permutation(len(items))[:n]
    planted = set()
    for i in chosen:
        r = items[int(i)]
        texts, k = option_texts(r), label_index(r)
        if family == "marker_word":
            texts[k] = f"{texts[k]} {MARKERS[int(rng.integers(len(MARKERS)))]}"
        elif family == "question_overlap":
            words = rng.choice(TOPICS, size=len(texts) + 1, replace=False)
            r["question"] = r["question"].replace(" ?", f" , near the {words[0]} ?")
            texts = [
                f"{t} near the {words[0] if j == k else words[j + 1]}" for j, t in enumerate(texts)
            ]
        elif family == "option_length":
            extra = int(rng.integers(2, 4))
            pad = [extra if j == k else int(rng.integers(0, extra)) for j in range(len(texts))]
            texts = [
                " ".join([t, *rng.choice(FILLERS, size=p).tolist()])
                for t, p in zip(texts, pad, strict=True)
            ]
        elif family == "negation":
            texts = [
                t if j == k else f"{NEGATORS[int(rng.integers(2))]} {t}"
                for j, t in enumerate(texts)
            ]
        else:  # answer_prior
            question, answer = PRIOR_QUESTIONS[r["skill"]]
            r["question"] = question
            r["solution"] = f"<answer>{OPTION_LETTERS[texts.index(answer)]}</answer>"
        _set_options(r, texts)
        planted.add(r["id"])
    return planted


# ------------------------------------------------------------------ the independent learner


class CrossEncoderLearner:
    """Independent text-only learner: decomposable attention over (question, option) pairs.

    Each option is read *with* its question (Parikh et al. 2016, "A decomposable attention
    model"): learned word embeddings; every option word attends over the question words and
    every question word over the option words; each word is compared with what it aligned to
    (``G([a; b; a * b])``), the comparisons are summed per side and scored by an MLP. A softmax
    over an item's options is trained with cross-entropy (AdamW). Word-level vocabulary from
    the training items; no hand-made features, and no code or features shared with the
    filter's probes.

    Parameters
    ----------
    dim:
        Embedding and hidden width.
    epochs, lr, batch_size:
        Training schedule.
    seed:
        Initialisation and batch order.

    Reference: the "blind" baselines of VideoKR (ICML 2026) Sec. 3.3.

    >>> items = text_items(20, np.random.default_rng(0))
    >>> _ = plant_shortcut(items, "marker_word", 1.0, np.random.default_rng(0))
    >>> CrossEncoderLearner(epochs=15).fit(items).accuracy(items) > 0.9
    True
    """

    def __init__(
        self, dim: int = 32, epochs: int = 20, lr: float = 3e-3, batch_size: int = 32,
        seed: int = 0,
    ) -> None:  # fmt: skip
        self.dim, self.epochs, self.lr = dim, epochs, lr
        self.batch_size, self.seed = batch_size, seed

    def _ids(self, seqs: list[list[str]]):
        import torch

        width = max(1, max(len(x) for x in seqs))
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        for i, x in enumerate(seqs):
            if x:
                ids[i, : len(x)] = torch.tensor([self.vocab.get(t, 1) for t in x])
        return ids

    def _encode(self, records: Sequence[Record]):
        qs, os_, n_opt = [], [], []
        for r in records:
            q = r["question"].lower().split()
            for o in option_texts(r):
                qs.append(q)
                os_.append(o.lower().split())
            n_opt.append(len(r["options"]))
        return self._ids(qs), self._ids(os_), n_opt

    def _build(self):
        import torch
        from torch import nn

        torch.manual_seed(self.seed)
        d = self.dim
        self.net = nn.ModuleDict({
            "emb": nn.Embedding(len(self.vocab), d, padding_idx=0),
            "attend": nn.Sequential(nn.Linear(d, d), nn.ReLU()),
            "compare": nn.Sequential(nn.Linear(3 * d, d), nn.ReLU()),
            "score": nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, 1)),
        })  # fmt: skip

    def _scores(self, q, o):
        import torch

        n = self.net
        eq, eo = n["emb"](q), n["emb"](o)
        mq, mo = (q > 0).float(), (o > 0).float()
        att = n["attend"](eo) @ n["attend"](eq).transpose(1, 2)  # (B, Lo, Lq)
        neg = torch.finfo(att.dtype).min
        a_o = torch.softmax(att.masked_fill(mq[:, None, :] == 0, neg), -1)
        a_q = torch.softmax(att.masked_fill(mo[:, :, None] == 0, neg), 1)
        beta = a_o @ eq  # question content aligned to each option word
        alpha = a_q.transpose(1, 2) @ eo  # option content aligned to each question word
        v_o = (n["compare"](torch.cat([eo, beta, eo * beta], -1)) * mo[..., None]).sum(1)
        v_q = (n["compare"](torch.cat([eq, alpha, eq * alpha], -1)) * mq[..., None]).sum(1)
        return n["score"](torch.cat([v_o, v_q], -1)).squeeze(-1)

    def fit(self, records: Sequence[Record]) -> CrossEncoderLearner:
        import torch

        words = sorted({w for r in records for w in r["question"].lower().split()}
                       | {w for r in records for o in option_texts(r) for w in o.lower().split()})  # fmt: skip
        self.vocab = {"[PAD]": 0, "[UNK]": 1}
        self.vocab.update({w: i + 2 for i, w in enumerate(words)})
        self._build()
        opt = torch.optim.AdamW(self.net.parameters(), lr=self.lr)
        gen = torch.Generator().manual_seed(self.seed)
        records = list(records)
        for _ in range(self.epochs):
            order = torch.randperm(len(records), generator=gen).tolist()
            for b in range(0, len(order), self.batch_size):
                batch = [records[i] for i in order[b : b + self.batch_size]]
                for k in sorted({len(r["options"]) for r in batch}):  # equal option counts
                    part = [r for r in batch if len(r["options"]) == k]
                    q, o, _ = self._encode(part)
                    logits = self._scores(q, o).view(len(part), k)
                    y = torch.tensor([label_index(r) for r in part])
                    loss = torch.nn.functional.cross_entropy(logits, y)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return self

    def predict(self, records: Sequence[Record]) -> list[int]:
        import torch

        out = []
        with torch.no_grad():
            for b in range(0, len(records), 256):
                q, o, n_opt = self._encode(list(records[b : b + 256]))
                s = self._scores(q, o)
                start = 0
                for k in n_opt:
                    out.append(int(s[start : start + k].argmax()))
                    start += k
        return out

    def accuracy(self, records: Sequence[Record]) -> float:
        if not records:
            return float("nan")
        pred = self.predict(records)
        return float(np.mean([p == label_index(r) for p, r in zip(pred, records, strict=True)]))


# ------------------------------------------------------------------ the audit


@dataclass
class FamilyWorld:
    """Train and eval items with one shortcut family planted, and the cross-fitted probe scores."""

    family: str
    train: list[Record]
    eval: list[Record]
    planted: set[str]
    p_train: np.ndarray  # out-of-fold probability of the labelled option
    p_eval: np.ndarray


def family_world(family: str, n_videos: int, rate: float, seed: int, folds: int = 5) -> FamilyWorld:
    """Plant ``family`` in fresh train / eval items and score them with the blind filter's probe."""
    rng = np.random.default_rng([seed, FAMILIES.index(family)])
    n_eval = max(2, n_videos // 2)
    train = text_items(n_videos - n_eval, rng, "t")
    evals = text_items(n_eval, rng, "e")
    planted = plant_shortcut(train, family, rate, rng) | plant_shortcut(evals, family, rate, rng)
    filt = BlindTextFilter(folds=folds, seed=seed)
    p_tr = filt.probe().cross_fit_proba(train, folds, seed)
    p_ev = filt.probe().cross_fit_proba(evals, folds, seed, reference=train)
    return FamilyWorld(family, train, evals, planted, _label_p(train, p_tr), _label_p(evals, p_ev))


def _label_p(records: Sequence[Record], proba: np.ndarray) -> np.ndarray:
    return np.array([proba[i, label_index(r)] for i, r in enumerate(records)])


def tune_threshold(
    worlds: Sequence[FamilyWorld], grid: Sequence[float] = (0.4, 0.45, 0.5, 0.6, 0.7)
) -> float:
    """The lowest threshold of ``grid`` that keeps >= 95% of genuine items in every world.

    Only the worlds passed in are looked at (families held out of the choice stay unseen).
    """
    for t in sorted(grid):
        ok = all(
            np.mean(
                [p < t for r, p in zip(w.eval, w.p_eval, strict=True) if r["id"] not in w.planted]
            )
            >= 0.95
            for w in worlds
        )
        if ok:
            return float(t)
    return float(max(grid))


def audit_family(
    w: FamilyWorld, threshold: float, learner_epochs: int = 20, seed: int = 0, bow_folds: int = 5
) -> dict:
    """Catch rate, genuine kept, and the independent learner's blind accuracy before / after.

    The learner is fitted on the *unfiltered* train split. The same learner is also scored on
    the eval split filtered by the 0.1 bag-of-words probe (``BlindTextFilter(probe="bow")``).
    """
    kept_eval = [r for r, p in zip(w.eval, w.p_eval, strict=True) if p < threshold]
    kept_ids = {r["id"] for r in kept_eval}
    planted_eval = [r for r in w.eval if r["id"] in w.planted]
    genuine_eval = [r for r in w.eval if r["id"] not in w.planted]
    genuine_train = [p for r, p in zip(w.train, w.p_train, strict=True) if r["id"] not in w.planted]
    learner = CrossEncoderLearner(epochs=learner_epochs, seed=seed).fit(copy.deepcopy(w.train))
    bow = BlindTextFilter(threshold=threshold, folds=bow_folds, seed=seed, probe="bow")
    p_bow = _label_p(w.eval, bow.probe().cross_fit_proba(w.eval, bow_folds, seed, w.train))
    kept_bow = [r for r, p in zip(w.eval, p_bow, strict=True) if p < threshold]
    bow_ids = {r["id"] for r in kept_bow}
    kept_genuine = sum(r["id"] in kept_ids for r in genuine_eval) + sum(
        p < threshold for p in genuine_train
    )
    return {
        "family": w.family,
        "threshold": threshold,
        "planted eval": len(planted_eval),
        "caught": float(np.mean([r["id"] not in kept_ids for r in planted_eval])),
        "genuine kept": kept_genuine / (len(genuine_eval) + len(genuine_train)),
        "chance": float(np.mean([1 / len(r["options"]) for r in kept_eval])),
        "learner on planted": learner.accuracy(planted_eval),
        "blind before": learner.accuracy(w.eval),
        "blind after": learner.accuracy(kept_eval),
        "bow caught": float(np.mean([r["id"] not in bow_ids for r in planted_eval])),
        "bow blind after": learner.accuracy(kept_bow),
    }  # fmt: skip


def _mean_sd(xs: Sequence[float]) -> str:
    return f"{np.mean(xs):.3f} ± {np.std(xs):.3f}"


def shortcut_table(
    n_videos: int, rate: float, held_out: Sequence[str], seeds: Sequence[int],
    learner_epochs: int = 20, progress: bool = True,
):  # fmt: skip
    """Per family, mean ± sd over ``seeds``: catch rate, genuine kept, blind accuracy before/after.

    Per seed, the filter threshold is tuned (:func:`tune_threshold`) on the families not in
    ``held_out`` only, then every family is audited (:func:`audit_family`).
    """
    import sys

    from icml26_shared.results import Table

    bad = [f for f in held_out if f not in FAMILIES]
    if bad:
        raise ValueError(f"unknown held-out family {bad[0]!r}; choose from {FAMILIES}")
    runs: dict[str, list[dict]] = {f: [] for f in FAMILIES}
    thresholds = []
    for seed in seeds:
        worlds = {}
        for f in FAMILIES:
            if progress:
                print(f"shortcuts: seed {seed}, {f}", file=sys.stderr, flush=True)
            worlds[f] = family_world(f, n_videos, rate, seed)
        t = tune_threshold([worlds[f] for f in FAMILIES if f not in held_out])
        thresholds.append(t)
        for f in FAMILIES:
            runs[f].append(audit_family(worlds[f], t, learner_epochs, seed))
    table = Table(
        "Blind filter audit: planted shortcut families, independent text-only learner",
        [
            "family",
            "held out",
            "planted (eval)",
            "caught",
            "genuine kept",
            "chance",
            "learner on planted items",
            "blind before",
            "blind after",
            "blind after (max)",
            "BoW filter: caught",
            "BoW filter: blind after",
        ],  # fmt: skip
        notes=(
            f"{len(seeds)} seeds (mean ± sd; max over seeds); per seed and family "
            f"{n_videos - n_videos // 2} train and {n_videos // 2} eval clips x 3 skills, "
            f"{rate:.0%} of items planted. Filter: BlindTextFilter (InteractionProbe, "
            "5-fold cross-fitted; eval scored with train as extra fitting data); threshold "
            f"tuned per seed on the families not held out (chosen: {sorted(set(thresholds))}). "
            "Learner: CrossEncoderLearner (decomposable attention), fitted on the unfiltered "
            "train split; 'learner on planted items' = its accuracy on the planted eval items "
            "before filtering (it learned the shortcut); blind before / after = its accuracy "
            "on the whole eval split before / after filtering; genuine kept over train and "
            "eval; BoW filter = the 0.1 bag-of-words probe at the same threshold."
        ),
    )
    for f in FAMILIES:
        rs = runs[f]
        col = lambda k, rs=rs: [r[k] for r in rs]  # noqa: E731
        table.add_row(**{
            "family": f, "held out": "yes" if f in held_out else "no",
            "planted (eval)": int(np.mean(col("planted eval"))),
            "caught": _mean_sd(col("caught")), "genuine kept": _mean_sd(col("genuine kept")),
            "chance": float(np.mean(col("chance"))),
            "learner on planted items": _mean_sd(col("learner on planted")),
            "blind before": _mean_sd(col("blind before")),
            "blind after": _mean_sd(col("blind after")),
            "blind after (max)": float(np.max(col("blind after"))),
            "BoW filter: caught": _mean_sd(col("bow caught")),
            "BoW filter: blind after": _mean_sd(col("bow blind after")),
        })  # fmt: skip
    return table, runs
