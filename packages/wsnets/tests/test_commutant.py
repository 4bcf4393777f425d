"""The DWS / NP layers span exactly the commutant computed numerically by SVD."""

import pytest
import torch
from wsnets.commutant import commutant_dim, invariant_dim, layer_matrix
from wsnets.equivariant_linear import EquivariantLinear


@pytest.mark.parametrize("arch", [[2, 3, 3, 1], [2, 3, 4, 2], [3, 2, 2]])
def test_dws_layer_spans_the_hidden_neuron_commutant(arch):
    layer = EquivariantLinear(arch, 1, 1)
    dim = commutant_dim(arch)
    assert layer.n_basis() == dim
    assert int(torch.linalg.matrix_rank(layer_matrix(layer))) == dim  # independent + complete
    assert layer.n_bias_basis() == invariant_dim(arch)


def test_np_layer_spans_the_all_neuron_commutant():
    arch = [2, 3, 4, 2]
    layer = EquivariantLinear(arch, 1, 1, fixed_labels=())
    dim = commutant_dim(arch, ())
    assert layer.n_basis() == dim
    assert int(torch.linalg.matrix_rank(layer_matrix(layer))) == dim
    assert dim < commutant_dim(arch)  # the larger group leaves fewer maps


def test_every_layer_matrix_commutes_with_the_action():
    torch.manual_seed(0)
    from wsnets.commutant import representation_generators

    arch = [2, 3, 3, 1]
    layer = EquivariantLinear(arch, 1, 1)
    M = layer_matrix(layer)
    n = int(M.shape[0] ** 0.5)
    T = (M @ torch.randn(M.shape[1], dtype=torch.float64)).reshape(n, n)
    for P in representation_generators(arch):
        assert torch.allclose(P.double() @ T, T @ P.double(), atol=1e-10)
