"""``videokr reproduce``: blind (text-only) vs with-frames baselines on the synthetic corpus.

Accuracy is scored through :func:`videokr.rewards.compute_score`'s exact-match rule.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from icml26_shared.results import Report, Table
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression

from .rewards import accuracy_reward, format_reward
from .synth import make_corpus


def _text(r: dict) -> str:
    return r["question"] + " " + " ".join(r["options"])


def _score(records, letters) -> tuple[float, float]:
    outs = [f"<think>x</think><answer>{c}</answer>" for c in letters]
    acc = np.mean([accuracy_reward(o, r["solution"]) for o, r in zip(outs, records, strict=True)])
    fmt = np.mean([format_reward(o) for o in outs])
    return float(acc), float(fmt)


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run blind vs with-frames baselines and return the report."""
    n = 200 if quick else 2000
    tr, vtr = make_corpus(n, seed)
    te, vte = make_corpus(n // 2, seed + 1)
    ytr = [r["solution"][8] for r in tr]
    report = Report("videokr", out)
    table = Table("SynthKR accuracy (VidR)", ["method", "accuracy", "format"])
    vec = CountVectorizer().fit([_text(r) for r in tr])
    blind = LogisticRegression(max_iter=500).fit(vec.transform([_text(r) for r in tr]), ytr)
    pred = blind.predict(vec.transform([_text(r) for r in te]))
    acc, fmt = _score(te, pred)
    table.add_row(method="blind (text only, BoW logistic)", accuracy=acc, format=fmt)

    def feats(records, videos):
        # frame features: blob column over time, times +1 if option A says "right"
        sign = np.array([1.0 if "right" in r["options"][0] else -1.0 for r in records])
        cols = (videos.sum(2) * np.arange(8)).sum(-1)
        return (cols[:, -1] - cols[:, 0])[:, None] * sign[:, None]

    frames = LogisticRegression().fit(feats(tr, vtr), ytr)
    acc, fmt = _score(te, frames.predict(feats(te, vte)))
    table.add_row(method="with frames (motion feature, logistic)", accuracy=acc, format=fmt)
    table.add_row(method="chance", accuracy=0.5)
    report.add_table(table)
    report.note("SFT and SFT->GRPO rows are not implemented yet (see README 'Not yet').")
    return report
