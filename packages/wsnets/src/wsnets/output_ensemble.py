"""The output-ensemble modification (the paper's capacity increase for function-space operators).

An equivariant editor ``E`` maps ``v`` to ``F`` edit channels ``Delta_1..Delta_F``. Member
``f`` is the residual edit ``v'_f = v + s (.) Delta_f``, with one learned scale ``s`` per
block (initialised to ``1e-2``, as in the authors' experiment), and the edited *function* is

    g(x) = (1/F) sum_f f_{v'_f}(x),

i.e. one MLP of width ``F d_l`` with block-diagonal weights. Universality of function-space
operators is capped by what the output architecture can represent; averaging ``F`` members
raises that cap, while :func:`~wsnets.architectures.build_editor` shrinks the meta-network
so that its parameter count stays at or below the ``F = 1`` budget. With ``F = 1`` the
ensemble is exactly the plain residual editor.
"""

from __future__ import annotations

import torch
from torch import nn

from wsnets.weight_space import WeightSpace


class OutputEnsemble(nn.Module):
    """Residual edits ``v + s * Delta_f`` and the mean rendering of the ``F`` members.

    Parameters
    ----------
    n_layers:
        ``L`` of the edited MLPs (one scale per weight and per bias block).
    F:
        Number of ensemble members (>= 1).
    init_scale:
        Initial value of every scale ``s``.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> v = WeightSpace.random([2, 4, 1], batch=3)
    >>> ens = OutputEnsemble(n_layers=2, F=2)
    >>> edited = ens.edit(v, WeightSpace.random([2, 4, 1], batch=3, channels=2))
    >>> edited.channels, tuple(ens.render(edited, torch.rand(5, 2), "relu").shape)
    (2, (3, 5, 1))
    """

    def __init__(self, n_layers: int, F: int = 1, init_scale: float = 1e-2) -> None:
        super().__init__()
        if F < 1:
            raise ValueError(f"the number of ensemble members F must be >= 1, got {F}")
        self.F = F
        self.scales = nn.Parameter(torch.full((2 * n_layers,), float(init_scale)))

    def edit(self, v: WeightSpace, delta: WeightSpace) -> WeightSpace:
        """``v`` (1 channel) plus the scaled edits (``F`` channels) -> ``F`` edited networks."""
        if delta.channels != self.F:
            raise ValueError(f"edits have {delta.channels} channels, expected F={self.F}")
        if v.channels != 1:
            raise ValueError("the edited networks must have one channel")
        s = self.scales
        ws = [
            w + s[2 * li] * d
            for li, (w, d) in enumerate(zip(v.weights, delta.weights, strict=True))
        ]
        bs = [
            b + s[2 * li + 1] * d
            for li, (b, d) in enumerate(zip(v.biases, delta.biases, strict=True))
        ]
        return WeightSpace(ws, bs)

    @staticmethod
    def render(
        edited: WeightSpace,
        coords: torch.Tensor,
        activation: str = "sine",
        w0: float = 30.0,
        offset: float = 0.0,
    ) -> torch.Tensor:
        """``g(x) = mean_f f_{v'_f}(x)``: ``(B, N, d_L)``."""
        return edited.render(coords, activation, w0, offset).mean(dim=-1)
