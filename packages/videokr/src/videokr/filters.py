"""Quality control filters (paper Sec. 3.3) and the probes behind them.

Every filter is ``filter(records) -> FilterReport`` (kept records plus ``{id: reason}`` for the
removed ones), so a pipeline can say what each step removed and why.

* :class:`LicenseFilter` -- drops items whose video the :class:`~videokr.manifest.LicensePolicy` rejects.
* :class:`ContaminationFilter` -- drops train items whose video (by content hash) is in the eval split.
* :class:`BlindTextFilter` -- video-dependency filtering: a text-only probe, cross-fitted, removes
  items it answers with probability >= ``threshold`` (paper: items answerable without the video);
  the probe is :class:`InteractionProbe` (question-option cross features) by default.
* :class:`SingleFrameFilter` -- the same with a probe that sees one (middle) frame (VideoKR-Eval's
  single-frame probing).
* :class:`SelfConsistencyFilter` -- ``k`` sampled answers from a solver; removes items whose
  majority answer disagrees with the label.
* :class:`CoTValidator` -- the rationale must conclude with the labelled option and, for knowledge
  skills, cite a knowledge point.
* :class:`MinHashDedup` -- near-duplicate removal with MinHash LSH (``datasketch``) over question
  shingles, confirmed by the same video content.

Probes (also the blind / single-frame baselines of the results table): :class:`BlindTextProbe`,
:class:`InteractionProbe`, :class:`SingleFrameProbe`, :class:`PerceptionSolver`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from .knowledge import MATERIALS, KnowledgeBank, after_clip
from .manifest import LicensePolicy, Manifest
from .microworld import SCENE_H, VideoStore, video_hash
from .schema import OPTION_LETTERS, answer_of

Record = dict[str, Any]


@dataclass
class FilterReport:
    """What one filter kept and removed (``removed``: record id -> reason)."""

    name: str
    kept: list[Record]
    removed: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"filter": self.name, "kept": len(self.kept), "removed": len(self.removed)}


def _split(name: str, records: Sequence[Record], reasons: dict[str, str]) -> FilterReport:
    return FilterReport(name, [r for r in records if r["id"] not in reasons], reasons)


def label_index(record: Record) -> int:
    return OPTION_LETTERS.index(answer_of(record["solution"]))


def option_texts(record: Record) -> list[str]:
    return [o[3:] if len(o) > 2 and o[1] == "." else o for o in record["options"]]


# ------------------------------------------------------------------ probes


class _Probe:
    """Multinomial logistic probe over the answer letter; ``predict_proba`` -> ``(n, 10)``."""

    def features(self, records: Sequence[Record], fit: bool) -> Any:
        raise NotImplementedError

    def fit(self, records: Sequence[Record]) -> _Probe:
        x = self.features(records, fit=True)
        y = np.array([label_index(r) for r in records])
        self.clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000, C=self.C))
        self.clf.fit(x, y)
        return self

    def predict_proba(self, records: Sequence[Record]) -> np.ndarray:
        out = np.zeros((len(records), len(OPTION_LETTERS)))
        out[:, self.clf.classes_] = self.clf.predict_proba(self.features(records, fit=False))
        return out

    def predict(self, records: Sequence[Record]) -> list[str]:
        return [OPTION_LETTERS[int(i)] for i in self.predict_proba(records).argmax(1)]

    def cross_fit_proba(
        self, records: Sequence[Record], folds: int, seed: int, reference: Sequence[Record] = ()
    ) -> np.ndarray:
        """Out-of-fold probabilities: each item is scored by a probe that never saw it.

        ``reference`` records (e.g. the train pool when filtering eval) join every fold's fit.
        """
        idx = np.random.default_rng(seed).permutation(len(records))
        out = np.zeros((len(records), len(OPTION_LETTERS)))
        for part in np.array_split(idx, folds):
            train = [records[i] for i in np.setdiff1d(idx, part)] + list(reference)
            if len({label_index(r) for r in train}) < 2:
                continue
            self.fit(train)
            out[part] = self.predict_proba([records[i] for i in part])
        return out


class BlindTextProbe(_Probe):
    """Text-only probe: bag of words of question and options, plus option lengths by position.

    >>> recs = [{"question": "q", "options": ["A. a", "B. b long long"], "solution": "<answer>B</answer>"}] * 4
    >>> recs += [{"question": "q", "options": ["A. a long long", "B. b"], "solution": "<answer>A</answer>"}] * 4
    >>> BlindTextProbe().fit(recs).predict(recs[:1])
    ['B']
    """

    def __init__(self, C: float = 1.0) -> None:
        self.C = C

    def _text(self, r: Record) -> str:
        opts = " ".join(f"{o[:1]}_{w}" for o in r["options"] for w in o[3:].split())
        return f"{r['question']} {opts}"

    def features(self, records, fit):
        if fit:
            self.vec = CountVectorizer(token_pattern=r"[^\s]+").fit(
                [self._text(r) for r in records]
            )
        bow = self.vec.transform([self._text(r) for r in records]).toarray()
        n = len(OPTION_LETTERS)
        lengths = np.zeros((len(records), 2 * n))
        for i, r in enumerate(records):
            lens = [len(o.split()) for o in r["options"]]
            lengths[i, : len(lens)] = lens
            top = max(lens)
            if lens.count(top) == 1:
                lengths[i, n + lens.index(top)] = 1.0
        return np.hstack([bow, lengths])


NEGATIONS = frozenset({"not", "no", "never", "none", "nothing", "neither", "nor", "cannot"})


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class InteractionProbe(_Probe):
    """Text-only probe that scores each option *together with its question* (a cross-feature model).

    One logistic model over (question, option) pairs, shared by all options (a conditional-logit
    style ranker); an item's option probabilities are its pair scores normalised over its options.
    Features of option ``k`` of an item:

    * question-word x option-word crosses (``q:w|o:v``): question-conditioned answer priors and
      word overlap of a particular question word with an option;
    * option words (``o:v``) and the same *relative to the item's other options*
      (``1[v in o_k] - mean_j 1[v in o_j]``): marker words, negation that only some options carry;
    * overlap ``|words(q) & words(o_k)|``, absolute and relative to the other options, and
      whether it is the unique maximum: topic-word repetition, whatever the word;
    * length in words and characters, relative to the other options, unique longest / shortest;
    * the option's position (letter prior).

    Parameters
    ----------
    C:
        Inverse L2 strength of the logistic model (scikit-learn ``LogisticRegression``).
    n_features:
        Hashing width for the sparse features (``FeatureHasher``).

    Reference: VideoKR (ICML 2026) Sec. 3.3, video-dependency filtering (items answerable
    without the video are removed); this probe is ours (the paper uses several strong VLMs).

    >>> recs = [{"question": f"which way , near the {w} ?", "solution": "<answer>A</answer>",
    ...          "options": [f"A. left near the {w}", "B. right near the cup"]} for w in "abcdefgh"]
    >>> recs += [{"question": f"which way , near the {w} ?", "solution": "<answer>B</answer>",
    ...           "options": ["A. left near the cup", f"B. right near the {w}"]} for w in "ijklmnop"]
    >>> p = InteractionProbe().fit(recs)
    >>> p.predict([{"question": "which way , near the zz ?", "solution": "<answer>B</answer>",
    ...             "options": ["A. left near the cup", "B. right near the zz"]}])
    ['B']
    """

    def __init__(self, C: float = 1.0, n_features: int = 2**16) -> None:
        self.C, self.n_features = C, n_features

    def pair_features(self, r: Record) -> list[dict[str, float]]:
        """One sparse feature dict per option of record ``r``."""
        q = set(_words(r["question"]))
        opts = [_words(o) for o in option_texts(r)]
        sets = [set(o) for o in opts]
        n = len(opts)
        vocab = set().union(*sets) if sets else set()
        share = {v: sum(v in s for s in sets) / n for v in vocab}
        overlap = [len(q & s) for s in sets]
        lens = [len(o) for o in opts]
        chars = [len(" ".join(o)) for o in opts]
        neg = [sum(w in NEGATIONS for w in o) for o in opts]
        mean = lambda xs: sum(xs) / n  # noqa: E731
        out = []
        for k, s in enumerate(sets):
            f: dict[str, float] = {f"pos:{k}": 1.0, "bias": 1.0}
            for v in s:
                f[f"o:{v}"] = 1.0
                f[f"rel:{v}"] = 1.0 - share[v]
                for w in q:
                    f[f"q:{w}|o:{v}"] = 1.0
            for v in vocab - s:
                f[f"rel:{v}"] = -share[v]
            f["overlap"] = float(overlap[k])
            f["overlap_rel"] = overlap[k] - mean(overlap)
            f["overlap_top"] = float(
                overlap[k] == max(overlap) and overlap.count(max(overlap)) == 1
            )
            f["len_rel"] = lens[k] - mean(lens)
            f["chars_rel"] = (chars[k] - mean(chars)) / 10.0
            f["longest"] = float(lens[k] == max(lens) and lens.count(max(lens)) == 1)
            f["shortest"] = float(lens[k] == min(lens) and lens.count(min(lens)) == 1)
            f["neg_rel"] = neg[k] - mean(neg)
            out.append(f)
        return out

    def _matrix(self, records: Sequence[Record]):
        from sklearn.feature_extraction import FeatureHasher

        hasher = FeatureHasher(n_features=self.n_features, alternate_sign=False)
        feats, owner = [], []
        for i, r in enumerate(records):
            for f in self.pair_features(r):
                feats.append(f)
                owner.append(i)
        return hasher.transform(feats), np.array(owner)

    def fit(self, records: Sequence[Record]) -> InteractionProbe:
        x, owner = self._matrix(records)
        labels = np.array([label_index(r) for r in records])
        pos = np.concatenate([np.arange(len(r["options"])) for r in records])
        y = (pos == labels[owner]).astype(int)
        self.clf = LogisticRegression(C=self.C, solver="liblinear", tol=1e-3, random_state=0)
        self.clf.fit(x, y)
        return self

    def predict_proba(self, records: Sequence[Record]) -> np.ndarray:
        out = np.zeros((len(records), len(OPTION_LETTERS)))
        if not records:
            return out
        x, owner = self._matrix(records)
        score = self.clf.decision_function(x)
        pos = np.concatenate([np.arange(len(r["options"])) for r in records])
        for i in range(len(records)):
            s = score[owner == i]
            e = np.exp(s - s.max())
            out[i, pos[owner == i]] = e / e.sum()
        return out


class SingleFrameProbe(_Probe):
    """Probe that sees only the middle frame (2x2-pooled pixels) and the skill of the question."""

    def __init__(self, store: VideoStore, C: float = 0.1) -> None:
        self.store, self.C = store, C

    def features(self, records, fit):
        frames = []
        for r in records:
            v = self.store.load(r["video_path"])
            mid = v[len(v) // 2]
            frames.append(
                mid.reshape(mid.shape[0] // 2, 2, mid.shape[1] // 2, 2).mean((1, 3)).ravel()
            )
        skills = sorted({"VidR", "KnowVid", "KnowVidR"})
        onehot = np.array([[r.get("skill") == s for s in skills] for r in records], float)
        return np.hstack([np.asarray(frames), onehot])


class PerceptionSolver:
    """The micro-world's verifier model: tracks the object, reads speed/flicker, applies the rules.

    Each call looks at a random subset of the frames and answers at random with probability
    ``noise``, so ``k`` calls are ``k`` samples (self-consistency).
    """

    def __init__(self, store: VideoStore, noise: float = 0.1) -> None:
        self.store, self.noise = store, noise

    def read(self, video: np.ndarray, frames: np.ndarray) -> tuple[str, str]:
        v = video[:, :SCENE_H, :]  # the caption strip may carry on-screen text
        cents, peaks = [], []
        for t in frames:
            mask = v[t] > 0.35
            rows, cols = np.nonzero(mask)
            cents.append((rows.mean(), cols.mean()) if len(rows) else (np.nan, np.nan))
            peaks.append(v[t].max())
        c = np.array(cents)
        steps = np.diff(c, axis=0) / np.diff(frames)[:, None]
        dr, dc = np.nanmedian(steps, axis=0)
        if abs(dr) > abs(dc):
            direction, speed = ("down" if dr > 0 else "up"), abs(dr)
        else:
            direction, speed = ("right" if dc > 0 else "left"), abs(dc)
        flicker = bool(np.ptp(peaks) > 0.3)
        material = next(m for m, (s, f) in MATERIALS.items() if s == round(speed) and f == flicker) \
            if round(speed) in (1, 2) else "cork"  # fmt: skip
        return direction, material

    def __call__(self, record: Record, rng: np.random.Generator) -> str:
        opts = option_texts(record)
        if rng.random() < self.noise:
            return OPTION_LETTERS[int(rng.integers(len(opts)))]
        video = self.store.load(record["video_path"])
        keep = np.sort(rng.choice(len(video), size=len(video) - 2, replace=False))
        direction, material = self.read(video, keep)
        skill = record.get("skill")
        answer = {"VidR": direction, "KnowVid": material}.get(skill)
        if answer is None:
            answer = after_clip(direction, material)
        for i, o in enumerate(opts):
            if o.split(" , ")[0] == answer:
                return OPTION_LETTERS[i]
        return OPTION_LETTERS[int(rng.integers(len(opts)))]


# ------------------------------------------------------------------ filters


class LicenseFilter:
    """Keep items whose video's manifest entry passes ``policy``."""

    name = "license"

    def __init__(self, manifest: Manifest, policy: LicensePolicy | None = None) -> None:
        self.manifest, self.policy = manifest, policy or LicensePolicy()

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        by_path = self.manifest.by_path()
        reasons = {}
        for r in records:
            video = by_path.get(r["video_path"])
            if video is None:
                reasons[r["id"]] = f"video {r['video_path']!r} is not in the manifest"
                continue
            ok, why = self.policy.check(video.license)
            if not ok:
                reasons[r["id"]] = f"license rejected: {why}"
        return _split(self.name, records, reasons)


