"""The stationary-diffusion (KDS) anchor: closed form, zero at the truth, and a working fit."""

import numpy as np
import pytest
import torch
from ou_ident.ou_process import OUParams
from ou_ident.recovery_metrics import scale_aligned_rel_error
from ou_ident.stationary_diffusion import fit_stationary_diffusion, kds_loss, kds_pair_term
from ou_ident.synthetic import make_problem
from torch.func import grad, hessian

F64 = torch.float64


def _random_sde(d, seed):
    g = torch.Generator().manual_seed(seed)
    A = -torch.eye(d, dtype=F64) + 0.3 * torch.randn(d, d, generator=g, dtype=F64)
    b = torch.randn(d, generator=g, dtype=F64)
    s = torch.rand(d, generator=g, dtype=F64) + 0.2
    return A, b, s


def test_closed_form_equals_autograd_double_generator():
    d, h = 3, 1.3
    A, b, s = _random_sde(d, 0)

    def k(x, y):
        return torch.exp(-((x - y) ** 2).sum() / (2 * h * h))

    def generator(g, arg):
        def out(x, y):
            z = (x, y)[arg]
            lap = torch.diagonal(hessian(g, arg)(x, y))
            return (A @ z + b) @ grad(g, arg)(x, y) + 0.5 * (s * lap).sum()

        return out

    term = generator(generator(k, 0), 1)
    x, y = torch.randn(6, d, dtype=F64), torch.randn(6, d, dtype=F64)
    want = torch.stack([term(x[i], y[i]) for i in range(6)])
    torch.testing.assert_close(kds_pair_term(x, y, A, b, s, h), want, rtol=1e-10, atol=1e-12)
    # the double generator is symmetric in (x, y)
    torch.testing.assert_close(kds_pair_term(y, x, A, b, s, h), want, rtol=1e-10, atol=1e-12)


def test_kds_vanishes_at_the_stationary_law_only():
    A, b, s = _random_sde(3, 1)
    theta = OUParams(A.numpy(), b.numpy(), s.numpy())
    X = torch.as_tensor(theta.sample(1200, seed=2))
    at_truth = float(kds_loss(X, A, b, s, 2.0, "u-statistic"))
    wrong = float(kds_loss(X, 0.5 * A - 0.5 * torch.eye(3, dtype=F64), b, s, 2.0, "u-statistic"))
    assert abs(at_truth) < 0.1 * wrong
    # rescaling time, (cA, cb, cS), keeps the stationary law; the generator is linear in
    # (A, b, S), so the KDS, quadratic in it, scales by exactly c^2
    scaled = float(kds_loss(X, 3 * A, 3 * b, 3 * s, 2.0, "u-statistic"))
    assert scaled == pytest.approx(9 * at_truth, rel=1e-9)


def test_fit_moves_towards_the_planted_drift():
    prob = make_problem(4, "shift", seed=0)
    data = prob.moments(None)
    short = fit_stationary_diffusion(data, steps=20, n_max=1000)
    long = fit_stationary_diffusion(data, steps=1500, n_max=1000, learning_rate=1e-2)
    assert np.allclose(np.diag(long.A), -1.0)
    assert long.params.is_hurwitz
    err = [scale_aligned_rel_error(f.A, prob.params.A) for f in (short, long)]
    assert err[1] < 0.8 * err[0], err
    assert np.mean(long.losses[-100:]) < np.mean(long.losses[:100])


def test_bad_arguments():
    data = make_problem(3, "shift", seed=0).moments(None)
    with pytest.raises(ValueError, match="steps"):
        fit_stationary_diffusion(data, steps=0)
    with pytest.raises(ValueError, match="bandwidth"):
        fit_stationary_diffusion(data, bandwidth=0.0)
    with pytest.raises(ValueError, match="unknown KDS estimator"):
        kds_loss(torch.zeros(4, 3, dtype=F64), *_random_sde(3, 0), estimator="v")


def test_stadion_bench_missing_interpreter_is_one_line_exit_2(tmp_path):
    """The stadion side-by-side bench refuses a missing interpreter with one line, exit 2."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "bench" / "stadion_side_by_side.py"
    res = subprocess.run(
        [sys.executable, str(script), "--python", str(tmp_path / "nope" / "python"),
         "--out", str(tmp_path / "out"), "--seeds", "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "no interpreter" in lines[0]
