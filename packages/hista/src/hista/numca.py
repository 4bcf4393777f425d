"""Numca: numerical spans as milestones, with a persistent per-problem value table.

1. ``extract_numbers``: the integer strings (``\\d+``) of a response with character offsets;
   the last one (the final answer) is dropped.
2. The state after a prefix is the *set* of distinct numbers seen so far (``state_key``).
3. ``NumcaTable.update``: for every state on a response's path, ``count += 1`` and
   ``reward_sum += R``; ``NumcaTable.value``: ``reward_sum / count``, ``unseen_value`` (0, as in
   the reference) for unseen states; the root ``V(empty set)`` is the all-time mean reward.
   A response with no number only visits the root, so its value falls back to the root value.
4. ``merge_close_positions``: milestones (token positions of new numbers) scanned backwards;
   one less than ``threshold`` tokens before the next is moved onto it. ``milestones(...,
   at="start")`` puts a milestone on the token where a new number *starts* (the reference's
   ``match.start()``; the number's state then holds from its first digit), ``at="end"`` on
   the first token after it.
5. ``NumcaTable.path_values``: the values along one response's path of states, with three
   options beyond the reference (all off by default): ``exclude`` removes one rollout's own
   contribution (leave-one-out), ``unseen`` chooses what an unseen state is worth (``"table"``:
   ``unseen_value``, 0 as in the reference; ``"fallback"``: the given fallback, e.g. the group
   mean; ``"parent"``: the value of the previous state on the path) and ``prior`` shrinks a
   state's empirical mean toward its parent's value,
   ``V(s) = (reward_sum + prior * V(parent)) / (count + prior)`` (a Beta prior centred on the
   parent; ``prior = 0`` is the reference's plain mean).
6. ``NumcaTable.segment_advantages``: segment values through ``segment_gae``.

The table is keyed by problem id and persists across calls (``to_json`` / ``from_json``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import torch

from .segment_gae import segment_gae

_NUM = re.compile(r"\d+")


def extract_numbers(text: str, drop_last: bool = True, at: str = "end") -> list[tuple[str, int]]:
    """Numbers of ``text`` with the character offset where each ends (``at="start"``: starts).

    Examples
    --------
    >>> extract_numbers("7 12 15;")
    [('7', 1), ('12', 4)]
    >>> extract_numbers("7 12 15;", drop_last=False)[-1]
    ('15', 7)
    >>> extract_numbers("7 12 15;", at="start")
    [('7', 0), ('12', 2)]
    """
    if at not in ("start", "end"):
        raise ValueError(f"at must be 'start' or 'end', got {at!r}")
    found = [(m.group(), m.start() if at == "start" else m.end()) for m in _NUM.finditer(text)]
    return found[:-1] if drop_last and found else found


def state_key(numbers) -> str:
    """Order- and repeat-invariant key of a set of numbers."""
    return ",".join(sorted({str(int(n)) for n in numbers}, key=lambda s: (len(s), s)))


def merge_close_positions(positions: list[int], threshold: int) -> list[int]:
    """Move a milestone onto the next one when that is less than ``threshold`` tokens away.

    Examples
    --------
    >>> merge_close_positions([3, 10, 12, 40], threshold=5)
    [3, 12, 12, 40]
    """
    if any(b < a for a, b in zip(positions, positions[1:], strict=False)):
        raise ValueError(f"positions must be non-decreasing, got {positions}")
    out = list(positions)
    for i in range(len(out) - 2, -1, -1):
        if out[i + 1] - out[i] < threshold:
            out[i] = out[i + 1]
    return out


def milestones(
    response: str, offsets: list[tuple[int, int]], merge_threshold: int = 50, at: str = "end"
) -> list[tuple[int, list[str]]]:
    """Milestones of a response: ``(token index, numbers seen so far)``, merged, increasing.

    ``at="end"``: a milestone is the first token after a *new* number (a number ending on the
    last token is not one); ``at="start"`` (the reference): the token holding the new number's
    first character (token 0 included: that state then replaces the root). The final answer
    is excluded; ``offsets`` is the character span of every token (a fast tokenizer's
    ``offset_mapping``). Milestones less than ``merge_threshold`` tokens before the next are
    moved onto it (the later state wins). With ``at="end"`` the root (token 0) is not listed.

    Examples
    --------
    >>> milestones("7 12 15;", [(i, i + 1) for i in range(8)], merge_threshold=1)
    [(1, ['7']), (4, ['7', '12'])]
    >>> milestones("7 12 15;", [(i, i + 1) for i in range(8)], merge_threshold=50)
    [(4, ['7', '12'])]
    >>> milestones("7 12 15;", [(i, i + 1) for i in range(8)], merge_threshold=1, at="start")
    [(0, ['7']), (2, ['7', '12'])]
    """
    ends = [e for _, e in offsets]
    seen: list[str] = []
    positions, states = [], []
    for num, char_at in extract_numbers(response, at=at):
        if str(int(num)) in seen:
            continue
        seen.append(str(int(num)))
        if at == "start":  # the token that holds the number's first character
            tok = next((i for i, e in enumerate(ends) if e > char_at), len(ends))
        else:
            tok = next((i for i, e in enumerate(ends) if e >= char_at), len(ends) - 1) + 1
        if tok < len(ends):
            positions.append(tok)
            states.append(list(seen))
    out: list[tuple[int, list[str]]] = []
    for pos, st in zip(merge_close_positions(positions, merge_threshold), states, strict=True):
        if pos == 0 and at == "end":
            continue
        if out and out[-1][0] == pos:  # merged: the later state wins
            out[-1] = (pos, st)
        else:
            out.append((pos, st))
    return out


class NumcaTable:
    """Persistent table of values of number-set states, per problem id.

    Examples
    --------
    >>> t = NumcaTable()
    >>> t.update("p", ["7"], 1.0); t.update("p", ["8"], 0.0); t.update("p", ["7"], 0.0)
    >>> t.value("p", ["7"]), t.value("p", []), t.value("p", ["99"])
    (0.5, 0.3333333333333333, 0.0)
    """

    def __init__(self, unseen_value: float = 0.0, binary: bool = True):
        self.unseen_value = float(unseen_value)
        self.binary = binary
        self.counts: dict[str, dict[str, list[float]]] = defaultdict(dict)

    def _check(self, reward: float) -> None:
        if self.binary and reward not in (0.0, 1.0):
            raise ValueError(f"reward {reward} is not binary (0 or 1); pass binary=False")

    def update(self, problem_id: str, numbers: list[str], reward: float) -> None:
        """Add one response: every state on its path (root, then each new number)."""
        reward = float(reward)
        self._check(reward)
        seen: list[str] = []
        keys = [state_key(seen)]
        for n in numbers:
            if str(int(n)) not in seen:
                seen.append(str(int(n)))
                keys.append(state_key(seen))
        table = self.counts[problem_id]
        for k in keys:
            cell = table.setdefault(k, [0.0, 0.0])
            cell[0] += 1
            cell[1] += reward

    def value(self, problem_id: str, numbers) -> float:
        cell = self.counts.get(problem_id, {}).get(state_key(numbers))
        return self.unseen_value if cell is None else cell[1] / cell[0]

    def path_values(
        self,
        problem_id: str,
        states: list[list[str]],
        fallback: float | None = None,
        unseen: str = "table",
        prior: float = 0.0,
        exclude: tuple[list[str], float] | None = None,
    ) -> list[float]:
        """Values of the root and of each state in ``states`` (one response's path, in order).

        ``exclude = (numbers, reward)``: leave that rollout's own contribution out of every
        state on its path (leave-one-out; a state only it visited becomes unseen). ``unseen``:
        ``"table"`` (``unseen_value``, the reference), ``"fallback"`` (``fallback``) or
        ``"parent"`` (the previous value on the path). ``prior``: shrink each state's mean
        toward its parent's value with this many pseudo-visits (0: the reference). An unseen
        root is worth ``fallback`` when one is given.

        Examples
        --------
        >>> t = NumcaTable()
        >>> t.update("p", ["7"], 1.0); t.update("p", ["8"], 0.0)
        >>> t.path_values("p", [["7"]])
        [0.5, 1.0]
        >>> t.path_values("p", [["7"]], prior=1.0)
        [0.5, 0.75]
        >>> t.path_values("p", [["7"]], fallback=0.5, unseen="fallback", exclude=(["7"], 1.0))
        [0.0, 0.5]
        """
        if unseen not in ("table", "fallback", "parent"):
            raise ValueError(f"unseen must be 'table', 'fallback' or 'parent', got {unseen!r}")
        if prior < 0:
            raise ValueError(f"prior must be >= 0, got {prior}")
        if unseen == "fallback" and fallback is None:
            raise ValueError("unseen='fallback' needs a fallback value")
        table = self.counts.get(problem_id, {})
        own: set[str] = set()
        own_r = 0.0
        if exclude is not None:
            numbers, own_r = exclude
            seen: list[str] = []
            own.add(state_key(seen))
            for n in numbers:
                if str(int(n)) not in seen:
                    seen.append(str(int(n)))
                    own.add(state_key(seen))

        def stats(key: str) -> tuple[float, float]:
            cell = table.get(key, [0.0, 0.0])
            if key in own:
                return cell[0] - 1, cell[1] - float(own_r)
            return cell[0], cell[1]

        n, s = stats(state_key([]))
        unseen_root = self.unseen_value if fallback is None else float(fallback)
        root = s / n if n > 0 else unseen_root
        out = [root]
        for st in states:
            n, s = stats(state_key(st))
            if n <= 0:
                v = {"table": self.unseen_value, "fallback": fallback, "parent": out[-1]}[unseen]
            else:
                v = (s + prior * out[-1]) / (n + prior)
            out.append(float(v))
        return out

    def segment_advantages(
        self,
        problem_id: str,
        response: str,
        offsets: list[tuple[int, int]],
        final_reward: float,
        merge_threshold: int = 50,
        lam: float = 1.0,
        root_fallback: float | None = None,
        at: str = "end",
        unseen: str = "table",
        prior: float = 0.0,
        exclude_self: bool = False,
    ) -> torch.Tensor:
        """Per-token advantages of a response (``offsets``: character span of each token).

        A milestone is the first token after a new number (``at="start"``: the token where it
        starts, the reference); segment ``i`` starts there and its value is ``V(numbers so
        far)``. The first segment starts at 0 with ``V(root)`` (with ``at="start"`` and a number
        on token 0, that state's value instead); ``root_fallback`` (e.g. the current group
        mean) replaces an unseen root and, with ``unseen="fallback"``, unseen states.
        ``exclude_self``: leave this response's own visit out of the table's counts
        (leave-one-out, when the table already holds it). ``prior``: see :meth:`path_values`.
        """
        if not offsets:
            raise ValueError("empty response: no tokens to assign advantages to")
        if offsets[-1][1] > len(response) + 1:
            raise ValueError(
                f"offsets cover {offsets[-1][1]} characters, response has {len(response)}"
            )
        marks = milestones(response, offsets, merge_threshold, at=at)
        exclude = None
        if exclude_self:
            exclude = ([n for n, _ in extract_numbers(response)], float(final_reward))
        values = self.path_values(
            problem_id, [st for _, st in marks], root_fallback, unseen, prior, exclude
        )
        boundaries = [0] + [pos for pos, _ in marks]
        if len(boundaries) > 1 and boundaries[1] == 0:  # a state from token 0 on: no root segment
            boundaries, values = boundaries[1:], values[1:]
        return segment_gae(torch.tensor(values), boundaries, len(offsets), final_reward, lam)

    def to_json(self) -> str:
        return json.dumps(
            {"unseen_value": self.unseen_value, "binary": self.binary, "counts": self.counts}
        )

    @classmethod
    def from_json(cls, text: str) -> NumcaTable:
        data = json.loads(text)
        table = cls(data["unseen_value"], data["binary"])
        for pid, cells in data["counts"].items():
            table.counts[pid] = {k: list(v) for k, v in cells.items()}
        return table
