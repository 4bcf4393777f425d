"""Test setup: one BLAS thread (the linear systems are small; threads only contend)."""

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="session")
def _single_blas_thread():
    with threadpool_limits(limits=1):
        yield
