"""Every experiment YAML builds its model; the smoke config trains through the CLI."""

from pathlib import Path

import pytest
import yaml
from qat_scaling.cli import main
from qat_scaling.lightning import QATLanguageModel

CONFIGS = sorted((Path(__file__).parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_config_builds(path):
    cfg = yaml.safe_load(path.read_text())
    model = QATLanguageModel(**cfg["model"])
    assert model.n_params > 0


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
