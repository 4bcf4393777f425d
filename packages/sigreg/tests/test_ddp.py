"""SIGReg under torch.distributed (2 gloo ranks on CPU): shared slices, global statistic."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from sigreg.sigreg_loss import SIGReg, draw_slices, sigreg


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        full = torch.randn(64, 8, generator=torch.Generator().manual_seed(0)) * 1.5 + 0.3
        local = full.chunk(world)[rank].clone().requires_grad_(True)
        a = draw_slices(8, 16, generator=torch.Generator().manual_seed(1))
        glob = sigreg(local, slices=a, global_batch=True)
        glob.backward()
        glob = glob.detach()
        reg = SIGReg("lejepa", num_slices=32, seed=5, global_batch=True)
        module_value = float(reg(local.detach()))
        torch.save(
            (
                rank,
                float(glob),
                float(sigreg(local.detach(), slices=a)),
                bool(torch.isfinite(local.grad).all() and local.grad.abs().sum() > 0),
                module_value,
            ),
            os.path.join(out_dir, f"rank{rank}.pt"),
        )
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_global_statistic_on_two_ranks_equals_full_batch_statistic(tmp_path):
    if not dist.is_available():
        pytest.skip("torch.distributed not available")
    port = 29500 + os.getpid() % 1000
    mp.spawn(_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True)
    rows = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    full = torch.randn(64, 8, generator=torch.Generator().manual_seed(0)) * 1.5 + 0.3
    a = draw_slices(8, 16, generator=torch.Generator().manual_seed(1))
    expected = float(sigreg(full, slices=a))
    # the seeded module draws the same slices on every rank (seed + step), so with the
    # global statistic both ranks see the full-batch value
    b = draw_slices(8, 32, generator=torch.Generator().manual_seed(5))
    expected_module = float(sigreg(full, preset="lejepa", num_slices=32, slices=b))
    for _, glob, _local, grad_ok, module_value in rows:
        assert module_value == pytest.approx(expected_module, rel=1e-5)
        assert glob == pytest.approx(expected, rel=1e-5)  # sums reduced before squaring
        assert grad_ok
    assert rows[0][2] != pytest.approx(expected, rel=1e-3)  # the local statistic differs
