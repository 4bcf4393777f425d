"""Keep the suite on one thread (2 shared cores)."""

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import torch  # noqa: E402

torch.set_num_threads(1)
