"""Teacher regression: one POET layer fitting a linear teacher, against the Procrustes floor.

Data: x ~ N(0, I_n), y = T x + noise, with a fixed teacher T (m x n) (:class:`~poet_x.lightning.TeacherRegressionDataModule`).
Student: W = R W0 P (a :class:`~poet_x.poet_linear.POETLinear`, merged every T steps) or a
plain ``nn.Linear`` trained by AdamW (``optimizer="adamw"``) (:class:`~poet_x.lightning.TeacherRegressionModule`).

Because R and P are orthogonal, the spectrum of W is that of W0, so the distance to the
teacher is bounded below by the two-sided orthogonal Procrustes value

    min_{R, P orthogonal} ||R W0 P - T||_F^2 = sum_i (sigma_i(W0) - sigma_i(T))^2

(von Neumann's trace inequality) -> :func:`procrustes_floor`. For x ~ N(0, I) the
population MSE per output is ||W - T||_F^2 / m (+ the noise variance), so POET's validation
MSE cannot go below floor / m + noise^2, while AdamW on a full matrix can reach noise^2.
The module logs ``val_mse``, ``weight_dist`` = ||W - T||_F^2 and ``procrustes_floor``.
"""

from __future__ import annotations

import torch


def procrustes_floor(w0: torch.Tensor, teacher: torch.Tensor) -> float:
    """sum_i (sigma_i(W0) - sigma_i(T))^2: the least ||R W0 P - T||_F^2 over orthogonal R, P.

    Examples
    --------
    >>> procrustes_floor(torch.eye(3), 2 * torch.eye(3))
    3.0
    """
    s0 = torch.linalg.svdvals(w0.double())
    st = torch.linalg.svdvals(teacher.double())
    return float((s0 - st).pow(2).sum())
