"""Test set-up of weakprior: one thread per process, priors cached in a per-session folder."""

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _prior_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("WEAKPRIOR_CACHE", str(tmp_path_factory.getbasetemp() / "weakprior-cache"))
