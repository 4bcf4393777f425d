"""The asymp-gda command line: help, subcommands, and one clear line for bad input."""

from pathlib import Path

import numpy as np
import pytest
from asymp_gda.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_solve_does_not_import_lightning(tmp_path):
    """Issue #51: ``asymp-gda solve`` runs on torch alone (only fit/validate/test/predict need
    lightning); checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys; from asymp_gda.cli import main; "
        "code = main(['solve', '--game', 'brps', '--eta', '0.1', '--iterations', '200']); "
        "assert code == 0, code; "
        "heavy = sorted(m for m in sys.modules if m == 'lightning' or m.startswith('lightning.')); "
        "assert not heavy, heavy; print('no lightning')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no lightning" in proc.stdout


def test_solve_brps(capsys):
    assert main(["solve", "--game", "brps", "--eta", "0.1", "--iterations", "1500"]) == 0
    out = capsys.readouterr().out
    assert "NashConv" in out and "[0.2, 0.6, 0.2]" in out


@pytest.mark.parametrize("side", ["x", "y", "both"])
@pytest.mark.parametrize("eps", [1e-3, 1e-12])
def test_converged_matches_reported_nash_conv_for_every_side(tmp_path, side, eps):
    """Issue #37: ``converged`` is exactly ``nash_conv <= eps`` of the written pair, all sides."""
    import json

    import torch
    from asymp_gda.exploitability import nash_conv
    from asymp_gda.matrix_game import biased_rps

    out = tmp_path / side
    args = ["solve", "--game", "brps", "--side", side, "--eta", "0.1", "--iterations", "300"]
    assert main([*args, "--eps", str(eps), "--out", str(out)]) == 0
    rec = json.loads((out / "result.json").read_text())
    st = json.loads((out / "strategies.json").read_text())
    x = torch.tensor([st["x"]], dtype=torch.float64)
    y = torch.tensor([st["y"]], dtype=torch.float64)
    assert abs(float(nash_conv(biased_rps(), x, y)[0]) - rec["nash_conv"]) < 1e-12
    assert rec["converged"] == (rec["nash_conv"] <= eps)
    trace = json.loads((out / "trace.json").read_text())
    assert trace["nash_conv"][-1] == rec["nash_conv"]


def test_param_free_solve_writes_certified_result(tmp_path):
    import json

    out = tmp_path / "pf"
    assert main(["solve", "--game", "random6", "--method", "param_free", "--eta", "0.5",
                 "--iterations", "50000", "--eps", "1e-6", "--out", str(out)]) == 0  # fmt: skip
    rec = json.loads((out / "result.json").read_text())
    assert rec["converged"] and rec["nash_conv"] <= 1e-6
    assert rec["gradient_evaluations"] == rec["updates"]
    assert (out / "convergence.png").stat().st_size > 1000


def test_own_data_example_from_the_readme(tmp_path):
    """The README's "On your own data" commands, on the shipped example payoff."""
    import json
    import subprocess
    import sys

    data = Path(__file__).parent / "data" / "payoff.csv"
    code = "import sys; from asymp_gda.cli import main; sys.exit(main(sys.argv[1:]))"
    for method in ("param_free", "ogda"):
        out = tmp_path / method
        args = ["solve", "--payoff", str(data), "--method", method, "--eta", "0.5",
                "--iterations", "20000", "--out", str(out)]  # fmt: skip
        if method == "ogda":
            args[args.index("--eta") + 1] = "0.05"
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rec = json.loads((out / "result.json").read_text())
        strategies = json.loads((out / "strategies.json").read_text())
        assert len(strategies["x"]) == 4 and len(strategies["y"]) == 3
        assert rec["converged"] == (rec["nash_conv"] <= rec["eps"])
        assert {p.name for p in out.iterdir()} >= {"result.json", "trace.json", "convergence.png"}
    assert json.loads((tmp_path / "param_free" / "result.json").read_text())["converged"]


