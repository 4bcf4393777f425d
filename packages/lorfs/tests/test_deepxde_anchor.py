"""The DeepXDE anchor solves the same equation as the other methods."""

import pytest
import torch
from lorfs import deepxde_anchor
from lorfs.pinn import mlp, pde_residual
from lorfs.problems import build_problem

needs_deepxde = pytest.mark.skipif(
    not deepxde_anchor.deepxde_available(), reason="deepxde not installed"
)


@needs_deepxde
@pytest.mark.parametrize(
    "name, params",
    [("convection", {"beta": 30}), ("reaction", {"rho": 5}), ("allen_cahn", {})],
)
def test_residual_equals_the_pinn_residual(name, params):
    """DeepXDE's pde(z, u) on (x, t) inputs equals lorfs' autograd residual on (t, x)."""
    dde = deepxde_anchor.import_deepxde()
    problem = build_problem(name, params)
    torch.manual_seed(0)
    net_tx = mlp(2, 16, 2).double()
    z_tx = torch.rand(64, 2, dtype=torch.float64) * torch.tensor([1.0, 6.283])
    want = pde_residual(problem, net_tx, z_tx, torch.zeros(64, dtype=torch.float64))

    z_xt = z_tx[:, [1, 0]].clone().requires_grad_(True)
    u = net_tx(z_xt[:, [1, 0]])
    got = deepxde_anchor.deepxde_residual(problem, dde)(z_xt, u)
    dde.grad.clear()
    assert got.shape == (64, 1)
    torch.testing.assert_close(got.squeeze(1), want.detach(), rtol=1e-10, atol=1e-10)


@needs_deepxde
def test_low_beta_convection_is_learned_and_default_dtype_kept():
    before = torch.get_default_dtype()
    run = deepxde_anchor.train_deepxde(
        "convection", {"beta": 1}, adam_steps=100, lbfgs_steps=1, lbfgs_iter=20,
        n_collocation=200, width=20, depth=2, n_test=1000,
    )  # fmt: skip
    assert torch.get_default_dtype() == before
    assert run.method == "DeepXDE" and run.n_params == 2 * 20 + 20 + 20 * 20 + 20 + 20 + 1
    assert run.error < 0.2, run


def test_out_of_scope_problem_is_a_clear_error():
    with pytest.raises(ValueError, match="1-D periodic time-dependent"):
        deepxde_anchor.check_scope(build_problem("torus_poisson", {"d": 3}))


def test_missing_deepxde_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(deepxde_anchor, "deepxde_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"lorfs\[bench\]"):
        deepxde_anchor.import_deepxde()
