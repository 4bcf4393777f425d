"""Two runs of ``videokr reproduce`` give byte-identical tables (issue #49, "a result that reruns").

Timings cannot repeat, so they are kept out of the tables: ``results.json`` holds them in each
section's ``timing`` and in ``metadata`` (wall time, date, versions), ``results.md`` in the
``_wall ... s, CPU ... s_`` line under each section and the ``_seed ..., wall time ... s_``
footer. :func:`table_bytes` is everything else: every section's tables (title, columns, rows,
notes) from ``results.json`` and ``results.md`` with only the timing numbers blanked.

Compare two existing runs (e.g. two ``videokr reproduce --preset quick --out ...`` folders)::

    VIDEOKR_RUNS=run1,run2 pytest packages/videokr/tests/test_determinism.py -m slow -k given
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TIMING = re.compile(r"(_wall |, CPU |wall time )[0-9.]+ s")


def table_bytes(folder: Path) -> tuple[bytes, bytes]:
    """``(tables of results.json, results.md without timing numbers)`` of one run's folder."""
    data = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
    tables = [{"name": s["name"], "tables": s["tables"]} for s in data["sections"]]
    js = json.dumps(tables, sort_keys=True, ensure_ascii=False).encode()
    md = TIMING.sub(r"\1… s", (Path(folder) / "results.md").read_text(encoding="utf-8"))
    return js, md.encode()


def _fake_run(folder: Path, cell: float, wall: float) -> Path:
    """A results folder in the shared layer's own format (one section, one table)."""
    from icml26_shared.results import Report, Table

    t = Table("t", ["m", "x"], notes="3 seeds")
    t.add_row(m="a", x=cell)
    rep = Report("videokr", folder)
    rep.add_section("s", "a claim", [t], timing={"wall_s": wall, "cpu_s": wall / 2})
    rep.metadata.update(seed=0, preset="quick", wall_time_s=wall)
    rep.write()
    return folder


def test_timings_are_not_compared_but_every_cell_is(tmp_path):
    a = table_bytes(_fake_run(tmp_path / "a", 0.5, 12.3))
    b = table_bytes(_fake_run(tmp_path / "b", 0.5, 4567.8))
    c = table_bytes(_fake_run(tmp_path / "c", 0.6, 12.3))
    d = table_bytes(_fake_run(tmp_path / "d", 0.50001, 12.3))
    assert a == b  # only the timings differ
    assert a[0] != c[0] and a[1] != c[1]  # one cell differs: both views see it
    assert a[0] != d[0]  # results.json keeps full precision (results.md shows 4 digits)


@pytest.mark.slow  # two tiny reproduce runs (every section, 3 seeds) in two fresh processes
def test_two_processes_give_identical_tables(tmp_path):
    """Separate processes (different hash seeds, no cached worlds) give the same tables."""
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "n_videos: 40\nsections:\n  methods: {sft_steps: 3, grpo_steps: 2, group: 2, grpo_batch: 2}\n"
        "  shortcuts: {n_videos: 60, learner_epochs: 2}\n"
    )
    runs = []
    for run, hash_seed in (("a", "1"), ("b", "2")):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        cmd = [str(Path(sys.executable).parent / "videokr"), "reproduce", "--preset", "quick",
               "--config", str(tiny), "--out", str(tmp_path / run)]  # fmt: skip
        subprocess.run(cmd, check=True, env=env, capture_output=True, cwd=tmp_path)
        runs.append(table_bytes(tmp_path / run))
    assert runs[0] == runs[1]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VIDEOKR_RUNS"), reason="set VIDEOKR_RUNS=dir1,dir2")
def test_given_runs_identical():
    """The two folders named in ``VIDEOKR_RUNS`` hold byte-identical tables."""
    a, b = (Path(p) for p in os.environ["VIDEOKR_RUNS"].split(","))
    ta, tb = table_bytes(a), table_bytes(b)
    assert ta[0] == tb[0], "results.json tables differ"
    assert ta[1] == tb[1], "results.md differs outside the timing numbers"
