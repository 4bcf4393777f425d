"""``weakprior reproduce``: a miniature run of every section (default) and the quick preset (slow)."""

import json

import pytest
from icml26_shared.reproduce import run_reproduce
from weakprior.paper import PAPER
from weakprior.reproduce import EXPERIMENT

TINY = __import__("pathlib").Path(__file__).parent / "data" / "reproduce-tiny.yaml"


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert set(settings) == {"mismatch", "gaussian", "correlation", "cost"}


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "no-weights"))
    report = run_reproduce(PAPER, tmp_path, preset="quick", overrides=[TINY], log=False)
    tables = report.sections["mismatch"].tables
    over_seeds, gap_seeds, margin = tables[:3]
    main, gap, full, ssim_table, ssim_miss = tables[3:]
    assert "over 2 seeds" in over_seeds.title and "(seed 0)" in main.title
    assert all("±" in r["keep0.5"] for r in over_seeds.rows + gap_seeds.rows + margin.rows)
    assert [r["mismatched prior"] for r in gap_seeds.rows] == ["faces", "under-trained"]
    assert {(r["solver"], r["prior"]) for r in margin.rows} == {
        ("weak", "digits"), ("weak", "faces"), ("weak", "under-trained"), ("dmplug", "digits"),
        ("dps", "digits")}  # fmt: skip
    rows = {(r["solver"], r["prior"]) for r in main.rows}
    assert rows == {("weak", "digits"), ("weak", "faces"), ("weak", "under-trained"),
                    ("dmplug", "digits"), ("dps", "digits"), ("tv", "none")}  # fmt: skip
    assert [r["mismatched prior"] for r in gap.rows] == ["faces", "under-trained"]
    assert all(isinstance(r["keep0.5"], float) for r in gap.rows)
    # blur / SR have no missing pixels: the missing-pixel columns are the whole-image ones
    assert [r["sr2"] for r in main.rows] == [r["sr2"] for r in full.rows]
    assert [r["box"] for r in main.rows] != [r["box"] for r in full.rows]
    assert all(-1 <= r["box"] <= 1 and -1 <= r["keep0.5"] <= 1 for r in ssim_miss.rows)
    assert [r["blur"] for r in ssim_miss.rows] == [r["blur"] for r in ssim_table.rows]
    (gauss,) = report.sections["gaussian"].tables
    assert len(gauss.rows) == 2 and "box" in gauss.columns
    (corr,) = report.sections["correlation"].tables
    assert corr.rows[0]["k=0"] == pytest.approx(1.0)
    assert [r["images"] for r in corr.rows][1:4] == [
        "prior samples: digits", "prior samples: faces", "prior samples: under-trained"
    ]  # fmt: skip
    (cost,) = report.sections["cost"].tables
    assert len(cost.rows) == 3 and all(r["UNet2DModel"] > 0 and r["ratio"] > 0 for r in cost.rows)
    assert "stacked batch 4" in cost.rows[1]["call"]  # 2 images x (keep0.5, box)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick" and len(data["sections"]) == 4
    for png in ("gap.png", "gaussian_gap.png", "local_correlation.png"):
        assert (tmp_path / png).stat().st_size > 1000
    md = (tmp_path / "results.md").read_text()
    assert "under-trained" in md and "## mismatch" in md
    assert "LPIPS not computed" in md and "vgg16-397923af.pth" in md  # weights not cached


def test_one_section_alone_keeps_the_others(tmp_path):
    run_reproduce(PAPER, tmp_path, preset="quick", overrides=[TINY], log=False)
    report = EXPERIMENT.run(tmp_path, preset="quick", overrides=[TINY], sections=["gaussian"],
                            log=False)  # fmt: skip
    assert list(report.sections) == ["mismatch", "gaussian", "correlation", "cost"]


@pytest.mark.slow
def test_quick_reproduce_claims(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", log=False)
    main, gap = report.sections["mismatch"].tables[:2]
    main = {(r["solver"], r["prior"]): r for r in main.rows}
    gap = {r["mismatched prior"]: r for r in gap.rows}
    # the matched prior beats a 5 %-trained one on every seed's mean
    assert float(gap["under-trained"]["keep0.5"].split()[0]) > 0
    assert float(main[("weak", "faces")]["keep0.8"].split()[0]) > 18
    assert {"dps-deepinv", "diffpir-deepinv", "ddrm-deepinv"} <= {s for s, _ in main}


def test_seed_tables_pair_the_seeds():
    """Gap and TV margin are means of per-seed differences, with Student-t 95 % intervals."""
    from scipy.stats import t
    from weakprior.prior_mismatch import seed_tables

    per_seed = [
        {("f", "weak", "f"): {"k": 20.0 + d}, ("f", "weak", "n"): {"k": 19.0 + d},
         ("f", "tv", "none"): {"k": 18.0 + 2 * d}}
        for d in (0.0, 1.0, 2.0)
    ]  # fmt: skip
    psnr, gap, margin = seed_tables(per_seed, ["k"])
    assert [r["k"] for r in psnr.rows][0] == f"21.00 ± {t.ppf(0.975, 2) / 3**0.5:.2f}"
    assert gap.rows[0]["k"] == "1.00 ± 0.00"  # the same 1 dB on every seed: no spread
    margins = {r["prior"]: r["k"] for r in margin.rows}
    assert margins["f"] == f"1.00 ± {t.ppf(0.975, 2) / 3**0.5:.2f}"  # 2, 1, 0 dB over TV
