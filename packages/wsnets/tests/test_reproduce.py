"""reproduce: every section on a tiny override, the wiring of settings, the presets."""

import pytest
import wsnets.comparison as comparison
import yaml
from icml26_shared.reproduce import run_reproduce
from wsnets.paper import PAPER
from wsnets.reproduce import EXPERIMENT

WIDTHS = {"dws": 2, "np_pe": 2, "nft": 2, "gmn": 3, "mlp": 8, "mlp_aug": 8, "canon": 8,
          "statnn": 8, "nfn_hnp": 4, "nfn_np_pe": 4, "nfn_nft": 4}  # fmt: skip


def _tiny(tmp_path, seeds=2, F_values=(1, 2), **edit):
    cfg = {
        "seeds": seeds, "n_images": 24, "fit_steps": 2, "batch_size": 8,
        "cache_dir": str(tmp_path / "cache"), "widths": WIDTHS,
        "sections": {
            "output_ensemble": {"n_edit": 20, "F_values": list(F_values), "epochs": 1, **edit},
            "invariant": {"n_sine": 24, "n_zoo": 24, "epochs": 1},
        },
    }  # fmt: skip
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.slow
def test_reproduce_tiny(tmp_path):
    report = EXPERIMENT.run(tmp_path / "out", "quick", [_tiny(tmp_path)], log=False)
    edit = report.sections["output_ensemble"].tables[0].rows
    models = [r["model"] for r in edit]
    assert "DWS (= HNP-NFN)" in models and "no edit (anchor)" in models
    for label in ("flat MLP", "canonicalise + MLP", "NP-NFN+PE", "NF-Transformer"):
        assert {r["F"] for r in edit if r["model"] == label} == {1, 2}, label
    assert "±" in str(edit[0]["edit MSE"])  # two seeds: mean ± std cells
    inv = report.sections["invariant"].tables[0].rows
    assert any("StatNN" in r["model"] for r in inv) and "±" in str(inv[0]["digit-INR acc"])
    learn = report.sections["learnability"].tables[0].rows
    assert {r["zoo initialisation"] for r in learn} == {"independent", "shared"}
    checks, comm = report.sections["symmetry"].tables
    for row in checks.rows:
        if "flat" not in row["model"]:
            assert row["invariant head rel. error"] < 1e-4, row
            if "StatNN" not in row["model"]:
                assert row["equivariant head rel. error"] < 1e-4, row
    for row in comm.rows:
        assert row["layer linear params"] == row["commutant dim"]
    assert (tmp_path / "out" / "edit_mse_vs_F.png").is_file()


def test_settings_reach_the_runs_and_budgets_match(tmp_path, monkeypatch):
    """Without training (``fit_and_test`` stubbed): the sections pass each task its learning
    rate and epochs, the F sweep covers every family with an equivariant head, and every F > 1
    editor has at most the F = 1 editor's parameters (matched budgets)."""
    import wsnets.training as training

    calls = []

    def fake_fit_and_test(module, datamodule, epochs):
        calls.append((type(module).__name__, module.hparams.lr, epochs))
        return {"test/acc": 0.5, "test/loss": 0.01, "test/psnr": 20.0, "test/r2": 0.1,
                "test/kendall": 0.2, "s_per_epoch": 0.0, "best_epoch": 0}  # fmt: skip

    monkeypatch.setattr(training, "fit_and_test", fake_fit_and_test)
    over = _tiny(tmp_path, seeds=1, F_values=(1, 2, 8), epochs=4, lr=2e-3)
    cfg = yaml.safe_load(over.read_text())
    cfg["sections"]["invariant"].update(epochs=3, lr=7e-3)
    over.write_text(yaml.safe_dump(cfg))
    report = EXPERIMENT.run(tmp_path / "out", "quick", [over], ["output_ensemble", "invariant"],
                            log=False)  # fmt: skip
    edit_calls = [c for c in calls if c[0] == "INREditor"]
    assert len(edit_calls) == len(comparison.edit_models()) * 3  # ours (+ nfn rows if installed)
    assert {(lr, ep) for _, lr, ep in edit_calls} == {(2e-3, 4)}
    assert {(lr, ep) for n, lr, ep in calls if n != "INREditor"} == {(7e-3, 3)}
    rows = report.sections["output_ensemble"].tables[0].rows
    for label in (comparison.LABELS[m] for m in comparison.edit_models()):
        by_F = {r["F"]: r["params"] for r in rows if r["model"] == label}
        assert set(by_F) == {1, 2, 8}, label
        assert all(by_F[F] <= by_F[1] for F in (2, 8)), (label, by_F)


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        setting = EXPERIMENT.validate(preset)
        assert setting["output_ensemble"].F_values[0] == 1


