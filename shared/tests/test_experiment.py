"""Experiment settings: YAML presets, dataclass params, merging and validation."""

from dataclasses import dataclass

import pytest
from icml26_shared.experiment import (
    Experiment,
    Section,
    SettingError,
    build_params,
    deep_merge,
    read_yaml,
    seeds,
)
from icml26_shared.results import Table


@dataclass
class SpeedParams:
    n: int
    lr: float = 0.1
    methods: list[str] | None = None


def speed(p: SpeedParams, seed):
    t = Table("Speed", ["n", "lr", "seeds"])
    t.add_row(n=p.n, lr=p.lr, seeds=len(seeds({"seeds": 2}, seed)))
    return t


def make(tmp_path, quick: str) -> Experiment:
    (tmp_path / "quick.yaml").write_text(quick)
    return Experiment("toy", [Section("speed", speed, params=SpeedParams)], config_dir=tmp_path)


def test_params_dataclass_receives_typed_values(tmp_path):
    exp = make(tmp_path, "lr: 0.5\nsections:\n  speed: {n: 3, methods: [a, b]}\n")
    got = exp.validate("quick")["speed"]
    assert got == SpeedParams(n=3, lr=0.5, methods=["a", "b"])
    report = exp.run(tmp_path / "out", log=False)
    assert report.sections["speed"].tables[0].rows == [{"n": 3, "lr": 0.5, "seeds": 2}]


def test_global_keys_unknown_to_params_are_ignored(tmp_path):
    exp = make(tmp_path, "seeds: 3\nsections:\n  speed: {n: 3}\n")
    assert exp.validate("quick")["speed"].n == 3


@pytest.mark.parametrize(
    "yaml,msg",
    [
        ("sections:\n  speed: {n: 3, m: 1}\n", "unknown setting(s) ['m']"),
        ("sections:\n  speed: {lr: 1.0}\n", "missing setting(s) ['n']"),
        ("sections:\n  speed: {n: 'many'}\n", "setting 'n' = 'many' is not of type"),
        ("sections:\n  speed: {n: 2, methods: [1]}\n", "setting 'methods'"),
        ("sections:\n  slow: {n: 2}\n", "unknown section 'slow'"),
        ("sections: [1, 2]\n", "'sections' must be a mapping"),
        ("- a\n- b\n", "must hold a mapping"),
        ("n: [1,\n", "not valid YAML (line 2)"),
    ],
)
def test_bad_settings_name_the_problem(tmp_path, yaml, msg):
    exp = make(tmp_path, yaml)
    with pytest.raises(SettingError, match=None) as info:
        exp.validate("quick")
    assert msg in str(info.value)


def test_missing_preset_and_unknown_preset(tmp_path):
    exp = make(tmp_path, "sections: {speed: {n: 1}}\n")
    with pytest.raises(SettingError, match="full.yaml' does not exist"):
        exp.validate("full")
    with pytest.raises(SettingError, match="unknown preset 'huge'"):
        exp.validate("huge")


def test_deep_merge_does_not_alias():
    base = {"s": {"x": [1]}}
    out = deep_merge(base, {"s": {"y": 2}})
    out["s"]["x"].append(2)
    assert base == {"s": {"x": [1]}}


def test_build_params_float_accepts_int_not_bool():
    assert build_params(SpeedParams, {"n": 1, "lr": 1}, "here").lr == 1
    with pytest.raises(SettingError):
        build_params(SpeedParams, {"n": True}, "here")


def test_section_must_return_tables(tmp_path):
    (tmp_path / "quick.yaml").write_text("")
    exp = Experiment("toy", [Section("bad", lambda s, seed: 42)], config_dir=tmp_path)
    with pytest.raises(TypeError, match="section 'bad' returned int"):
        exp.run(tmp_path / "o", log=False)


def test_interrupted_run_keeps_finished_sections(tmp_path):
    def boom(setting, seed):
        raise KeyboardInterrupt

    (tmp_path / "quick.yaml").write_text("sections: {speed: {n: 1}}\n")
    exp = Experiment(
        "toy", [Section("speed", speed, params=SpeedParams), Section("boom", boom)],
        config_dir=tmp_path,
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        exp.run(tmp_path / "o", log=False)
    from icml26_shared.results import Report

    assert list(Report.read(tmp_path / "o").sections) == ["speed"]
    assert not list((tmp_path / "o").glob(".*.tmp"))


def test_read_yaml_empty_is_empty(tmp_path):
    (tmp_path / "e.yaml").write_text("")
    assert read_yaml(tmp_path / "e.yaml") == {}


def test_threads_key_sets_torch_threads_per_section(tmp_path):
    import torch

    seen = []

    def probe(setting, seed):
        seen.append(torch.get_num_threads())
        t = Table("T", ["x"])
        t.add_row(x=1)
        return t

    (tmp_path / "quick.yaml").write_text("threads: 1\n")
    before = torch.get_num_threads()
    Experiment("toy", [Section("probe", probe)], config_dir=tmp_path).run(tmp_path / "o", log=False)
    assert seen == [1] and torch.get_num_threads() == before
    (tmp_path / "quick.yaml").write_text("threads: 0\n")
    with pytest.raises(SettingError, match="threads must be a positive integer"):
        Experiment("toy", [Section("probe", probe)], config_dir=tmp_path).run(
            tmp_path / "p", log=False
        )
