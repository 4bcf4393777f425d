import pytest
import torch
from icml26_shared.contract import assert_same_outputs, check_contract


def test_contract_passes_on_tiny_module(tiny, tmp_path):
    model_cls, data_cls = tiny
    result = check_contract(model_cls, data_cls, tmp_path)
    assert result.output.shape == (16,)  # (B,)
    assert result.checkpoint.exists()


def test_contract_catches_unsaved_state(tiny, tmp_path):
    model_cls, data_cls = tiny

    class Forgetful(model_cls):
        """Keeps a learned offset outside the state dict: lost by a checkpoint."""

        def __init__(self):
            super().__init__()
            self.offset = 0.0

        def on_train_batch_end(self, *args):
            self.offset += 1.0

        def forward(self, x):
            return super().forward(x) + self.offset

    with pytest.raises(AssertionError, match="checkpoint"):
        check_contract(Forgetful, data_cls, tmp_path)


def test_contract_catches_unseeded_randomness(tiny, tmp_path):
    model_cls, data_cls = tiny

    class Noisy(model_cls):
        def forward(self, x):
            return super().forward(x) + torch.rand(
                x.shape[0], generator=torch.Generator().manual_seed(torch.seed())
            )

    with pytest.raises(AssertionError, match="same seed"):
        check_contract(Noisy, data_cls, tmp_path)


def test_contract_requires_lightning_objects(tiny, tmp_path):
    _, data_cls = tiny
    with pytest.raises(AssertionError, match="not a lightning"):
        check_contract(lambda: torch.nn.Linear(3, 1), data_cls, tmp_path)


def test_assert_same_outputs_nested():
    a = {"x": torch.ones(2), "y": (1.0, torch.zeros(1, dtype=torch.long))}
    assert_same_outputs(
        a, {"x": torch.ones(2), "y": (1.0, torch.zeros(1, dtype=torch.long))}, "same"
    )
    with pytest.raises(AssertionError, match="differs"):
        assert_same_outputs(
            a, {"x": torch.ones(2) * 2, "y": (1.0, torch.zeros(1, dtype=torch.long))}, "d"
        )
    with pytest.raises(AssertionError, match="shape"):
        assert_same_outputs(torch.ones(2), torch.ones(3), "s")


def test_assert_one_line_error():
    from icml26_shared.contract import assert_one_line_error

    assert_one_line_error("pkg: error: bad rank\n", "bad rank", 2)
    for stderr, code in (("Traceback (most recent call last):\n x", 2),
                         ("pkg: error: one\nmore", 2), ("pkg: error: bad rank", 1),
                         ("pkg: error: other", 2)):  # fmt: skip
        with pytest.raises(AssertionError):
            assert_one_line_error(stderr, "bad rank", code)
