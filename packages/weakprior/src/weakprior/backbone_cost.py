"""What the diffusers ``UNet2DModel`` prior costs against the hand-written ``TinyUNet``.

:func:`backbone_cost_table` measures, in one process, the CPU time of the two backbones of
:class:`~weakprior.lightning.DDPMPriorModule` on the calls the experiment makes: one ``G(z)``
forward + backward (the 3-step DDIM generator of the solvers) at the per-target and the stacked
batch sizes, and one prior-training step. Process CPU time (``time.process_time``), the two
backbones interleaved, median of ``repeats`` after a warm-up round; untrained weights (the cost
does not depend on them).
"""

from __future__ import annotations

import time

import torch
from icml26_shared.results import Table


def backbone_cost_table(
    image_size: int, width: int, n_images: int, n_masked: int, batch_size: int,
    lr: float = 2e-3, repeats: int = 5,
) -> Table:  # fmt: skip
    """CPU milliseconds per call of the UNet2DModel and TinyUNet backbones, and their ratio.

    Parameters
    ----------
    image_size, width:
        Geometry of both backbones (:class:`~weakprior.lightning.DDPMPriorModule`).
    n_images:
        Images per target: the batch of one ``G(z)`` solve.
    n_masked:
        Inpainting problems stacked per target: the stacked batch is ``n_images * n_masked``.
    batch_size:
        Batch of the prior-training step (Adam at ``lr``, the module's eps-MSE loss).
    repeats:
        Timed rounds (median reported).
    """
    from .ddim import FewStepDDIM
    from .lightning import DDPMPriorModule

    table = Table(
        f"Cost: diffusers UNet2DModel vs hand-written TinyUNet (CPU ms, median of {repeats}, "
        "one thread)",
        ["call", "UNet2DModel", "TinyUNet", "ratio"],
        notes=(
            "Process CPU time, the two backbones interleaved in this run. G(z) = the 3-step DDIM "
            f"generator, forward + backward to z, on {image_size} px images; the stacked batch "
            "holds every inpainting problem of a target. Parameters: "
        ),
    )
    nets = {b: DDPMPriorModule(image_size, width=width, backbone=b) for b in ("diffusers", "tiny")}
    params = {b: sum(p.numel() for p in m.parameters()) for b, m in nets.items()}
    table.notes += f"UNet2DModel {params['diffusers']:,}, TinyUNet {params['tiny']:,}."

    def solver_call(m, b):
        z = torch.randn(b, 1, image_size, image_size, requires_grad=True)
        return lambda: FewStepDDIM(m.eps)(z).sum().backward()

    def train_call(m):
        opt = torch.optim.Adam(m.parameters(), lr=lr)
        x = torch.rand(batch_size, 1, image_size, image_size) * 2 - 1

        def step():
            opt.zero_grad()
            m.eps_loss(x).backward()
            opt.step()

        return step

    calls = {
        f"G(z) fwd+bwd, batch {n_images}": lambda m: solver_call(m, n_images),
        f"G(z) fwd+bwd, stacked batch {n_images * n_masked}": lambda m: solver_call(
            m, n_images * n_masked
        ),
        f"prior training step, batch {batch_size}": train_call,
    }
    for name, make in calls.items():
        fns = {b: make(m) for b, m in nets.items()}
        times: dict[str, list[float]] = {b: [] for b in fns}
        for rep in range(repeats + 1):
            for b, fn in fns.items():
                t0 = time.process_time()
                fn()
                if rep:  # the first round is the warm-up
                    times[b].append(1e3 * (time.process_time() - t0))
        med = {b: sorted(v)[len(v) // 2] for b, v in times.items()}
        table.add_row(call=name, UNet2DModel=round(med["diffusers"], 1),
                      TinyUNet=round(med["tiny"], 1), ratio=round(med["diffusers"] / med["tiny"], 2))  # fmt: skip
    return table
