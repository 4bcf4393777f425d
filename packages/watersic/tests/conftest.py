"""Test set-up: one torch thread (the SIC loops are many small ops; on a shared 2-core
machine extra threads only add contention) and a seeded generator fixture."""

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)
