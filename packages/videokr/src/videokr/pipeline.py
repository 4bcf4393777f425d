"""The corpus pipeline: collect -> generate -> quality filters -> review, resumable and idempotent.

* :func:`train_filters` / :func:`eval_filters` -- the filter chain per split (paper Sec. 3.3).
* :func:`run_filters` -- apply a chain; returns kept records and one report per filter.
* :func:`filter_world` -- both splits of a :class:`~videokr.microworld.MicroWorld`; the probes for
  the eval split are also fitted on the train pool (more planted examples to learn from).
* :func:`defect_report` -- planted defects caught and genuine items kept, per defect class.
* :func:`build_corpus` -- the whole pipeline into a folder, one file per stage with a fingerprint
  of its inputs: a re-run skips finished stages, a changed setting recomputes from that stage on,
  and no stage ever appends (so re-running neither duplicates nor loses items).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from icml26_shared.results import atomic_write_text

from .corpus import read_jsonl, write_jsonl
from .filters import (
    BlindTextFilter,
    ContaminationFilter,
    CoTValidator,
    FilterReport,
    LicenseFilter,
    MinHashDedup,
    PerceptionSolver,
    SelfConsistencyFilter,
    SingleFrameFilter,
)
from .knowledge import microworld_bank
from .manifest import LicensePolicy
from .microworld import MicroWorld, make_microworld

Record = dict[str, Any]


def train_filters(world: MicroWorld, policy: LicensePolicy | None = None, seed: int = 0) -> list:
    """License, contamination, single-frame, blind, self-consistency, rationale, dedup."""
    return [
        LicenseFilter(world.manifest, policy),
        ContaminationFilter(world.eval, world.store),
        SingleFrameFilter(world.store, seed=seed),
        BlindTextFilter(seed=seed),
        SelfConsistencyFilter(PerceptionSolver(world.store), seed=seed),
        CoTValidator(microworld_bank()),
        MinHashDedup(world.store),
    ]


def eval_filters(world: MicroWorld, policy: LicensePolicy | None = None, seed: int = 0) -> list:
    """The train chain without contamination (eval is what train is checked against)."""
    return [f for f in train_filters(world, policy, seed) if f.name != "contamination"]


def run_filters(
    records: Sequence[Record], filters: Sequence
) -> tuple[list[Record], list[FilterReport]]:
    reports, cur = [], list(records)
    for f in filters:
        rep = f(cur)
        reports.append(rep)
        cur = rep.kept
    return cur, reports


def filter_world(world: MicroWorld, seed: int = 0, policy: LicensePolicy | None = None):
    """Filtered ``(train, eval, {"train": reports, "eval": reports})``."""
    train, rtrain = run_filters(world.train, train_filters(world, policy, seed))
    chain = eval_filters(world, policy, seed)
    for f in chain:
        if f.name in ("blind_text", "single_frame"):
            f.reference = list(world.train)
    test, reval = run_filters(world.eval, chain)
    return train, test, {"train": rtrain, "eval": reval}


def defect_report(world: MicroWorld, split: str, kept: Sequence[Record]) -> list[dict[str, Any]]:
    """Per defect class: planted, caught (not in the output), and genuine items kept."""
    records = world.train if split == "train" else world.eval
    kept_ids = {r["id"] for r in kept}
    planted = Counter(world.defects[r["id"]] for r in records if r["id"] in world.defects)
    survived: Counter = Counter()
    for r in records:
        cls = world.defects.get(r["id"])
        if cls is None or r["id"] not in kept_ids:
            continue
        if cls == "near_duplicate" and r["id"].removesuffix("-dup") not in kept_ids:
            continue  # its original is gone: no duplicate pair is left
        survived[cls] += 1
    genuine = [r for r in records if r["id"] not in world.defects]
    rows = [
        {"split": split, "defect": cls, "planted": n, "caught": n - survived[cls]}
        for cls, n in sorted(planted.items())
    ]
    rows.append(
        {
            "split": split,
            "defect": "genuine (kept)",
            "planted": len(genuine),
            "caught": sum(r["id"] in kept_ids for r in genuine),
        }
    )
    return rows


# ------------------------------------------------------------------ resumable build


def _fingerprint(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def build_corpus(
    out: str | os.PathLike,
    n_videos: int = 200,
    seed: int = 0,
    allow_nc: bool = False,
    allow_nd: bool = False,
    review: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """Run the pipeline into ``out``; returns the stage log (also ``out/pipeline.json``).

    Stages: ``collect`` (manifest + clips under ``out/videos``), ``generate`` (raw train/eval),
    one stage per filter and split, then ``final`` (``out/train.jsonl``, ``out/eval.jsonl``),
    with the human review sheet decisions from ``review`` applied last when given.
    """
    from .review import apply_review, read_review

    out = Path(out)
    stages = out / "stages"
    stages.mkdir(parents=True, exist_ok=True)
    log_path = out / "pipeline.json"
    log = json.loads(log_path.read_text()) if log_path.is_file() else {}
    done: dict[str, Any] = {}
    policy = LicensePolicy(allow_nc=allow_nc, allow_nd=allow_nd)

    world = make_microworld(n_videos, seed=seed, root=out)  # deterministic in (n_videos, seed)
    manifest_path = out / "manifest.jsonl"
    fp = _fingerprint("collect", n_videos, seed)
    if log.get("collect", {}).get("fingerprint") != fp or not manifest_path.is_file():
        world.manifest.write(manifest_path)
    done["collect"] = {"fingerprint": fp, "videos": len(world.videos)}
    prev = _file_hash(manifest_path)

    inputs: dict[str, list[Record]] = {"train": world.train, "eval": world.eval}
    chains = {
        "train": train_filters(world, policy, seed),
        "eval": eval_filters(world, policy, seed),
    }
    for f in chains["eval"]:
        if f.name in ("blind_text", "single_frame"):
            f.reference = list(world.train)
    for split in ("eval", "train"):
        path = stages / f"{split}_00_generate.jsonl"
        fp = _fingerprint("generate", split, prev)
        if log.get(path.name, {}).get("fingerprint") != fp or not path.is_file():
            write_jsonl(path, inputs[split])
        done[path.name] = {"fingerprint": fp, "records": len(inputs[split])}
        last = path
        for k, f in enumerate(chains[split], 1):
            path = stages / f"{split}_{k:02d}_{f.name}.jsonl"
            fp = _fingerprint(f.name, split, _file_hash(last), asdict(policy), seed)
            entry = log.get(path.name, {})
            if entry.get("fingerprint") == fp and path.is_file():
                done[path.name] = entry  # finished in an earlier run: skip
            else:
                rep = f(read_jsonl(last))
                write_jsonl(path, rep.kept)
                done[path.name] = {"fingerprint": fp, "kept": len(rep.kept), "removed": rep.removed}
            last = path
            done["_progress"] = path.name
            atomic_write_text(log_path, json.dumps({**log, **done}, indent=1) + "\n")
        final = read_jsonl(last)
        if review is not None:
            final = apply_review(final, read_review(review))
        write_jsonl(out / f"{split}.jsonl", final)
        done[f"{split}.jsonl"] = {"records": len(final)}
    done.pop("_progress", None)
    atomic_write_text(log_path, json.dumps(done, indent=1) + "\n")
    return done