class ContaminationFilter:
    """Drop train items whose video (path or content hash) appears in the eval split."""

    name = "contamination"

    def __init__(self, eval_records: Sequence[Record], store: VideoStore) -> None:
        self.store = store
        self.eval_hash = {}
        for r in eval_records:
            self.eval_hash.setdefault(video_hash(store.load(r["video_path"])), r["id"])
            self.eval_hash.setdefault(r["video_path"], r["id"])

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        reasons = {}
        for r in records:
            key = video_hash(self.store.load(r["video_path"]))
            hit = self.eval_hash.get(r["video_path"]) or self.eval_hash.get(key)
            if hit is not None:
                reasons[r["id"]] = f"video overlaps eval item {hit!r}"
        return _split(self.name, records, reasons)


class _ProbeFilter:
    name = "probe"
    what = "a probe"

    def __init__(self, threshold: float = 0.6, folds: int = 5, seed: int = 0) -> None:
        self.threshold, self.folds, self.seed = threshold, folds, seed
        self.reference: list[Record] = []  # extra fitting data (never scored)

    def probe(self) -> _Probe:
        raise NotImplementedError

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        records = list(records)
        if len(records) < 2 * self.folds:
            return FilterReport(self.name, records, {})
        proba = self.probe().cross_fit_proba(records, self.folds, self.seed, self.reference)
        reasons = {}
        for r, p in zip(records, proba, strict=True):
            pc = float(p[label_index(r)])
            if pc >= self.threshold:
                reasons[r["id"]] = f"answerable by {self.what} (p={pc:.2f} >= {self.threshold})"
        return _split(self.name, records, reasons)


