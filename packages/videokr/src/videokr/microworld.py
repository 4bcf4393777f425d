"""SynthKR micro-world: offline videos, manifest, templated QA and planted defects.

Each video is a ``(T=7, 16, 16)`` float32 array: one 2x2 object moving left/right/up/down at
one or two cells per frame, glowing steadily or flickering. Speed and flicker identify the
material only through the knowledge bank (:func:`videokr.knowledge.microworld_bank`); no single
frame shows the direction, speed or flicker reliably (start positions are symmetric about
the middle frame). Items per video and skill come from
:class:`~videokr.generation.TemplateGenerator`.

Planted defects (:data:`DEFECTS`), each to be caught by one filter:

* ``shortcut`` -- the right option is reworded to be the longest (text-only answerable);
* ``single_frame`` -- a static on-screen hint in the bottom row marks the answer;
* ``near_duplicate`` -- the same item again with a lightly edited question;
* ``license`` -- the video carries a non-CC / NC / ND license;
* ``overlap`` -- a re-upload of a train video (new id, same frames) used in the eval split;
* ``label_noise`` -- the labelled answer is wrong;
* ``bad_rationale`` -- the rationale concludes with a different option.

>>> w = make_microworld(12, seed=0)
>>> len(w.videos) >= 12, w.train[0]["dataset"], sorted(set(w.defects.values()))[:2]
(True, 'SynthKR', ['bad_rationale', 'label_noise'])
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .generation import OPTIONS, TemplateGenerator
from .knowledge import DIRECTIONS, MATERIALS
from .manifest import Manifest, VideoRecord

T, H, W = 7, 16, 16
SCENE_H = 14  # rows 14-15 are a caption strip (empty unless a hint is planted)
SKILLS = ("VidR", "KnowVid", "KnowVidR")
DEFECTS = (
    "shortcut",
    "single_frame",
    "near_duplicate",
    "license",
    "overlap",
    "label_noise",
    "bad_rationale",
)
GOOD_LICENSES = ("CC-BY-4.0", "CC-BY-SA-4.0", "CC-BY-3.0")
BAD_LICENSES = ("CC-BY-NC-4.0", "CC-BY-ND-4.0", "CC-BY-NC-SA-4.0", "Standard YouTube License")
_STEP = {"left": (0, -1), "right": (0, 1), "up": (-1, 0), "down": (1, 0)}


def render_video(
    direction: str, material: str, rng: np.random.Generator, hint: int | None = None
) -> np.ndarray:
    """Frames ``(T, H, W)`` of one object; ``hint`` lights caption block ``hint`` (answer index)."""
    speed, flicker = MATERIALS[material]
    dr, dc = _STEP[direction]
    travel = (T - 1) * speed
    extent = SCENE_H if dr else W  # the bottom rows are a caption strip, kept clear
    lo, hi = (0, extent - 2 - travel) if dr + dc > 0 else (travel, extent - 2)
    along = int(rng.integers(lo, hi + 1))
    across = int(rng.integers(0, (W if dr else SCENE_H) - 2 + 1))
    phase = int(rng.integers(2))
    video = 0.03 * rng.standard_normal((T, H, W)).astype(np.float32)
    # static background specks: make every clip's content (and hash) its own
    specks = np.stack([rng.integers(0, SCENE_H, 6), rng.integers(0, W, 6)], 1)
    video[:, specks[:, 0], specks[:, 1]] += 0.2
    for t in range(T):
        pos = along + (dr + dc) * speed * t
        r, c = (pos, across) if dr else (across, pos)
        level = 1.0 if (not flicker or (t + phase) % 2 == 0) else 0.45
        video[t, r : r + 2, c : c + 2] += level
    if hint is not None:  # on-screen text that gives the answer away
        video[:, SCENE_H:, 4 * hint : 4 * hint + 4] += 0.8
    return video


def video_hash(video: np.ndarray) -> str:
    """Content hash robust to the sensor noise (frames quantised to 4 levels)."""
    q = np.clip(np.round(np.asarray(video) * 3), 0, 3).astype(np.uint8)
    return hashlib.sha1(q.tobytes()).hexdigest()[:16]


class VideoStore:
    """Videos by ``video_path``: in memory, or ``.npy`` files under a root folder.

    >>> s = VideoStore(); s.put("a.npy", np.zeros((T, H, W))); s.load("a.npy").shape
    (7, 16, 16)
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else None
        self._mem: dict[str, np.ndarray] = {}

    def put(self, path: str, video: np.ndarray) -> None:
        video = np.asarray(video, dtype=np.float32)
        if self.root is None:
            self._mem[path] = video
        else:
            dest = self.root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            np.save(dest, video)

    def load(self, path: str) -> np.ndarray:
        if self.root is None:
            if path not in self._mem:
                raise FileNotFoundError(f"video {path!r} is not in the in-memory store")
            return self._mem[path]
        from .schema import resolve_video

        return np.load(resolve_video({"id": path, "video_path": path}, self.root))

    def __contains__(self, path: str) -> bool:
        return path in self._mem if self.root is None else (self.root / path).is_file()


@dataclass
class MicroWorld:
    """A generated corpus: manifest, videos, train/eval records, and the planted defects."""

    manifest: Manifest
    store: VideoStore
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    defects: dict[str, str] = field(default_factory=dict)  # record id -> defect class

    @property
    def videos(self) -> dict[str, VideoRecord]:
        return self.manifest.videos

    def genuine(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in records if r["id"] not in self.defects]


