import json
import os

import matplotlib
import pytest
from icml26_shared import results
from icml26_shared.results import Report, Table, atomic_write_text, ensure_writable_dir

matplotlib.use("Agg")


def test_table_markdown_and_round_trip():
    t = Table("T", ["method", "err", "time"], units={"time": "s"}, notes="n")
    t.add_row(method="ours", err=1.23456e-7, time=2.0)
    t.add_row(method="a|b", err=float("nan"))
    md = t.to_markdown()
    assert "| method | err | time (s) |" in md
    assert "| ours | 1.235e-07 | 2 |" in md
    assert "a\\|b" in md  # pipes escaped
    md = Table("T", ["max |diff|"]).to_markdown()
    assert "| max \\|diff\\| |" in md  # in headers too
    back = Table.from_dict(json.loads(json.dumps(t.to_dict())))
    assert back.rows[0] == {"method": "ours", "err": 1.23456e-7, "time": 2.0}
    assert back.column("method") == ["ours", "a|b"]


def test_table_rejects_unknown_columns():
    t = Table("T", ["a"])
    with pytest.raises(ValueError, match="unknown columns"):
        t.add_row(b=1)
    with pytest.raises(ValueError, match="duplicate"):
        Table("T", ["a", "a"])
    with pytest.raises(ValueError, match="units"):
        Table("T", ["a"], units={"b": "s"})


def test_report_write_read(tmp_path):
    import matplotlib.pyplot as plt
    import numpy as np

    r = Report("toy", tmp_path / "out")
    t = Table("T", ["x"])
    t.add_row(x=np.float32(0.5))  # numpy scalars become plain JSON numbers
    r.add_table(t)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    png = r.save_figure(fig, "curve")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r.note("a note")
    r.metadata["seed"] = 3
    r.write()
    back = Report.read(tmp_path / "out")
    assert back.tables[0].rows == [{"x": 0.5}]
    assert [f.name for f in back.figures] == ["curve.png"]
    md = (tmp_path / "out" / "results.md").read_text()
    assert "![curve](curve.png)" in md and "a note" in md and "seed 3" in md


def test_atomic_write_interrupted_midway_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")

    real_fsync = os.fsync

    def crash(fd):
        real_fsync(fd)
        raise KeyboardInterrupt("interrupted midway")

    monkeypatch.setattr(results.os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(path, "new content that never lands")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temp file left


def test_ensure_writable_dir(tmp_path):
    assert ensure_writable_dir(tmp_path / "a" / "b").is_dir()
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        ensure_writable_dir(f)
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(PermissionError, match="not writable"):
            ensure_writable_dir(ro / "sub")
    with pytest.raises(PermissionError, match="not writable"):
        ensure_writable_dir(f / "sub")  # below a regular file: cannot be created


def test_atomic_write_figure_writes_a_png_and_closes_the_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import atomic_write_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = atomic_write_figure(tmp_path / "sub" / "line.png", fig, dpi=50)
    assert path.read_bytes().startswith(b"\x89PNG")
    assert path.stat().st_mode & 0o777 == 0o666 & ~results._umask()
    assert not plt.fignum_exists(fig.number)
    assert [p.name for p in path.parent.iterdir()] == ["line.png"]  # no temporary file left