class BlindTextFilter(_ProbeFilter):
    """Remove items a text-only probe answers confidently (cross-fitted).

    Parameters
    ----------
    threshold:
        An item goes when the out-of-fold probe gives its labelled option probability
        ``>= threshold`` (0.5 was chosen on four planted shortcut families and checked on a
        fifth held out of the choice: ``videokr reproduce --sections shortcuts``).
    folds:
        Cross-fitting folds: an item is only ever scored by a probe fitted without it.
    seed:
        Fold assignment.
    probe:
        ``"interaction"`` (:class:`InteractionProbe`, the default: sees question-option
        interactions) or ``"bow"`` (:class:`BlindTextProbe`, bag of words; the 0.1 filter).

    Reference: VideoKR (ICML 2026) Sec. 3.3 (video-dependency filtering).

    >>> BlindTextFilter().probe().__class__.__name__
    'InteractionProbe'
    """

    name = "blind_text"
    what = "text alone"

    def __init__(
        self, threshold: float = 0.5, folds: int = 5, seed: int = 0, probe: str = "interaction"
    ) -> None:
        if probe not in ("interaction", "bow"):
            raise ValueError(f"probe must be 'interaction' or 'bow', got {probe!r}")
        super().__init__(threshold, folds, seed)
        self.probe_kind = probe

    def probe(self) -> _Probe:
        return InteractionProbe() if self.probe_kind == "interaction" else BlindTextProbe()


