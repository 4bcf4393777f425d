"""The anchor our SIGReg is checked against: ``lightly``'s LeJEPA SIGReg (``sigreg[bench]``).

``lightly.loss.lejepa_loss.SIGReg`` computes the canonical Epps-Pulley form (17 knots on
[0, 3], trapezoid x Gaussian weight, x N, 1024 slices), i.e. our ``lejepa`` preset
(:func:`sigreg.sigreg_loss.sigreg`). Both draw their slices from torch's global generator, so
seeding it identically before each call gives identical slices and the two values must agree
to float rounding -> :func:`lightly_agreement_table`.
"""

from __future__ import annotations

from icml26_shared.results import Table


def lightly_agreement_table(n: int = 512, dim: int = 64, seed: int = 0) -> Table | None:
    """Our ``lejepa`` statistic and ``lightly``'s on the same inputs and slices.

    Inputs: N(0, I), N(0, 4 I), N(1, I) and a rank-2 collapse, each ``(n, dim)``. Returns
    ``None`` when ``lightly`` is not installed.
    """
    try:
        from lightly.loss.lejepa_loss import SIGReg as LightlySIGReg
    except ImportError:
        return None
    import torch

    from sigreg.sigreg_loss import sigreg

    table = Table(
        "Anchor: our lejepa statistic vs lightly's SIGReg on identical slices",
        ["input", "ours (lejepa)", "lightly", "abs diff"],
        notes=f"N={n}, D={dim}, 1024 slices drawn from the same torch seed by both implementations.",
    )
    g = torch.Generator().manual_seed(seed)
    inputs = {
        "N(0, I)": torch.randn(n, dim, generator=g),
        "N(0, 4 I)": 2 * torch.randn(n, dim, generator=g),
        "N(1, I)": 1 + torch.randn(n, dim, generator=g),
        "rank-2 collapse": torch.randn(n, 2, generator=g) @ torch.randn(2, dim, generator=g),
    }
    ref = LightlySIGReg()
    for name, x in inputs.items():
        torch.manual_seed(seed + 1)
        theirs = float(ref(x))
        torch.manual_seed(seed + 1)
        ours = float(sigreg(x, preset="lejepa"))
        table.add_row(
            input=name, **{"ours (lejepa)": ours, "lightly": theirs, "abs diff": abs(ours - theirs)}
        )
    return table
