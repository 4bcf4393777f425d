"""``weakprior reproduce``: a miniature run of every code path (default) and the quick run (slow)."""

import json

import pytest
import weakprior.reproduce as rep
from icml26_shared.reproduce import run_reproduce
from weakprior.paper import PAPER

TINY = rep.Setting(
    targets=("digits",), priors=("digits", "faces", "under-trained"), keeps=(0.5,),
    extra_ops=("box", "blur", "sr2"), n_images=2, prior_steps=20, iterations=3, dps_steps=3,
    image_size=8, width=8, batch_size=8, best_k=2, tv_iterations=3,
    anchors=("dmplug", "dps", "tv"),  # dps-deepinv: tests/test_deepinv_anchor.py
)  # fmt: skip


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", TINY)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "no-weights"))
    report = run_reproduce(PAPER, tmp_path, quick=True, seed=0)
    main, gap, full, ssim_table, ssim_miss, gauss, corr, cost = report.tables
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
    assert len(gauss.rows) == 2 and "box" in gauss.columns
    assert corr.rows[0]["k=0"] == pytest.approx(1.0)
    assert len(cost.rows) == 3 and all(r["UNet2DModel"] > 0 and r["ratio"] > 0 for r in cost.rows)
    assert "stacked batch 4" in cost.rows[1]["call"]  # 2 images x (keep0.5, box)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["quick"] is True and len(data["tables"]) == 8
    assert (tmp_path / "gap_and_correlation.png").stat().st_size > 1000
    md = (tmp_path / "results.md").read_text()
    assert "under-trained" in md
    assert "LPIPS not computed" in md and "vgg16-397923af.pth" in md  # weights not cached


@pytest.mark.slow
def test_quick_reproduce_claims(tmp_path):
    report = run_reproduce(PAPER, tmp_path, quick=True, seed=0)
    main = {(r["solver"], r["prior"]): r for r in report.tables[0].rows}
    gap = {r["mismatched prior"]: r for r in report.tables[1].rows}
    assert gap["under-trained"]["keep0.5"] > 0  # the matched prior beats a 5 %-trained one
    assert float(main[("weak", "faces")]["keep0.8"].split()[0]) > 18
