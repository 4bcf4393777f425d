"""Your own fields: declared layouts, the three example files and the README's CLI commands.

The three layouts of ``tests/data`` (written by ``tests/data/make_own_fields.py``): 2D
velocity + pressure + static forcing in one ``.npz``, a 2D scalar-only field in one HDF5 file,
a 3D velocity in a folder with ``train.npz`` / ``test.npz``. Each trains, tests, rotate-tests
(an exactly equivariant model gives the same test MSE on the 90-degree rotated test set) and
rolls out through ``revit`` exactly as the README's "On your own data" section says.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from revit_equivariant.cli import main
from revit_equivariant.field_files import FieldLayout, read_fields, read_splits, write_fields
from revit_equivariant.group import FieldSpec, rotate

DATA = Path(__file__).parent / "data"
VPF = ["--data.fields", "{velocity: vector, pressure: scalar, forcing: vector}",
       "--data.static", "[forcing]"]  # fmt: skip
LAYOUTS = {
    "vpf": (DATA / "kolmogorov_vpf.npz", VPF),
    "scalar": (DATA / "vorticity.h5", ["--data.fields", "{vorticity: scalar}", "--data.static", "[]"]),
    "flow3d": (DATA / "flow3d", ["--data.fields", "{velocity: vector}", "--data.static", "[]"]),
}  # fmt: skip


def test_layout_gives_the_field_spec_and_the_state():
    lay = FieldLayout({"u": "vector", "T": "tensor", "p": "scalar", "f": "vector"}, ("f",), 2)
    assert lay.spec == FieldSpec(9, scalars=(6,), vectors=((0, 1), (7, 8)), tensors=((2, 3, 4, 5),))
    assert lay.state == (0, 1, 2, 3, 4, 5, 6)
    assert lay.channel_names[:6] == ("u_x", "u_y", "T_xx", "T_xy", "T_yx", "T_yy")


@pytest.mark.parametrize(
    "fields, static, match",
    [({"u": "vectr"}, (), "unknown field kind"), ({"u": "vector"}, ("u",), "nothing is left"),
     ({"u": "vector"}, ("g",), "not among the fields"), ({}, (), "declare the fields")],
)  # fmt: skip
def test_bad_layouts_say_what_is_wrong(fields, static, match):
    with pytest.raises(ValueError, match=match):
        FieldLayout(fields, static)


def test_read_fields_channel_order_static_broadcast_and_components(tmp_path):
    rng = np.random.default_rng(0)
    u = rng.standard_normal((2, 3, 4, 4, 2))
    p = rng.standard_normal((2, 3, 4, 4))
    f = rng.standard_normal((4, 4, 2))  # static, shared by every trajectory and frame
    write_fields(tmp_path / "a.h5", {"u": u, "p": p, "f": f})
    traj, lay = read_fields(
        tmp_path / "a.h5", FieldLayout({"u": "vector", "p": "scalar", "f": "vector"}, ("f",))
    )
    assert traj.shape == (2, 3, 5, 4, 4) and lay.dim == 2
    np.testing.assert_allclose(traj[1, 2, 0], u[1, 2, ..., 0], rtol=1e-6)  # u_x
    np.testing.assert_allclose(traj[1, 2, 2], p[1, 2], rtol=1e-6)
    np.testing.assert_allclose(traj[0, 1, 4], f[..., 1], rtol=1e-6)  # f_y, broadcast


@pytest.mark.parametrize(
    "arrays, match",
    [({"u": np.zeros((2, 3, 4, 4, 3))}, "expected"), ({"v": np.zeros((2, 3, 4, 4, 2))}, "no array"),
     ({"u": np.full((2, 3, 4, 4, 2), np.nan)}, "NaN"), ({"u": np.zeros((2, 1, 4, 4, 2))}, "T >= 2")],
)  # fmt: skip
def test_bad_files_say_what_is_wrong(tmp_path, arrays, match):
    write_fields(tmp_path / "x.npz", arrays)
    with pytest.raises(ValueError, match=match):
        read_fields(tmp_path / "x.npz", FieldLayout({"u": "vector"}))


def test_single_file_split_is_by_trajectory_and_disjoint(tmp_path):
    u = np.arange(5, dtype=np.float32)[:, None, None, None, None] * np.ones((5, 2, 4, 4, 2))
    write_fields(tmp_path / "x.npz", {"u": u})
    splits, _ = read_splits(tmp_path / "x.npz", FieldLayout({"u": "vector"}))
    ids = {k: sorted({int(v) for v in t[:, 0, 0, 0, 0]}) for k, t in splits.items()}
    assert ids == {"train": [0, 1, 2], "valid": [3], "test": [4]}


def test_example_rotated_on_disk_is_the_group_action(tmp_path):
    """Planted: rotating the arrays of a file (grid and components) = L_g of what is read."""
    lay = FieldLayout(
        {"velocity": "vector", "pressure": "scalar", "forcing": "vector"}, ("forcing",)
    )
    traj, lay = read_fields(DATA / "kolmogorov_vpf.npz", lay)
    raw = dict(np.load(DATA / "kolmogorov_vpf.npz"))
    # torch.rot90(k=1) on (H, W) with (u_x, u_y) -> (u_y, -u_x) (group.py convention)
    rot = {k: np.rot90(v, 1, axes=(-3, -2) if v.ndim >= 3 and v.shape[-1] == 2 and k != "pressure" else (-2, -1)).copy()
           for k, v in raw.items()}  # fmt: skip
    for k in ("velocity", "forcing"):
        rot[k] = np.stack([rot[k][..., 1], -rot[k][..., 0]], -1)
    write_fields(tmp_path / "rot.npz", rot)
    rotated, _ = read_fields(tmp_path / "rot.npz", lay)
    expect = rotate(traj.flatten(0, 1), lay.spec, 1).reshape(traj.shape)
    torch.testing.assert_close(rotated, expect)


def _ckpt(root: Path) -> Path:
    return root / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt"


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_readme_commands_train_test_rotate_test_and_roll_out(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path, declare = LAYOUTS[name]
    common = ["--config", "revit:own-fields.yaml", "--data.path", str(path), *declare]
    root = tmp_path / "runs" / name
    fit = ["fit", *common, "--trainer.max_epochs", "2", "--trainer.default_root_dir", str(root)]
    assert main(fit) == 0
    ckpt = _ckpt(root)
    assert ckpt.is_file() and (root / "lightning_logs" / "version_0" / "metrics.csv").is_file()
    mse = {}
    for variant in ("id", "rot90"):
        capsys.readouterr()
        test = ["test", *common, "--ckpt_path", str(ckpt), "--data.test_variant", variant,
                "--trainer.default_root_dir", str(root)]  # fmt: skip
        assert main(test) == 0
        out = capsys.readouterr().out
        mse[variant] = float(out.split("test_mse")[1].split()[1].strip("│ "))
    assert mse["id"] > 0
    assert mse["rot90"] == pytest.approx(mse["id"], rel=1e-4)  # exactly equivariant
    group = "o" if name == "flow3d" else "c4"
    grid = "8" if name == "flow3d" else "16"
    assert main(["equivariance", "--checkpoint", str(ckpt), "--group", group, "--grid", grid]) == 0
    assert float(capsys.readouterr().out.split(":")[-1]) < 1e-5
    assert main(["rollout", "--checkpoint", str(ckpt), "--data", str(path), "--steps", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["step 1", "step 2"]


def test_swin_on_own_fields_is_not_equivariant(tmp_path, monkeypatch, capsys):
    """The same command with --model.backbone swin: the rotated test differs (test can fail)."""
    monkeypatch.chdir(tmp_path)
    path, declare = LAYOUTS["vpf"]
    common = ["--config", "revit:own-fields.yaml", "--data.path", str(path), *declare,
              "--model.backbone", "swin", "--trainer.default_root_dir", str(tmp_path)]  # fmt: skip
    assert main(["fit", *common, "--trainer.max_epochs", "1"]) == 0
    mse = {}
    for variant in ("id", "rot90"):
        capsys.readouterr()
        args = [
            "test",
            *common,
            "--ckpt_path",
            str(_ckpt(tmp_path)),
            "--data.test_variant",
            variant,
        ]
        assert main(args) == 0
        mse[variant] = float(capsys.readouterr().out.split("test_mse")[1].split()[1].strip("│ "))
    assert abs(mse["rot90"] / mse["id"] - 1) > 1e-3


@pytest.mark.parametrize(
    "extra, match",
    [(["--data.path", "missing.npz"], "no data file"),
     (["--data.path", "DATA", "--data.fields", "{velocity: vector, wind: vector}",
       "--data.static", "[]"], "no array"),
     (["--data.path", "DATA", "--data.static", "[]"], "expected (4, 4, 16, 16, 2)"),
     (["--data.path", "DATA", "--model.problem", "kolmogorov"], "--model.problem custom")],
)  # fmt: skip
def test_own_fields_bad_input_one_line_exit_2(extra, match, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    extra = [str(DATA / "kolmogorov_vpf.npz") if e == "DATA" else e for e in extra]
    args = ["fit", "--config", "revit:own-fields.yaml", *extra,
            "--trainer.max_epochs", "1", "--trainer.default_root_dir", str(tmp_path)]  # fmt: skip
    if "--model.problem" not in match:
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and match in err and "Traceback" not in err
        return
    # a model/data mismatch is found once the Trainer exists: run the installed CLI itself
    # (in-process, Lightning's log handlers may still point at an earlier test's closed stream)
    import subprocess
    import sys

    cli = Path(sys.executable).with_name("revit")
    done = subprocess.run([str(cli), *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("revit: error")]
    assert len(errors) == 1 and match in errors[0] and "Traceback" not in done.stderr


def _readme_commands() -> list[list[str]]:
    """The bash block of the README's "On your own data" section, one argv per command."""
    import shlex

    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split("## On your own data", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    return [shlex.split(ln) for ln in lines]


def test_readme_own_data_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """Every command of the README block, verbatim, from a copy of the package's tests/data
    (only ``--trainer.max_epochs 2`` is appended to each ``fit``, to keep the test short)."""
    import shutil

    shutil.copytree(DATA, tmp_path / "tests" / "data")
    monkeypatch.chdir(tmp_path)
    commands = _readme_commands()
    assert [c[1] for c in commands] == ["fit", "test", "rollout", "fit", "fit", "equivariance"]
    for argv in commands:
        assert argv[0] == "revit"
        args = argv[1:] + (["--trainer.max_epochs", "2"] if argv[1] == "fit" else [])
        capsys.readouterr()
        assert main(args) == 0, argv
        out = capsys.readouterr().out
        if argv[1] == "test":
            assert float(out.split("test_mse")[1].split()[1].strip("│ ")) > 0
        if argv[1] == "rollout":
            assert out.strip().splitlines()[-1].startswith("step 3: MSE")
        if argv[1] == "equivariance":
            assert float(out.split(":")[-1]) < 1e-5  # O, 24 elements
    for name in ("vpf", "scalar", "flow3d"):
        assert (tmp_path / "runs" / name / "lightning_logs" / "version_0" / "metrics.csv").is_file()
