"""The commutant of S_d x S_C: closed form vs SVD, Reynolds projection vs group average."""

import numpy as np
import pytest
import torch
from symicl import symmetry as sym

SIZES = [(1, 2), (1, 3), (2, 2), (3, 2), (4, 3), (5, 5)]


def _perm_matrix(perm: torch.Tensor) -> torch.Tensor:
    return torch.eye(len(perm), dtype=torch.float64)[perm]


@pytest.mark.parametrize(("d", "c"), SIZES)
def test_basis_dimension_equals_svd_null_space_count(d, c):
    basis = sym.commutant_basis(d, c)
    expected = 6 if d >= 2 else 5  # d = 1: I_1 == 1 1^T
    assert basis.shape == (expected, d + c, d + c)
    assert sym.commutant_dimension_svd(d, c) == expected
    flat = basis.reshape(len(basis), -1)
    assert torch.linalg.matrix_rank(flat) == expected  # independent


@pytest.mark.parametrize(("d", "c"), SIZES)
def test_basis_commutes_with_random_group_elements(d, c):
    gen = torch.Generator().manual_seed(0)
    for perm in sym.random_block_permutation(d, c, 5, generator=gen):
        p = _perm_matrix(perm)
        for m in sym.commutant_basis(d, c):
            assert torch.allclose(p @ m, m @ p)


def test_generic_matrix_is_not_in_the_commutant():
    m = torch.randn(7, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert sym.defect(m, 4, 3) > 0.5
    assert sym.defect(sym.project(m, 4, 3), 4, 3) < 1e-12


@pytest.mark.parametrize(("d", "c"), SIZES)
def test_projection_is_idempotent_and_fixes_equivariant_maps(d, c):
    gen = torch.Generator().manual_seed(2)
    m = torch.randn(d + c, d + c, generator=gen, dtype=torch.float64)
    p = sym.project(m, d, c)
    assert torch.allclose(sym.project(p, d, c), p, atol=1e-12)
    basis = sym.commutant_basis(d, c)
    coef = torch.randn(len(basis), generator=gen, dtype=torch.float64)
    inside = torch.einsum("k,kij->ij", coef, basis)
    assert torch.allclose(sym.project(inside, d, c), inside, atol=1e-12)
    # orthogonal projection: the residual is orthogonal to the whole commutant
    resid = m - p
    assert torch.allclose(
        torch.einsum("ij,kij->k", resid, basis),
        torch.zeros(len(basis), dtype=torch.float64),
        atol=1e-12,
    )


@pytest.mark.parametrize(("d", "c"), [(1, 3), (3, 2), (4, 3)])
def test_projection_equals_monte_carlo_group_average(d, c):
    m = torch.randn(d + c, d + c, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    mc = sym.group_average(m, d, c, n_samples=20000, seed=0)
    err = float((mc - sym.project(m, d, c)).norm() / m.norm())
    assert err < 1e-2  # Monte-Carlo error ~ 1/sqrt(20000) per entry
    # and the few-sample average is visibly worse: the test can tell the two apart
    few = sym.group_average(m, d, c, n_samples=3, seed=0)
    assert float((few - sym.project(m, d, c)).norm() / m.norm()) > err


def test_coefficients_round_trip():
    coef = torch.tensor([0.5, -1.0, 2.0, 0.25, 3.0, -0.75], dtype=torch.float64)
    m = sym.from_coefficients(coef, 4, 3)
    assert torch.allclose(sym.coefficients(m, 4, 3), coef)
    assert m.shape == (7, 7)


def test_bad_sizes():
    with pytest.raises(ValueError, match="C must be"):
        sym.commutant_basis(3, 1)
    with pytest.raises(ValueError, match="matrix must be"):
        sym.project(torch.zeros(4, 4), 3, 2)
    assert np.isclose(sym.defect(torch.zeros(5, 5), 3, 2), 0.0)
