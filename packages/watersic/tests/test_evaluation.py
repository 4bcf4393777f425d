"""Evaluation metrics: padded positions do not count in the per-layer output MSE."""

import copy

import torch
from watersic.evaluation import layer_relative_mse


def _tiny_bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16,
    )  # fmt: skip
    return BertModel(cfg).eval()


def test_layer_mse_ignores_padding():
    # Regression: the MiniLM table scored the layers on padded positions too (their inputs
    # come from no real token). A padded batch must give the MSE of its real tokens, i.e. the
    # same as the sentences run one by one without padding.
    ref = _tiny_bert()
    q = copy.deepcopy(ref)
    with torch.no_grad():
        for p in q.encoder.layer[0].intermediate.dense.parameters():
            p.add_(0.05 * torch.randn_like(p))
    names = ["encoder.layer.0.intermediate.dense", "encoder.layer.0.output.dense"]
    a = torch.tensor([[1, 5, 7, 9, 11, 2]])
    b = torch.tensor([[1, 6, 2]])
    padded = {
        "input_ids": torch.tensor([[1, 5, 7, 9, 11, 2], [1, 6, 2, 0, 0, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]]),
    }
    one_by_one = layer_relative_mse(
        ref, q, [{"input_ids": a, "attention_mask": torch.ones_like(a)},
                 {"input_ids": b, "attention_mask": torch.ones_like(b)}], names,
    )  # fmt: skip
    got = layer_relative_mse(ref, q, [padded], names)
    for n in names:
        assert abs(got[n] - one_by_one[n]) <= 1e-4 * one_by_one[n]
