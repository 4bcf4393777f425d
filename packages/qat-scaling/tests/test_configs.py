"""Every experiment YAML builds its model; the smoke config trains through the CLI."""

from pathlib import Path

import pytest
import yaml
from qat_scaling.cli import main
from qat_scaling.lightning import QATLanguageModel

ALL = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))
CONFIGS = [p for p in ALL if not p.stem.startswith("sweep")]  # LightningCLI fit configs
SWEEPS = [p for p in ALL if p.stem.startswith("sweep")]  # grids of `qat-scaling sweep`


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_builds(path):
    cfg = yaml.safe_load(path.read_text())
    model = QATLanguageModel(**cfg["model"])
    assert model.n_params > 0


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_sweep_config_is_a_valid_grid(path):
    from qat_scaling.grid import GridSpec

    spec = GridSpec(**yaml.safe_load(path.read_text()))
    assert ("FP", 0) in spec.runs
    # a committed sweep rests on >= 3 paired seeds; a pilot (sweep-pilot-*) is one FP seed
    assert len(spec.paired_seeds) >= 3 or path.stem.startswith("sweep-pilot")
    # the small end is trained to >= 20 tokens per parameter
    assert spec.tokens(spec.budgets[-1]) / 20640 >= 20


def test_smoke_config_fits(tmp_path):
    smoke = next(p for p in CONFIGS if p.stem == "smoke")
    assert (
        main(
            [
                "fit",
                "--config",
                str(smoke),
                "--trainer.default_root_dir",
                str(tmp_path),
                "--trainer.accelerator",
                "cpu",
            ]
        )
        == 0
    )
