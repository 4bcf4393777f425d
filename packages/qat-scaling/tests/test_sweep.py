"""The user-defined sweep (README "On your own data"), the delta-space law fit, torchao's QAT flow."""

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from qat_scaling.cli import main
from qat_scaling.delta_fit import (
    VarianceFunction,
    fit_delta_law,
    fit_delta_law_weighted,
    fit_variance_function,
    holdout_delta,
    noise_floor,
    seed_bootstrap,
)
from qat_scaling.grid import GridSpec
from qat_scaling.scaling_law import QATLaw, fit_qat_law

DATA = Path(__file__).parent / "data"


@pytest.fixture
def own_data(tmp_path, monkeypatch):
    for name in ("grid.yaml", "corpus.txt"):
        shutil.copy(DATA / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_own_data_commands_run_a_two_cell_grid_and_resume(own_data, capsys):
    # exactly the README's commands
    assert main(["sweep", "--config", "grid.yaml", "--out", "my-sweep"]) == 0
    out = capsys.readouterr().out
    assert "done s32-FP-G0-seed0" in out and "done s32-W4A4-G8-seed0" in out
    runs = [json.loads(x) for x in (own_data / "my-sweep" / "runs.jsonl").read_text().splitlines()]
    assert {(r["scheme"], r["G"], r["steps"]) for r in runs} == {
        ("FP", 0, 4), ("FP", 0, 8), ("W4A4", 8, 4), ("W4A4", 8, 8)
    }  # fmt: skip
    assert all(r["D"] == r["steps"] * 4 * 32 for r in runs)
    result = json.loads((own_data / "my-sweep" / "result.json").read_text())
    assert result["records"] == 4 and result["grid"]["corpus_kwargs"] == {"path": "corpus.txt"}
    md = (own_data / "my-sweep" / "results.md").read_text()
    assert "delta = L_QAT - L_FP per (N, D)" in md and "corpus text {'path': 'corpus.txt'}" in md
    # one size: the law is not identifiable, and the report says so instead of fitting noise
    assert "Not fitted: W4A4" in md
    before = (own_data / "my-sweep" / "runs.jsonl").read_text()
    # resumable: a second call retrains nothing
    assert main(["sweep", "--config", "grid.yaml", "--out", "my-sweep"]) == 0
    assert "done " not in capsys.readouterr().out
    assert (own_data / "my-sweep" / "runs.jsonl").read_text() == before


def test_sweep_drops_a_cut_off_line_and_refuses_other_settings(own_data, capsys):
    assert main(["sweep", "--config", "grid.yaml", "--out", "s"]) == 0
    runs = own_data / "s" / "runs.jsonl"
    lines = runs.read_text().splitlines()
    # an interrupt during the last run's write: its records are cut off mid-line
    runs.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    capsys.readouterr()
    assert main(["sweep", "--config", "grid.yaml", "--out", "s"]) == 0
    out = capsys.readouterr().out
    assert "done s32-W4A4-G8-seed0" in out and "done s32-FP" not in out
    assert [json.loads(x)["run"] for x in runs.read_text().splitlines()].count(
        "s32-W4A4-G8-seed0"
    ) == 2
    # other training settings never mix with the file's runs
    assert main(["sweep", "--config", "grid.yaml", "--budgets", "[4, 6]", "--out", "s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other grid settings" in err[0]
    # report only, from the finished runs
    assert main(["sweep", "--config", "grid.yaml", "--out", "s", "--train", "false"]) == 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--runs", "[[W4A4, 8]]"], "FP run"),
        (["--runs", "[[FP, 0], [W5A5, 8]]"], "unknown scheme"),
        (["--corpus_kwargs", "{path: missing.txt}"], "does not exist"),
        (["--sizes", "[s7]"], "unknown size"),
    ],
)
def test_bad_grids_are_one_line_and_exit_2(own_data, capsys, args, message):
    assert main(["sweep", "--config", "grid.yaml", *args, "--out", "bad"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_grid_fingerprint_ignores_cells_but_not_training_settings():
    a = GridSpec(sizes=("s32",), budgets=(4, 8), runs=(("FP", 0), ("W4A4", 8)))
    grown = GridSpec(sizes=("s32", "s64"), budgets=(4, 8), runs=(("FP", 0),), seeds=(0, 1))
    assert a.fingerprint() == grown.fingerprint()
    assert a.fingerprint() != GridSpec(sizes=("s32",), budgets=(4, 9), runs=a.runs).fingerprint()
    assert [j["seed"] for j in grown.jobs()] == [0, 0, 1, 1]


def test_a_grid_narrower_than_32_trains_its_fp_run_and_pairs_it():
    """s16 (width 16): the FP run takes the grid's G for its (unused) quantiser settings."""
    from dataclasses import replace

    from qat_scaling.grid import PRESETS, run_grid
    from qat_scaling.scaling_law import qat_error

    spec = replace(PRESETS["smoke"], sizes=("s16",), runs=(("FP", 0), ("W4A4", 4), ("W4A4", 16)))
    records = run_grid(spec)
    assert {r["N"] for r in records} == {5200}
    errors = qat_error(records, strict=True)
    assert len(errors) == 2 * len(spec.budgets)
    assert all(np.isfinite(e["delta"]) for e in errors)


def _planted(law, noise, seeds, rng):
    pts = []
    for n in (1e4, 3e4, 1e5):
        for s in range(seeds):
            for d in (1e5, 3e5, 1e6):
                for g in (8, 32, 128):
                    mu = float(law.predict(n, d, g))
                    pts.append(dict(size=n, seed=s, N=n, D=d, G=g, delta=mu + noise * rng.normal()))
    return pts


def test_delta_space_fit_is_unbiased_where_dropping_nonpositive_deltas_is_not():
    """Planted law, additive noise of the size of the smallest deltas (many points <= 0)."""
    law = QATLaw(k=0.005, gN=0.5, gD=0.3, gG=0.8)
    rng = np.random.default_rng(0)
    pts = _planted(law, noise=0.004, seeds=30, rng=rng)
    delta = np.array([p["delta"] for p in pts])
    assert (delta <= 0).mean() > 0.1  # the situation of the issue
    cols = [np.array([p[k] for p in pts]) for k in ("N", "D", "G")]
    ours = fit_delta_law(*cols, delta)
    with pytest.warns(RuntimeWarning):
        logfit = fit_qat_law(*cols, delta)
    for name in ("gN", "gD"):
        assert abs(getattr(ours.law, name) - getattr(law, name)) < 0.05, name
        # dropping delta <= 0 keeps only the lucky noise of the small cells: biased low
        assert getattr(law, name) - getattr(logfit.law, name) > 0.07, name
    assert abs(ours.law.gG - law.gG) < 0.15
    assert ours.sigma == pytest.approx(0.004, rel=0.1)


def test_seed_bootstrap_interval_is_near_the_planted_exponent_and_noise_floor_is_measured():
    law = QATLaw(k=0.005, gN=0.5, gD=0.3, gG=0.8)
    for rs in (1, 2, 3):
        pts = _planted(law, noise=0.001, seeds=8, rng=np.random.default_rng(rs))
        fit = seed_bootstrap(pts, reps=40, seed=0)
        for name in ("gN", "gD", "gG"):
            lo, hi = fit.ci[name]
            assert fit.excludes_zero(name) and lo < getattr(fit.law, name) < hi
            # percentile intervals over 8 seeds are somewhat narrow: widened by their width
            assert lo - (hi - lo) < getattr(law, name) < hi + (hi - lo), (rs, name)
        floor = noise_floor(pts)
        assert floor["sd"] == pytest.approx(0.001, rel=0.2) and floor["cells"] == 27
    one_seed = [p for p in pts if p["seed"] == 0]
    assert seed_bootstrap(one_seed, reps=40).ci == {}  # nothing to resample


def test_unified_law_beats_n_only_on_held_out_cells_when_delta_grows_with_d():
    law = QATLaw(k=0.005, gN=0.5, gD=0.4, gG=0.8)
    pts = _planted(law, noise=1e-4, seeds=2, rng=np.random.default_rng(2))
    res = holdout_delta(pts)
    assert res["unified"]["rmse"] < 0.5 * res["N-only"]["rmse"]
    assert res["unified"]["cells"] == 27


def _planted_relative(law, cv, seeds, rng, floor=3e-4, shared=0.5):
    """The sweep-long design with delta's noise proportional to delta (as measured): a
    coefficient of variation ``cv``, a share of its variance common to a (size, seed)."""
    pts = []
    for n in (5200, 20640, 82240):
        for s in range(seeds):
            z_seed = rng.standard_normal()
            for d in (256_000, 512_000):
                for g in (4, 16):
                    mu = float(law.predict(n, d, g))
                    z = np.sqrt(shared) * z_seed + np.sqrt(1 - shared) * rng.standard_normal()
                    pts.append(
                        dict(
                            size=n,
                            seed=s,
                            N=n,
                            D=d,
                            G=g,
                            delta=mu * (1 + cv * z) + floor * rng.standard_normal(),
                        )
                    )
    return pts


# delta from 0.002 (N = 5200, 256k tokens, G = 4) to 0.022, growing with N like results/sweep-long
_HETERO_LAW = QATLaw(k=0.002 / 5200**0.5 / 256_000, gN=-0.5, gD=1.0, gG=0.5)


def test_relative_noise_model_beats_the_unweighted_fit_on_heteroscedastic_tables():
    """Where delta's seed sd is proportional to delta, the unweighted fit is dominated by the
    largest cells; reweighting by the fitted variance function recovers gG (a contrast within
    each size) much better. gN compares sizes, whose seed-level noise (shared by the cells of a
    size and seed) no weighting removes: there the two fits are on a par."""
    law = _HETERO_LAW
    est = {"additive": [], "relative": []}
    for t in range(16):
        pts = _planted_relative(law, cv=0.5, seeds=3, rng=np.random.default_rng(100 + t))
        cols = [np.array([p[k] for p in pts]) for k in ("N", "D", "G", "delta")]
        est["additive"].append([getattr(fit_delta_law(*cols).law, n) for n in ("gN", "gG")])
        rel = fit_delta_law_weighted(*cols)
        est["relative"].append([getattr(rel.law, n) for n in ("gN", "gG")])
        assert 0.2 < rel.variance.cv < 0.9
    truth = np.array([law.gN, law.gG])
    rmse = {m: np.sqrt(np.mean((np.array(e) - truth) ** 2, axis=0)) for m, e in est.items()}
    assert rmse["relative"][1] < 0.75 * rmse["additive"][1], rmse
    assert rmse["relative"][0] < 1.25 * rmse["additive"][0], rmse
    assert np.all(np.abs(np.mean(est["relative"], axis=0) - truth) < 0.15)


def test_variance_function_finds_additive_noise_when_the_noise_is_additive():
    law = QATLaw(k=0.005, gN=0.5, gD=0.3, gG=0.8)
    pts = _planted(law, noise=0.001, seeds=4, rng=np.random.default_rng(5))
    cols = [np.array([p[k] for p in pts]) for k in ("N", "D", "G", "delta")]
    fit = fit_delta_law_weighted(*cols)
    mu_max = float(law.predict(cols[0], cols[1], cols[2]).max())
    assert fit.variance.floor == pytest.approx(0.001, rel=0.25)
    assert fit.variance.cv * mu_max < 0.5 * fit.variance.floor  # no relative part to speak of
    assert abs(fit.law.gN - 0.5) < 0.1


def test_variance_function_needs_cells_with_two_seeds():
    with pytest.raises(ValueError):
        fit_variance_function([1.0, 2.0], [0.1, 0.2], [0, 0])
    assert VarianceFunction(0.0, 0.5).sd([0.02]).tolist() == [0.01]


def test_relative_seed_bootstrap_interval_covers_the_planted_exponents():
    law = _HETERO_LAW
    for rs in (7,):
        pts = _planted_relative(law, cv=0.3, seeds=8, rng=np.random.default_rng(rs))
        fit = seed_bootstrap(pts, reps=40, seed=0, noise="relative")
        assert fit.noise == "relative" and fit.variance is not None
        for name in ("gN", "gD", "gG"):
            lo, hi = fit.ci[name]
            assert lo - (hi - lo) < getattr(law, name) < hi + (hi - lo), (rs, name)
        assert fit.excludes_zero("gD") and fit.excludes_zero("gG")
    with pytest.raises(ValueError, match="noise"):
        seed_bootstrap(pts, reps=0, noise="poisson")


def test_noise_model_table_reads_the_slope_of_sd_on_mean():
    from qat_scaling.sweep import noise_model_table

    rel = _planted_relative(_HETERO_LAW, cv=0.5, seeds=6, rng=np.random.default_rng(3), floor=0)
    add = _planted(QATLaw(k=0.005, gN=0.5, gD=0.3, gG=0.8), 0.001, 6, np.random.default_rng(3))
    slopes = {}
    for name, pts in (("relative", rel), ("additive", add)):
        _, summary = noise_model_table([{**p, "scheme": "W4A4"} for p in pts])
        slopes[name] = summary["W4A4"]["slope"]
    assert slopes["relative"] > 0.7 and abs(slopes["additive"]) < 0.3, slopes


def test_torchao_prepare_trains_the_same_function_as_ours_and_converts_back():
    pytest.importorskip("torchao")
    from qat_scaling.quant_linear import QATScheme, apply_qat
    from qat_scaling.tiny_llama import tiny_llama
    from qat_scaling.torchao_qat import convert, prepare

    model = tiny_llama(32, 2, 64, 2, seed=0)
    x = torch.randint(0, 256, (3, 16))
    for scheme, G in (("W4A4", 8), ("W4A16", 32), ("W16A4", 16)):
        theirs = prepare(copy.deepcopy(model), scheme, G)
        ours = apply_qat(
            copy.deepcopy(model), QATScheme.preset(scheme, group_size=G, scale_rule="torchao")
        )
        a, b = theirs(input_ids=x).logits, ours(input_ids=x).logits
        assert torch.equal(a, b)  # bit for bit
        assert not torch.equal(a, model(input_ids=x).logits)
        assert type(theirs.lm_head) is torch.nn.Linear  # the head stays in full precision
        if scheme == "W4A4":
            # the backward passes differ: torchao masks the gradient where its clamp is
            # active (each group's largest positive entry at its scale rule); ours does not
            theirs(input_ids=x).logits.square().sum().backward()
            ours(input_ids=x).logits.square().sum().backward()
            g_theirs = theirs.model.layers[0].mlp.down_proj.linear.weight.grad
            g_ours = ours.model.layers[0].mlp.down_proj.weight.grad
            assert (g_theirs == 0).float().mean() > 0.02 and (g_ours == 0).float().mean() == 0
        convert(theirs)
        assert type(theirs.model.layers[0].mlp.down_proj) is torch.nn.Linear
        assert torch.equal(theirs(input_ids=x).logits, model(input_ids=x).logits)
