"""Test set-up of sigreg: one thread per process (tiny matrices, small shared CPU)."""

import logging
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import torch  # noqa: E402

torch.set_num_threads(1)
for _name in ("lightning.pytorch", "lightning.fabric"):
    logging.getLogger(_name).setLevel(logging.ERROR)