def test_solve_openspiel_game_writes_policy(tmp_path):
    pytest.importorskip("pyspiel")
    import json

    out = tmp_path / "kuhn"
    assert main(["solve", "--game", "kuhn_poker", "--method", "dogda", "--eta", "1.0",
                 "--iterations", "300", "--out", str(out)]) == 0  # fmt: skip
    pol = json.loads((out / "strategies.json").read_text())["policy"]
    assert len(pol) == 12  # Kuhn: 6 information states per player
    assert all(abs(sum(p) - 1) < 1e-9 for p in pol.values())


def test_solve_openspiel_param_free_converged_is_its_nash_conv(tmp_path):
    """Alg. 1 in sequence form through the CLI: stops at NashConv <= eps; converged agrees."""
    pytest.importorskip("pyspiel")
    import json

    out = tmp_path / "kuhn_pf"
    assert main(["solve", "--game", "kuhn_poker", "--method", "param_free", "--mu", "0.05",
                 "--eta", "3", "--iterations", "3000", "--eps", "1e-5", "--out", str(out)]) == 0  # fmt: skip
    rec = json.loads((out / "result.json").read_text())
    assert rec["converged"] and rec["nash_conv"] <= 1e-5
    assert rec["iterations"] < 3000 and rec["updates"] == 4 * rec["iterations"]
    trace = json.loads((out / "trace.json").read_text())
    assert trace["nash_conv"][-1] == rec["nash_conv"]


def test_threshold_and_sweep(capsys):
    assert main(["threshold", "--game", "m_ne"]) == 0
    assert "[0.333333, 0.333333, 0.333333, 0.0, 0.0]" in capsys.readouterr().out
    assert (
        main(
            ["sweep-mu", "--game", "brps", "--mus", "[1.0]", "--eta", "0.1", "--iterations", "500"]
        )
        == 0
    )
    assert "threshold" in capsys.readouterr().out


def _write(tmp_path, name, arr):
    path = tmp_path / name
    np.savetxt(path, np.atleast_2d(arr), delimiter=",")
    return str(path)


def _bad(capsys, args, needle):
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if "Warning" not in ln]
    assert "Traceback" not in err
    assert needle in err, err
    assert len(lines) <= 2, err


def test_bad_payloads(capsys, tmp_path):
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "missing.csv")], "does not exist")
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "cube.npy")], "2-D")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "nan.npy")], "non-finite")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    _bad(capsys, ["threshold", "--payoff", str(tmp_path / "empty.npy")], "empty action set")
    p = _write(tmp_path, "p.csv", [[1.0, -1.0], [-1.0, 1.0]])
    q = _write(tmp_path, "q.csv", [[1.0, -1.0], [-1.0, 1.0]])
    _bad(capsys, ["solve", "--payoff", p, "--payoff_col", q], "zero-sum")


def test_bad_parameters(capsys):
    _bad(capsys, ["solve", "--mu", "0"], "mu must be > 0")
    _bad(capsys, ["solve", "--mu", "-1"], "mu must be > 0")
    _bad(capsys, ["solve", "--eta", "0"], "step size")
    _bad(capsys, ["solve", "--x0", "[0.5, 0.6, 0.1]"], "not on the probability simplex")
    _bad(capsys, ["solve", "--x0", "[0.5, 0.5]"], "shape")
    _bad(capsys, ["solve", "--game", "no_such_game"], "unknown game")
    _bad(capsys, ["solve", "--method", "sgd"], "unknown method")


def test_large_step_warns(capsys):
    with pytest.warns(RuntimeWarning, match="stability bound"):
        assert main(["solve", "--eta", "0.9", "--iterations", "10"]) == 0


def test_fit_with_config(tmp_path):
    cfg = CONFIGS / "fit-brps.yaml"
    assert (
        main(
            [
                "fit",
                "--config",
                str(cfg),
                "--trainer.max_epochs",
                "1",
                "--trainer.default_root_dir",
                str(tmp_path),
                "--trainer.logger",
                "false",
                "--trainer.enable_checkpointing",
                "false",
            ]
        )
        == 0
    )


def test_every_config_parses():
    for cfg in sorted(CONFIGS.glob("*.yaml")):
        text = cfg.read_text()
        assert text.strip(), cfg
