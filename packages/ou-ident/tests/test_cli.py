"""The ou-ident command line: package commands, one clear line for package-specific bad input.

The generic checks (help, unknown command, configs, malformed YAML) are the registry contract
(``ci/test_registry.py``).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from icml26_shared.contract import assert_one_line_error
from ou_ident.cli import main

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, code, match):
    assert_one_line_error(capsys.readouterr().err, match, code)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    f = tmp_path_factory.mktemp("exp") / "exp.npz"
    assert main(["simulate", "--out", str(f), "--p", "6", "--n", "null", "--seed", "1"]) == 0
    return f


def test_simulate_then_solve_recovers_population_truth(experiment, capsys, tmp_path):
    out = tmp_path / "fit"
    for method in ("joint", "recursive", "efficient"):
        assert (
            main(["solve", "--data", str(experiment), "--method", method, "--out", str(out)]) == 0
        )
        text = capsys.readouterr().out
        err = float(text.split("relative error of A (scale aligned): ")[1].split()[0])
        assert err < 1e-8, method
    assert {f.name for f in out.iterdir()} >= {"fit.json", "result.json", "fit.png"}


def test_solve_does_not_import_lightning(experiment, tmp_path):
    """Issue #51: a command that does not train never imports lightning (fresh process)."""
    code = (
        "import sys\n"
        "from ou_ident.cli import main\n"
        f"rc = main(['solve', '--data', {str(experiment)!r}, '--method', 'joint'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'lightning', "
        "'pytorch_lightning', 'torch'})\n"
        "print('HEAVY', heavy[:3])\n"
        "sys.exit(rc)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-1000:]
    assert "relative error of A" in run.stdout
    assert "HEAVY []" in run.stdout, run.stdout


def test_identifiability_command(capsys):
    assert main(["identifiability", "--graph", "dense", "--p", "3", "--family", "shift"]) == 0
    out = capsys.readouterr().out
    assert "nullity 4" in out and "NOT identifiable" in out
    assert main(["identifiability", "--graph", "dense", "--p", "4"]) == 0
    assert "nullity 1" in capsys.readouterr().out


def test_bad_target(capsys):
    _one_line_error(
        capsys, main(["identifiability", "--p", "3", "--targets", "[7]"]), "out of range"
    )


def test_non_hurwitz_drift(tmp_path, capsys):
    A = tmp_path / "A.npy"
    np.save(A, np.array([[0.5, 0.0], [1.0, -1.0]]))
    code = main(["simulate", "--out", str(tmp_path / "x.npz"), "--drift", str(A)])
    _one_line_error(capsys, code, "not Hurwitz")


def test_negative_noise_and_bad_strength(tmp_path, capsys):
    A = tmp_path / "A.npy"
    np.save(A, -np.eye(2))
    code = main(
        ["simulate", "--out", str(tmp_path / "x.npz"), "--drift", str(A), "--noise", "[-1, 1]"]
    )
    _one_line_error(capsys, code, "non-negative")
    code = main(["simulate", "--out", str(tmp_path / "x.npz"), "--p", "4", "--strength", "-0.5"])
    _one_line_error(capsys, code, "gamma must be > 0")


def _tamper(src, dst, **changes):
    z = dict(np.load(src))
    z.update(changes)
    np.savez(dst, **z)
    return dst


def test_nan_and_non_psd_covariance(experiment, tmp_path, capsys):
    covs = np.load(experiment)["covs"].copy()
    covs[0, 0, 0] = np.nan
    f = _tamper(experiment, tmp_path / "nan.npz", covs=covs)
    _one_line_error(capsys, main(["solve", "--data", str(f)]), "NaN")
    covs = np.load(experiment)["covs"].copy()
    covs[0] = -covs[0]
    f = _tamper(experiment, tmp_path / "npsd.npz", covs=covs)
    _one_line_error(capsys, main(["solve", "--data", str(f)]), "positive semi-definite")


def test_duplicate_labels(experiment, tmp_path, capsys):
    import json

    specs = json.loads(str(np.load(experiment)["specs"]))
    specs[1]["name"] = specs[0]["name"]
    specs[1]["interventions"] = []
    f = _tamper(experiment, tmp_path / "dup.npz", specs=np.array(json.dumps(specs)))
    _one_line_error(capsys, main(["solve", "--data", str(f)]), "duplicate environment labels")


def test_mask_without_diagonal_and_several_roots(experiment, tmp_path, capsys):
    mask = np.load(experiment)["mask"].copy()
    mask[0, 0] = False
    np.save(tmp_path / "m.npy", mask)
    code = main(["solve", "--data", str(experiment), "--mask", str(tmp_path / "m.npy")])
    _one_line_error(capsys, code, "diagonal")
    roots = np.eye(6, dtype=bool)
    roots[2, 0] = roots[2, 1] = True
    roots[3:, 2] = True
    np.save(tmp_path / "r.npy", roots)
    code = main(
        [
            "solve",
            "--data",
            str(experiment),
            "--method",
            "recursive",
            "--mask",
            str(tmp_path / "r.npy"),
        ]
    )
    _one_line_error(capsys, code, "roots")
    np.save(tmp_path / "e.npy", np.eye(6, dtype=bool))
    code = main(
        [
            "solve",
            "--data",
            str(experiment),
            "--method",
            "recursive",
            "--mask",
            str(tmp_path / "e.npy"),
        ]
    )
    _one_line_error(capsys, code, "disconnected")


def _cells(tmp_path, n_per=30, p_genes=3):
    rng = np.random.default_rng(0)
    names = [f"G{i}" for i in range(p_genes)]
    rows = [",".join(names + ["perturbation"])]
    for label in ["control", "G0", "G1"]:
        for _ in range(n_per):
            rows.append(",".join(f"{v:.4f}" for v in rng.normal(size=p_genes)) + f",{label}")
    f = tmp_path / "cells.csv"
    f.write_text("\n".join(rows) + "\n")
    return f


def test_cells_csv_unknown_gene_and_few_cells(tmp_path, capsys):
    f = _cells(tmp_path)
    assert main(["solve", "--data", str(f), "--genes", "[G0, G1, G2]"]) == 0
    capsys.readouterr()
    _one_line_error(
        capsys, main(["solve", "--data", str(f), "--genes", "[G0, FOXP9]"]), "unknown gene"
    )
    small = _cells(tmp_path, n_per=2, p_genes=3)
    with pytest.warns(UserWarning, match="shrinkage"):
        main(["solve", "--data", str(small), "--genes", "[G0, G1, G2]"])


def test_solve_models_every_gene_by_default_and_top_k(tmp_path, capsys):
    f = _cells(tmp_path, n_per=40, p_genes=4)
    rows = f.read_text().splitlines()
    scaled = [rows[0]]
    for r in rows[1:]:  # G2, G3 get a tenth of the spread: the top 2 are G0, G1
        v = r.split(",")
        v[2], v[3] = f"{0.1 * float(v[2]):.4f}", f"{0.1 * float(v[3]):.4f}"
        scaled.append(",".join(v))
    f.write_text("\n".join(scaled) + "\n")
    assert main(["solve", "--data", str(f)]) == 0
    out = capsys.readouterr().out
    assert "modelling 4 of 4 genes (all)" in out
    assert "strength 0 " not in out
    assert main(["solve", "--data", str(f), "--top_k", "2"]) == 0
    assert "modelling 2 of 4 genes (top 2 by variance)" in capsys.readouterr().out
    _one_line_error(
        capsys, main(["solve", "--data", str(f), "--top_k", "2", "--genes", "[G0]"]), "not both"
    )


def test_missing_file(capsys):
    _one_line_error(capsys, main(["solve", "--data", "no-such-file.npz"]), "does not exist")


def test_offline_pertpy_name_is_one_line(capsys, monkeypatch):
    import ou_ident.perturbseq as ps

    monkeypatch.setattr(ps, "_online", lambda *a, **k: False)
    with pytest.raises((OSError, ImportError), match="pip install|no network"):
        ps.load_perturbseq("norman_2019")
    with pytest.raises(ValueError, match="neither an existing file"):
        ps.load_perturbseq("no_such_dataset")


def test_fit_test_predict_from_config(tmp_path, capsys):
    args = ["--config", str(CONFIGS / "smoke.yaml"), "--trainer.default_root_dir", str(tmp_path)]
    assert main(["fit", *args]) == 0
    assert main(["test", *args]) == 0
    assert "test_rel_err_A" in capsys.readouterr().out


def test_solve_with_a_sparsity_penalty(experiment, tmp_path, capsys):
    out = tmp_path / "pen"
    args = ["solve", "--data", str(experiment), "--method", "efficient"]
    assert main([*args, "--penalty", "1e-3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "l1 prior on the off-diagonal drift: penalty 0.001" in printed
    result = json.loads((out / "result.json").read_text())
    assert result["penalty"] == 1e-3
    from ou_ident.steady_state_fit import OUFit

    fit = OUFit.from_json(json.loads((out / "fit.json").read_text()))
    assert np.sum(fit.A != 0) - 6 == result["nonzero_offdiag"]
    _one_line_error(capsys, main([*args, "--penalty", "lots"]), "--penalty must be")
    _one_line_error(capsys, main([*args, "--penalty", "-1"]), "--penalty must be")
    _one_line_error(capsys, main([*args, "--penalty", "nan"]), "--penalty must be")
    code = main(["solve", "--data", str(experiment), "--method", "joint", "--penalty", "auto"])
    _one_line_error(capsys, code, "apply to --method efficient")