def _video(vid: str, rng, hint=None, bad_license=False):
    d = DIRECTIONS[int(rng.integers(4))]
    m = list(MATERIALS)[int(rng.integers(4))]
    lic = (BAD_LICENSES if bad_license else GOOD_LICENSES)[int(rng.integers(3 + bad_license))]
    rec = VideoRecord(
        vid,
        f"videos/{vid}.npy",
        lic,
        title=f"micro-world clip {vid}",
        duration_s=T / 2.0,
        subject="Micro-world physics",
        caption=f"the object moves {d} ; it is made of {m}",
    )
    return rec, d, m


def make_microworld(
    n_videos: int,
    seed: int = 0,
    eval_fraction: float = 0.3,
    defect_rate: float = 0.06,
    root: str | os.PathLike | None = None,
    skills: tuple[str, ...] = SKILLS,
) -> MicroWorld:
    """Generate ``n_videos`` clips (plus planted re-uploads), one item per skill and clip.

    Splits are grouped by video (as VideoKR's); ``defect_rate`` is the fraction of items per
    planted defect class. With ``root`` the videos are written as ``.npy`` files there.
    """
    if n_videos < 2:
        raise ValueError(f"n_videos must be >= 2, got {n_videos}")
    rng = np.random.default_rng(seed)
    gen = TemplateGenerator()
    store = VideoStore(root)
    videos: list[VideoRecord] = []
    defects: dict[str, str] = {}
    splits: dict[str, list[dict[str, Any]]] = {"train": [], "eval": []}
    n_eval = max(1, int(round(n_videos * eval_fraction)))
    frames_of: dict[str, np.ndarray] = {}
    for i in range(n_videos):
        split = "eval" if i < n_eval else "train"
        vid = f"{split}{i:05d}"
        bad_license = rng.random() < defect_rate
        hint_skill = (
            skills[int(rng.integers(len(skills)))]
            if rng.random() < defect_rate * len(skills)
            else None
        )
        rec, d, m = _video(vid, rng, bad_license=bad_license)
        items = [gen.generate(rec, s, rng) for s in skills]
        hint = None
        if hint_skill is not None:  # a clip with on-screen text carries only that question
            items = [items[skills.index(hint_skill)]]
            hint = "ABCDEFGHIJ".index(items[0]["solution"][8])
            defects[items[0]["id"]] = "single_frame"
        video = render_video(d, m, rng, hint=hint)
        store.put(rec.path, video)
        frames_of[rec.path] = video
        videos.append(rec)
        for item in items:
            if bad_license and item["id"] not in defects:
                defects[item["id"]] = "license"
            splits[split].append(item)
    # re-uploads of train clips used by eval items (contamination)
    train_videos = [v for v in videos if v.video_id.startswith("train")]
    n_overlap = max(1, int(round(defect_rate * len(train_videos))))
    for j, k in enumerate(rng.choice(len(train_videos), size=n_overlap, replace=False)):
        src = train_videos[int(k)]
        vid = f"reup{j:05d}"
        copy = dataclasses.replace(
            src, video_id=vid, path=f"videos/{vid}.npy", title=f"re-upload of {src.title}"
        )
        store.put(copy.path, frames_of[src.path])
        videos.append(copy)
        skill = skills[int(rng.integers(len(skills)))]
        splits["eval"].append(gen.generate(copy, skill, rng))
        for item in splits["train"]:
            if item["video_path"] == src.path and item["id"] not in defects:
                defects[item["id"]] = "overlap"
    for items in splits.values():
        _plant_text_defects(items, defects, rng, defect_rate)
    return MicroWorld(Manifest(videos), store, splits["train"], splits["eval"], defects)


def _plant_text_defects(items, defects, rng, rate) -> None:
    """Shortcut, label-noise, bad-rationale and near-duplicate defects, in place."""
    clean = [i for i, it in enumerate(items) if it["id"] not in defects]
    order = rng.permutation(clean)
    n = max(1, int(round(rate * len(items))))
    groups = {
        "shortcut": order[:n],
        "label_noise": order[n : 2 * n],
        "bad_rationale": order[2 * n : 3 * n],
        "near_duplicate": order[3 * n : 4 * n],
    }
    for i in groups["shortcut"]:
        it = items[int(i)]
        k = "ABCDEFGHIJ".index(it["solution"][8])
        it["options"][k] = f"{it['options'][k]} , as the narrator says at the very end"
        defects[it["id"]] = "shortcut"
    for i in groups["label_noise"]:
        it = items[int(i)]
        k = "ABCDEFGHIJ".index(it["solution"][8])
        wrong = (k + 1 + int(rng.integers(len(it["options"]) - 1))) % len(it["options"])
        it["solution"] = f"<answer>{'ABCDEFGHIJ'[wrong]}</answer>"
        defects[it["id"]] = "label_noise"
    for i in groups["bad_rationale"]:
        it = items[int(i)]
        k = "ABCDEFGHIJ".index(it["solution"][8])
        opts = OPTIONS[it["skill"]]
        wrong = opts[(k + 1) % len(opts)]
        head, _, _ = it["think"].rpartition(" ")
        head = head.rstrip(" .")
        last = head.rsplit(" ", 1)[0]
        it["think"] = f"{last} {wrong} ."
        defects[it["id"]] = "bad_rationale"
    for i in groups["near_duplicate"]:
        it = dict(items[int(i)])
        it["options"] = list(it["options"])
        it["id"] = f"{it['id']}-dup"
        it["question"] = it["question"].replace(" ?", " here ?")
        items.append(it)
        defects[it["id"]] = "near_duplicate"
