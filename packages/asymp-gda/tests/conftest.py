"""Keep the suite on one thread (a shared 2-core machine)."""

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import torch  # noqa: E402

torch.set_num_threads(1)
