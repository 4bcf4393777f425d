"""reproduce: the presets validate; every section runs on a tiny override."""

from ou_ident.reproduce import EXPERIMENT

TINY = """
sections:
  comparison:
    n: 2000
    kds_steps: 10
    sizes: [{p: 4, seeds: 1, methods: ["ours: joint (support known)", "no change"]}]
  error_vs_n: {ns: [1000, 10000, 100000], seeds: 1}
"""


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        assert list(EXPERIMENT.validate(preset)) == ["comparison", "error_vs_n", "identifiability"]


def test_sections_run_on_a_tiny_override(tmp_path):
    small = tmp_path / "tiny.yaml"
    small.write_text(TINY)
    report = EXPERIMENT.run(tmp_path / "out", preset="quick", overrides=[small], log=False)
    rows = report.sections["comparison"].tables[0].rows
    assert {r["method"] for r in rows} == {"ours: joint (support known)", "no change"}
    nullity = report.sections["identifiability"].tables[0].rows[0]
    assert nullity["degradation"] == 1 and nullity["shift"] == 4
    assert (tmp_path / "out" / "error_vs_n.png").is_file()
