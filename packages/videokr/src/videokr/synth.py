"""Offline synthetic mini-corpus in the VideoKR record schema.

Each "video" is a ``(T, 8, 8)`` frame array with one bright blob that moves left or
right; the question asks for the direction (VidR skill).  The options are shuffled so
the text alone carries no signal: a blind baseline should sit at chance (1/2).
"""

from __future__ import annotations

import numpy as np

SKILLS = ("VidR",)


def make_corpus(n: int, seed: int = 0, frames: int = 8) -> tuple[list[dict], np.ndarray]:
    """``n`` records (fields ``id, question, options, problem_type, solution``) and videos."""
    rng = np.random.default_rng(seed)
    videos = np.zeros((n, frames, 8, 8))
    records = []
    for i in range(n):
        right = bool(rng.integers(2))
        start = (
            int(rng.integers(0, 8 - frames // 2))
            if right
            else int(rng.integers(frames // 2 - 1, 8))
        )
        row = int(rng.integers(8))
        for t in range(frames):
            x = min(7, max(0, start + (t // 2 if right else -(t // 2))))
            videos[i, t, row, x] = 1.0
        videos[i] += 0.1 * rng.standard_normal((frames, 8, 8))
        opts = ["left", "right"]
        rng.shuffle(opts)
        letter = "AB"[opts.index("right" if right else "left")]
        records.append(
            {
                "id": f"synth-{seed}-{i}",
                "question": "Which way does the blob move?",
                "options": [f"{k}. {o}" for k, o in zip("AB", opts, strict=True)],
                "problem_type": "multiple choice",
                "solution": f"<answer>{letter}</answer>",
                "subject": "SynthKR",
                "skill": "VidR",
            }
        )
    return records, videos