class SingleFrameFilter(_ProbeFilter):
    """Remove items a single-frame probe answers confidently (cross-fitted)."""

    name = "single_frame"
    what = "a single frame"

    def __init__(self, store: VideoStore, threshold: float = 0.75, folds: int = 5, seed: int = 0):
        super().__init__(threshold, folds, seed)
        self.store = store

    def probe(self) -> _Probe:
        return SingleFrameProbe(self.store)


class SelfConsistencyFilter:
    """``k`` solver samples per item; remove when the majority answer is not the label."""

    name = "self_consistency"

    def __init__(
        self, solver: Callable[[Record, np.random.Generator], str], k: int = 5, seed: int = 0
    ):
        self.solver, self.k, self.seed = solver, k, seed

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        rng = np.random.default_rng(self.seed)
        reasons = {}
        for r in records:
            votes = Counter(self.solver(r, rng) for _ in range(self.k))
            top, n = votes.most_common(1)[0]
            label = answer_of(r["solution"])
            if top != label:
                reasons[r["id"]] = (
                    f"majority of {self.k} samples says {top} ({n}/{self.k}), label {label}"
                )
        return _split(self.name, records, reasons)


class CoTValidator:
    """Rationale validation: it must conclude with the labelled option's text, and cite the bank.

    The conclusion is the option text mentioned last in the rationale.

    >>> from videokr.knowledge import microworld_bank
    >>> r = {"id": "x", "options": ["A. left", "B. right"], "solution": "<answer>B</answer>",
    ...      "think": "the object moves left .", "skill": "VidR"}
    >>> CoTValidator(microworld_bank())([r]).removed["x"]
    "rationale concludes 'left' but the answer is B ('right')"
    """

    name = "cot_validation"
    knowledge_skills = ("KnowVid", "KnowVidR")

    def __init__(self, bank: KnowledgeBank) -> None:
        self.bank_texts = sorted(bank.texts(), key=len, reverse=True)

    def check(self, r: Record) -> str | None:
        think = " ".join(str(r.get("think", "")).split())
        if not think:
            return "empty rationale"
        opts = [o.split(" , ")[0] for o in option_texts(r)]
        last, where = None, -1
        for o in opts:
            for m in re.finditer(rf"\b{re.escape(o)}\b", think):
                if m.start() > where:
                    last, where = o, m.start()
        k = label_index(r)
        if last is None:
            return "rationale mentions no option"
        if last != opts[k]:
            return (
                f"rationale concludes {last!r} but the answer is {OPTION_LETTERS[k]} ({opts[k]!r})"
            )
        if r.get("skill") in self.knowledge_skills:
            cited = [t for t in self.bank_texts if t in think]
            if not cited:
                return "rationale cites no knowledge point"
        return None

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        reasons = {r["id"]: why for r in records if (why := self.check(r))}
        return _split(self.name, records, reasons)


