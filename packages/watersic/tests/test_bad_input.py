"""Bad input fails with a clear error naming the problem."""

import pytest
import torch
from watersic.gptq import gptq_quantize, huffman_gptq
from watersic.layer_quantizer import quantize_matrix
from watersic.second_moment import SecondMoment

W = torch.randn(8, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
S = torch.eye(4, dtype=torch.float64)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"W": torch.ones(4)}, "must be 2-D"),
        ({"W": torch.full((8, 4), float("nan"))}, "NaN or Inf"),
        ({"sigma": torch.eye(3)}, "expected 4x4"),
        ({"sigma": torch.ones(4, 3)}, "square"),
        ({"sigma": torch.eye(4) + torch.triu(torch.ones(4, 4), 1)}, "not symmetric"),
        ({"sigma": torch.eye(4) * float("inf")}, "NaN or Inf"),
        ({"rate": 0.0}, "out of range"),
        ({"rate": 17.0}, "out of range"),
        ({"rate": float("nan")}, "NaN"),
        ({"rate": "lots"}, "number of bits"),
        ({"accounting": "huffman"}, "unknown accounting"),
        ({"sigma_cross": torch.eye(3)}, "sigma_cross must have shape"),
    ],
)
def test_quantize_matrix_rejects(kwargs, message):
    args = {"W": W, "sigma": S, "rate": 3.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        quantize_matrix(args.pop("W"), args.pop("sigma"), **args)


def test_cholesky_failure_suggests_more_damping():
    indefinite = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match="increase damping"):
        quantize_matrix(torch.randn(4, 2, dtype=torch.float64), indefinite, rate=3.0, damping=0.0)


def test_all_dead_columns():
    with pytest.raises(ValueError, match="all input columns are dead"):
        quantize_matrix(W, torch.zeros(4, 4), rate=3.0)


def test_baselines_reject_bad_bits_and_rate():
    with pytest.raises(ValueError, match="bits must be an integer"):
        gptq_quantize(W, S, bits=2.5)
    with pytest.raises(ValueError, match="out of range"):
        huffman_gptq(W, S, rate=-1.0)


def test_few_calibration_tokens_warn():
    acc = SecondMoment(16)
    acc.update(torch.randn(5, 16))
    with pytest.warns(UserWarning, match="rank-deficient"):
        _ = acc.sigma


def test_half_precision_sigma_warns():
    with pytest.warns(UserWarning, match="casting to float64"):
        quantize_matrix(torch.randn(64, 4, dtype=torch.float64), S.half(), rate=6.0)