@pytest.mark.slow
def test_quick_preset_end_to_end(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", log=False)
    assert set(report.sections) == {"output_ensemble", "invariant", "learnability", "symmetry"}


def test_keep_rows_merges_one_family_into_an_earlier_sweep(tmp_path, monkeypatch):
    """Rerunning DWS with ``keep_rows`` keeps the earlier GMN rows verbatim (same protocol),
    the merged table equals a joint run of both families, and a sweep made under another
    protocol (epochs) or with another anchor (splits) is refused."""
    import wsnets.training as training

    def fake_fit_and_test(module, datamodule, epochs):  # a planted MSE per (family, F)
        mse = {"dws": 0.02, "gmn": 0.01}[module.hparams.model] / module.hparams.F
        return {"test/loss": mse, "test/psnr": 20.0, "s_per_epoch": 0.0, "best_epoch": 0}

    monkeypatch.setattr(training, "fit_and_test", fake_fit_and_test)

    def sweep(out, models, keep=None, **edit):
        extra = {"models": models, **({"keep_rows": [str(keep)]} if keep else {}), **edit}
        over = _tiny(tmp_path, seeds=2, F_values=(1, 2), **extra)
        return EXPERIMENT.run(out, "quick", [over], ["output_ensemble"], log=False)

    joint = sweep(tmp_path / "joint", ["dws", "gmn"]).sections["output_ensemble"].tables[0]
    gmn = sweep(tmp_path / "merged", ["gmn"]).sections["output_ensemble"].tables[0]
    earlier = tmp_path / "merged" / "results.json"
    merged = sweep(tmp_path / "merged", ["dws"], keep=earlier).sections["output_ensemble"]
    rows = merged.tables[0].rows
    assert [(r["model"], r.get("F")) for r in rows] == [
        (r["model"], r.get("F")) for r in joint.rows
    ]
    assert rows == joint.rows  # same seeds and splits: the merge is the joint run
    assert [r for r in rows if r["model"] == "GMN (neural graph)"] == gmn.rows[:-1]
    assert "kept verbatim" in merged.tables[0].notes
    assert (tmp_path / "merged" / "edit_mse_vs_F.png").is_file()
    # nothing rerun: the kept rows alone, again identical
    alone = sweep(tmp_path / "alone", [], keep=earlier).sections["output_ensemble"].tables[0]
    assert alone.rows == joint.rows
    with pytest.raises(ValueError, match="another protocol"):
        sweep(tmp_path / "other", ["dws"], keep=earlier, epochs=2)
    with pytest.raises(ValueError, match="anchor"):
        comparison.kept_rows([str(earlier)], ["dws"], gmn.notes, [0.5, 0.5])
    # the same family in two files: identical rows count once, different rows are refused
    over = _tiny(tmp_path, seeds=2, F_values=(1, 2), models=[], keep_rows=[str(earlier)] * 2)
    again = EXPERIMENT.run(tmp_path / "again", "quick", [over], ["output_ensemble"], log=False)
    assert again.sections["output_ensemble"].tables[0].rows == joint.rows
    from icml26_shared.results import Report

    other = Report.read(tmp_path / "merged")
    other.sections["output_ensemble"].tables[0].rows[-2]["edit MSE"] = "0.1 ± 0.01"
    other.out_dir = tmp_path / "tampered"
    other.out_dir.mkdir()
    other.write()
    with pytest.raises(ValueError, match="rows in"):
        over = _tiny(tmp_path, seeds=2, F_values=(1, 2), models=["dws"],
                     keep_rows=[str(earlier), str(tmp_path / "tampered" / "results.json")])  # fmt: skip
        EXPERIMENT.run(tmp_path / "twice", "quick", [over], ["output_ensemble"], log=False)
