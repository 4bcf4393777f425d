"""Collection manifest: video records with license metadata, and the license policy (Sec. 3.1).

VideoKR keeps only Creative-Commons videos. :class:`LicensePolicy` allows CC-BY and CC-BY-SA by
default, NC / ND variants only by flag, and rejects everything else with a reason.

>>> LicensePolicy().check("CC-BY-4.0")
(True, 'allowed: CC-BY')
>>> LicensePolicy().check("CC-BY-NC-4.0")
(False, 'CC-BY-NC: non-commercial licenses need allow_nc=True')
>>> LicensePolicy().check("Standard YouTube License")
(False, "'Standard YouTube License' is not a Creative Commons BY license")
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

_CC = re.compile(r"^\s*cc[\s_-]*by((?:[\s_-]*(?:nc|nd|sa))*)(?:[\s_-]*\d+(?:\.\d+)?)?\s*$", re.I)


@dataclass(frozen=True)
class VideoRecord:
    """One collected video.

    >>> VideoRecord("v1", "videos/v1.npy", "CC-BY-4.0").license
    'CC-BY-4.0'
    """

    video_id: str
    path: str
    license: str
    title: str = ""
    source_url: str = ""
    duration_s: float = 0.0
    subject: str = ""
    caption: str = ""


@dataclass(frozen=True)
class LicensePolicy:
    """Which licenses a corpus may use: CC-BY and CC-BY-SA, NC and ND by flag."""

    allow_nc: bool = False
    allow_nd: bool = False

    def check(self, license: str) -> tuple[bool, str]:
        """``(allowed, reason)`` for one license string."""
        m = _CC.match(license or "")
        if not m:
            return False, f"{license!r} is not a Creative Commons BY license"
        parts = [p for p in re.split(r"[\s_-]+", m.group(1).lower()) if p]
        name = "CC-BY" + "".join(f"-{p.upper()}" for p in parts)
        if "nc" in parts and not self.allow_nc:
            return False, f"{name}: non-commercial licenses need allow_nc=True"
        if "nd" in parts and not self.allow_nd:
            return False, f"{name}: no-derivatives licenses need allow_nd=True"
        return True, f"allowed: {name}"


class Manifest:
    """The collection manifest: one :class:`VideoRecord` per video id.

    >>> m = Manifest.from_records([{"video_id": "a", "path": "a.npy", "license": "CC-BY"},
    ...                            {"video_id": "b", "path": "b.npy", "license": "CC-BY-NC"}])
    >>> kept, rejected = m.apply(LicensePolicy())
    >>> [v.video_id for v in kept], rejected
    (['a'], {'b': 'CC-BY-NC: non-commercial licenses need allow_nc=True'})
    """

    def __init__(self, videos: Iterable[VideoRecord]) -> None:
        self.videos: dict[str, VideoRecord] = {}
        for v in videos:
            if v.video_id in self.videos:
                raise ValueError(f"manifest: video {v.video_id!r} is listed twice")
            self.videos[v.video_id] = v

    @classmethod
    def from_records(cls, rows: Iterable[Mapping[str, Any]]) -> Manifest:
        """Build from dicts; an entry without a license is an error naming the video."""
        out = []
        for i, row in enumerate(rows):
            vid = row.get("video_id")
            if not vid:
                raise ValueError(f"manifest entry {i}: field 'video_id' is missing")
            lic = row.get("license")
            if lic is None or not str(lic).strip():
                raise ValueError(f"manifest entry {vid!r}: field 'license' is missing")
            if not row.get("path"):
                raise ValueError(f"manifest entry {vid!r}: field 'path' is missing")
            known = {k: row[k] for k in VideoRecord.__dataclass_fields__ if k in row}
            out.append(VideoRecord(**known))
        return cls(out)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Manifest:
        from .corpus import read_jsonl

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"manifest file {str(path)!r} not found")
        return cls.from_records(read_jsonl(path))

    def write(self, path: str | os.PathLike) -> Path:
        from .corpus import write_jsonl

        return write_jsonl(path, [asdict(v) for v in self.videos.values()])

    def by_path(self) -> dict[str, VideoRecord]:
        return {v.path: v for v in self.videos.values()}

    def apply(self, policy: LicensePolicy) -> tuple[list[VideoRecord], dict[str, str]]:
        """Split into allowed videos and ``{video_id: reason}`` for the rejected ones."""
        kept, rejected = [], {}
        for v in self.videos.values():
            ok, reason = policy.check(v.license)
            if ok:
                kept.append(v)
            else:
                rejected[v.video_id] = reason
        return kept, rejected
