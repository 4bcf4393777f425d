"""Your own PDE from a spec file: three PDEs that are not in the registry, through the CLI.

Each test runs exactly the README's command (``lorfs solve --spec FILE --out DIR``) on a spec in
``tests/data`` and checks the written solution against an independent reference: ETDRK4 for
the two time-dependent ones, the closed form for the steady Dirichlet problem.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from lorfs.cli import main
from lorfs.reference import etdrk4

DATA = Path(__file__).resolve().parent / "data"


def _run(spec, out):
    rc = main(["solve", "--spec", str(DATA / spec), "--out", str(out)])
    assert rc in (0, None)
    result = json.loads((out / "result.json").read_text())
    sol = np.load(out / "solution.npz")
    assert (out / "solution.png").stat().st_size > 1000
    return result, sol


def _etdrk4_on_grid(u0_nodes, nu, reaction, t_grid, x_grid):
    n = u0_nodes.size
    steps = 100 * (t_grid.size - 1)
    _, u = etdrk4(u0_nodes, 2 * np.pi, nu, reaction, float(t_grid[-1]), steps, t_grid.size)
    k = np.fft.fftfreq(n, d=1.0 / n)
    coef = np.fft.fft(u, axis=1) / n
    return np.real(coef @ np.exp(1j * k[:, None] * x_grid[None, :]))


def test_spec_heat_expcos_grows_rank_and_matches_etdrk4(tmp_path):
    result, sol = _run("heat_expcos.yaml", tmp_path / "heat")
    ranks = [h["rank"] for h in result["history"]]
    assert ranks[0] == 2 and len(ranks) >= 2  # automatic rank growth
    x = 2 * np.pi * np.arange(64) / 64
    ref = _etdrk4_on_grid(np.exp(np.cos(x)), 0.5, lambda v: 0 * v, sol["grid_t"], sol["grid_x"])
    assert np.linalg.norm(sol["u"] - ref) / np.linalg.norm(ref) < 1e-5


def test_spec_bistable_from_a_csv_initial_condition_matches_etdrk4(tmp_path):
    result, sol = _run("bistable.yaml", tmp_path / "bistable")
    u0 = np.loadtxt(DATA / "u0_bistable.csv")
    ref = _etdrk4_on_grid(
        u0, 0.01, lambda v: 5 * v * (1 - v) * (v - 0.3), sol["grid_t"], sol["grid_x"]
    )
    assert np.linalg.norm(sol["u"] - ref) / np.linalg.norm(ref) < 1e-4
    assert result["residual"] < 1e-4


def test_spec_steady_dirichlet_helmholtz_matches_the_closed_form(tmp_path):
    result, sol = _run("helmholtz_dirichlet.yaml", tmp_path / "helm")
    assert result["error"] < 1e-10
    xx, yy = np.meshgrid(sol["grid_x"], sol["grid_y"], indexing="ij")
    exact = np.sin(np.pi * xx) * np.sin(2 * np.pi * yy) + 0.5 * np.sin(3 * np.pi * xx) * np.sin(
        np.pi * yy
    )
    assert np.abs(sol["u"] - exact).max() < 1e-10


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("axes: []\n", "axes"),
        (
            "axes: [{name: x, domain: [0, 1], boundary: dirichlet}]\noperator: {derivatives: [{axis: y, order: 2}]}\nsource: 'sin(x)'\n",
            "axis must be one of",
        ),
        (
            "axes: [{name: t, domain: [0, 1], boundary: time}, {name: x, domain: [0, 1]}]\noperator: {derivatives: [{axis: t}]}\ninitial: 'sin(q)'\n",
            "unknown name",
        ),
        (
            "axes: [{name: t, domain: [0, 1], boundary: time}, {name: x, domain: [0, 1]}]\noperator: {derivatives: [{axis: t}]}\nreaction: {4: 1}\ninitial: 'x'\n",
            "powers",
        ),
    ],
)
def test_bad_spec_is_one_line_and_exit_2(tmp_path, capsys, text, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    rc = main(["solve", "--spec", str(spec)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and message in err[0]


def test_missing_spec_file_is_exit_2(tmp_path, capsys):
    assert main(["solve", "--spec", str(tmp_path / "nope.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
