"""reproduce: the presets validate; every section runs on a tiny override."""

from ou_ident.reproduce import EXPERIMENT

TINY = """
sections:
  comparison:
    n: 2000
    kds_steps: 10
    sizes: [{p: 4, seeds: 1, methods: ["ours: joint (support known)", "no change"]}]
  error_vs_n: {ns: [1000, 10000, 100000], seeds: 1}
  efficiency: {p: 4, ns: [100000], seeds: 2}
  cramer_rao: {p: 4, ns: [100000000], seeds: 1, replications: 3}
  coverage: {p: 3, n: 100000, replications: 3}
  sparse_efficiency: {p: 4, n: 100000, seeds: [2, 3]}
"""

SECTIONS = [
    "comparison",
    "error_vs_n",
    "identifiability",
    "efficiency",
    "cramer_rao",
    "coverage",
    "sparse_efficiency",
    "sachs",
    "sachs_shrinkage",
]


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        assert list(EXPERIMENT.validate(preset)) == SECTIONS


def test_sections_run_on_a_tiny_override(tmp_path):
    small = tmp_path / "tiny.yaml"
    small.write_text(TINY)
    report = EXPERIMENT.run(
        tmp_path / "out", preset="quick", overrides=[small], log=False, sections=SECTIONS[:7]
    )
    rows = report.sections["comparison"].tables[0].rows
    assert {r["method"] for r in rows} == {"ours: joint (support known)", "no change"}
    nullity = report.sections["identifiability"].tables[0].rows[0]
    assert nullity["degradation"] == 1 and nullity["shift"] == 4
    assert (tmp_path / "out" / "error_vs_n.png").is_file()
    eff = report.sections["efficiency"].tables[0].rows[0]
    assert eff["seeds"] == 2 and eff["unstable (weighted)"].startswith("0/2")
    crb = report.sections["cramer_rao"].tables[0].rows[0]
    assert crb["system seed"] == 0 and crb["n"] == 10**8
    assert crb["efficient (rms)"] < 3 * crb["Cramer-Rao scale"]
    cov = {r["parameters"]: r for r in report.sections["coverage"].tables[0].rows}
    parts = sum(r["count"] for name, r in cov.items() if name != "all")
    assert cov["all"]["count"] == parts and 0.0 <= cov["all"]["coverage"] <= 1.0
    sparse = report.sections["sparse_efficiency"].tables[0].rows
    assert [r["seeds"] for r in sparse] == [2] * 4 + [3] * 4
    joint3 = next(r for r in sparse if r["seeds"] == 3 and r["estimator"] == "ours: joint")
    assert len(joint3["per seed"].split()) == 3
