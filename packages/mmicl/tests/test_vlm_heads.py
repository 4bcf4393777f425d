"""Pretrained-VLM head analysis on a tiny randomly initialised Qwen2.5-VL (no download)."""

import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from mmicl.cli import main

pytest.importorskip("transformers")
from mmicl import vlm_heads as vh  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    model = vh.tiny_qwen2_5_vl(seed=0)
    items, labels = vh.default_token_pools(model)
    prompts = vh.induction_prompts(16, 8, 2, items, labels, seed=0)
    return model, items, labels, prompts


def test_prompts_are_bursty_and_query_in_context():
    items, labels = torch.arange(100, 140), torch.arange(200, 210)
    p = vh.induction_prompts(32, 8, 2, items, labels, seed=1)
    ids = p["input_ids"]
    assert ids.shape == (32, 17)
    for s in range(32):
        ctx_items, ctx_labels = ids[s, 0:16:2], ids[s, 1:16:2]
        q = ids[s, -1]
        assert (ctx_items == q).sum() == 2  # the query item appears B times
        paired = ctx_labels[ctx_items == q]
        assert torch.all(paired == labels[p["target"][s]])  # its label is the target
        assert torch.equal(p["match_label"][s, 1:16:2], ctx_labels == labels[p["target"][s]])
    with pytest.raises(ValueError, match="multiple of the burst size"):
        vh.induction_prompts(2, 7, 2, items, labels)


def test_layers_and_rank_heads(tiny):
    model, _, _, prompts = tiny
    layers = vh.attention_layers(model)
    assert len(layers) == 2 and all(v.num_heads == 4 for v in layers)
    ranks = vh.rank_heads(model, prompts)
    assert {(r["layer"], r["head"]) for r in ranks} == {(a, b) for a in range(2) for b in range(4)}
    assert all(-1 <= r["ih"] <= 1 and 0 <= r["prev"] <= 1 for r in ranks)


def test_knockout_hook_changes_output_and_is_removed(tiny):
    model, _, _, prompts = tiny
    ids = prompts["input_ids"][:2]
    with torch.no_grad():
        base = model(input_ids=ids).logits
        with vh.knockout_heads(model, [(0, 1)]):
            knocked = model(input_ids=ids).logits
        again = model(input_ids=ids).logits
    assert not torch.allclose(base, knocked)
    assert torch.allclose(base, again)
    with pytest.raises(ValueError, match="no head"), vh.knockout_heads(model, [(5, 0)]):
        pass


def test_knockout_all_heads_removes_context_dependence(tiny):
    model, _, _, prompts = tiny
    ids = prompts["input_ids"][:4].clone()
    other = ids.clone()
    other[:, :-1] = ids[:, :-1].flip(0)  # different contexts, same query tokens
    everything = [(a, b) for a in range(2) for b in range(4)]
    with torch.no_grad(), vh.knockout_heads(model, everything):
        a = model(input_ids=ids).logits[:, -1]
        b = model(input_ids=other).logits[:, -1]
    assert torch.allclose(a, b, atol=1e-5)


def test_knockout_table_rows(tiny):
    model, _, labels, prompts = tiny
    table = vh.vlm_knockout_table(model, prompts, labels, top_k=1, seed=0)
    assert [r["knockout"].split()[0] for r in table] == ["none", "top-1", "1", "top-1"]
    assert all(0 <= r["ICL acc"] <= 1 for r in table)
    assert table[1]["heads"] != table[2]["heads"]


def test_cli_tiny_runs(capsys):
    assert main(["vlm-heads", "--tiny", "--prompts", "8"]) == 0
    assert "ICL acc" in capsys.readouterr().out


def test_offline_missing_model_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    vh_hub = pytest.importorskip("icml26_shared.hub")
    vh_hub.hub_reachable.cache_clear()
    code = main(["vlm-heads", "--model", "no-such-org/Qwen2.5-VL-none"])
    assert_one_line_error(capsys.readouterr().err, "no-such-org/Qwen2.5-VL-none", code)
    vh_hub.hub_reachable.cache_clear()