class MinHashDedup:
    """Near-duplicate removal: MinHash LSH over character shingles of the question.

    A candidate pair counts only when both items show the same video content (templated
    questions repeat across videos by design). The first item (input order) is kept.
    """

    name = "near_duplicate"

    def __init__(
        self,
        store: VideoStore | None = None,
        threshold: float = 0.75,
        num_perm: int = 64,
        shingle: int = 4,
    ) -> None:
        self.store, self.threshold, self.num_perm, self.shingle = (
            store,
            threshold,
            num_perm,
            shingle,
        )

    def _minhash(self, text: str):
        from datasketch import MinHash

        text = " ".join(text.lower().split())
        m = MinHash(num_perm=self.num_perm, seed=1)
        for i in range(max(1, len(text) - self.shingle + 1)):
            m.update(text[i : i + self.shingle].encode())
        return m

    def __call__(self, records: Sequence[Record]) -> FilterReport:
        from datasketch import MinHashLSH

        # LSH at a lower threshold proposes candidates; the MinHash Jaccard estimate confirms them
        lsh = MinHashLSH(threshold=max(0.3, self.threshold - 0.25), num_perm=self.num_perm)
        keys: dict[str, Any] = {}
        reasons = {}
        for r in records:
            mh = self._minhash(r["question"])
            vkey = video_hash(self.store.load(r["video_path"])) if self.store else r["video_path"]
            for other in sorted(lsh.query(mh)):  # LSH answers a set: fixed order
                ovkey, omh = keys[other]
                jac = mh.jaccard(omh)
                if ovkey == vkey and jac >= self.threshold:
                    reasons[r["id"]] = f"near duplicate of {other!r} (MinHash Jaccard {jac:.2f})"
                    break
            if r["id"] not in reasons:
                lsh.insert(r["id"], mh)
                keys[r["id"]] = (vkey, mh)
        return _split(self.name, records, reasons)
