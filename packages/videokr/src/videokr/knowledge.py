"""Domain Knowledge Bank and skill taxonomy (paper Sec. 3.1).

* :class:`Skill` -- VidR (observable-event reasoning), KnowVid (knowledge-enhanced perception),
  KnowVidR (knowledge-intensive multi-hop reasoning).
* :class:`KnowledgePoint` -- one leaf of the Subject -> Course -> Lecture -> Knowledge Point tree.
* :class:`KnowledgeBank` -- the tree, with look-ups by path and by subject.
* :func:`microworld_bank` -- the micro-world's rules, exposed only as text (the offline stand-in
  for the paper's 63,745 knowledge points).

>>> bank = microworld_bank()
>>> bank.get("Materials", "Micro-world materials", "Motion signatures", "cork").text
'cork objects move one cell per frame and glow steadily'
>>> sorted(bank.subjects())
['Kinematics', 'Materials']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum


class Skill(StrEnum):
    """The three skills of VideoKR examples.

    >>> Skill("KnowVidR").description
    'knowledge-intensive multi-hop reasoning'
    """

    VidR = "VidR"
    KnowVid = "KnowVid"
    KnowVidR = "KnowVidR"

    @property
    def description(self) -> str:
        return {
            "VidR": "basic video reasoning over observable events",
            "KnowVid": "knowledge-enhanced perception",
            "KnowVidR": "knowledge-intensive multi-hop reasoning",
        }[self.value]


@dataclass(frozen=True)
class KnowledgePoint:
    """One knowledge point with its place in the hierarchy.

    >>> KnowledgePoint("Physics", "Mechanics", "Friction", "static", "...").path
    ('Physics', 'Mechanics', 'Friction', 'static')
    """

    subject: str
    course: str
    lecture: str
    point: str
    text: str

    @property
    def path(self) -> tuple[str, str, str, str]:
        return (self.subject, self.course, self.lecture, self.point)


class KnowledgeBank:
    """Subject -> Course -> Lecture -> Knowledge Point; rejects duplicate paths.

    >>> kb = KnowledgeBank([KnowledgePoint("S", "C", "L", "p", "t")])
    >>> len(kb), kb.courses("S")
    (1, ['C'])
    """

    def __init__(self, points: Iterable[KnowledgePoint]) -> None:
        self._points: dict[tuple[str, str, str, str], KnowledgePoint] = {}
        for kp in points:
            if not all(kp.path) or not kp.text.strip():
                raise ValueError(f"knowledge point {kp.path}: every level and the text must be set")
            if kp.path in self._points:
                raise ValueError(f"knowledge point {'/'.join(kp.path)} is defined twice")
            self._points[kp.path] = kp

    def __len__(self) -> int:
        return len(self._points)

    def __iter__(self) -> Iterator[KnowledgePoint]:
        return iter(self._points.values())

    def get(self, subject: str, course: str, lecture: str, point: str) -> KnowledgePoint:
        key = (subject, course, lecture, point)
        if key not in self._points:
            raise KeyError(f"no knowledge point {'/'.join(key)}")
        return self._points[key]

    def subjects(self) -> list[str]:
        return sorted({kp.subject for kp in self})

    def courses(self, subject: str) -> list[str]:
        return sorted({kp.course for kp in self if kp.subject == subject})

    def lectures(self, subject: str, course: str) -> list[str]:
        return sorted({kp.lecture for kp in self if kp.subject == subject and kp.course == course})

    def texts(self) -> set[str]:
        """All knowledge texts (used by the rationale validator)."""
        return {kp.text for kp in self}


# ------------------------------------------------------------------ micro-world rules

DIRECTIONS = ("left", "right", "up", "down")
#: material -> (cells per frame, flickers)
MATERIALS = {"cork": (1, False), "steel": (2, False), "glass": (1, True), "ice": (2, True)}
#: material -> what the object does after the clip ends (KnowVidR)
AFTER_CLIP = {
    "cork": "keeps its direction",
    "steel": "bounces back",
    "glass": "turns clockwise",
    "ice": "turns counterclockwise",
}
_CLOCKWISE = {"up": "right", "right": "down", "down": "left", "left": "up"}
_OPPOSITE = {"left": "right", "right": "left", "up": "down", "down": "up"}


def after_clip(direction: str, material: str) -> str:
    """Direction after the clip ends (the KnowVidR rule).

    >>> after_clip("left", "steel"), after_clip("up", "glass"), after_clip("up", "ice")
    ('right', 'right', 'left')
    """
    rule = AFTER_CLIP[material]
    if rule == "keeps its direction":
        return direction
    if rule == "bounces back":
        return _OPPOSITE[direction]
    if rule == "turns clockwise":
        return _CLOCKWISE[direction]
    return {v: k for k, v in _CLOCKWISE.items()}[direction]


def motion_text(material: str) -> str:
    speed, flicker = MATERIALS[material]
    cells = "one cell" if speed == 1 else "two cells"
    return f"{cells} per frame and {'flickers' if flicker else 'glows steadily'}"


def microworld_bank() -> KnowledgeBank:
    """The micro-world's knowledge bank (rules only in text, never in the videos)."""
    pts = [
        KnowledgePoint(
            "Materials",
            "Micro-world materials",
            "Motion signatures",
            m,
            f"{m} objects move {motion_text(m).replace('flickers', 'flicker').replace('glows', 'glow')}",
        )
        for m in MATERIALS
    ]
    pts += [
        KnowledgePoint(
            "Materials", "Micro-world materials", "After the clip", m, f"{m} {AFTER_CLIP[m]}"
        )
        for m in MATERIALS
    ]
    pts += [
        KnowledgePoint(
            "Kinematics",
            "Observable motion",
            "Direction",
            d,
            f"an object that moves {d} gets closer to the {d} edge",
        )
        for d in DIRECTIONS
    ]
    return KnowledgeBank(pts)
