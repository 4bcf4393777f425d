"""The real-model path on a tiny randomly initialised transformers LM (no download)."""

import importlib.util

import pytest
import torch
from hista.advantage_provider import (
    GroupMeanAdvantages,
    HistaAdvantages,
    NumcaAdvantages,
    RolloutGroup,
    make_provider,
    token_offsets,
)
from hista.cli import main
from hista.hista_knn import HistaEstimator
from hista.qwen_math import final_answer, load_math_problems, load_policy, sample_group
from icml26_shared.contract import assert_one_line_error

HAS_TRL = importlib.util.find_spec("trl") is not None
HAS_MV = importlib.util.find_spec("math_verify") is not None
CHARS = list("0123456789+=; ") + list("abcdefghijklmnopqrstuvwxyz\\{}$.,?")


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    for c in CHARS:
        vocab.setdefault(c, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tk.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def tiny_model(tokenizer, seed: int = 0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(cfg).eval()


EST = HistaEstimator(alpha=0.7, mean_window=1, min_interval=2, min_distance=0.05, k=4)


@pytest.fixture(scope="module")
def lm():
    tok = tiny_tokenizer()
    return tiny_model(tok), tok


def _group(lm, rewards=(1.0, 0.0, 1.0, 0.0)):
    model, tok = lm
    torch.manual_seed(0)
    prob = {"problem_id": "p", "prompt": "3+4=", "answer": "7"}
    g = sample_group(model, tok, prob, len(rewards), max_new_tokens=10, reward_fn=lambda c, a: 0.0)
    g.rewards = list(rewards)
    return g


def test_sample_group_spans_hidden(lm):
    g = _group(lm)
    for text, spans, h, s in zip(g.responses, g.offsets, g.hidden, g.response_starts, strict=True):
        assert spans[-1][1] == len(text)  # token spans tile the decoded text
        assert h.shape[0] - s == len(spans)
        assert h.shape[1] == 32


@pytest.mark.parametrize("prov", ["group", "numca", "hista"])
def test_providers_one_advantage_per_token(lm, prov):
    g = _group(lm)
    p = HistaAdvantages(EST) if prov == "hista" else make_provider(prov)
    adv = p(g)
    assert [len(a) for a in adv] == g.lengths
    assert all(torch.isfinite(a).all() for a in adv)


def test_group_provider_sums_to_zero(lm):
    g = _group(lm)
    first = torch.stack([a[0] for a in GroupMeanAdvantages()(g)])
    assert abs(float(first.sum())) < 1e-5


def test_numca_offsets_from_fast_tokenizer(lm):
    _, tok = lm
    text = "7 12 15;"
    offs = token_offsets(tok, text)
    assert offs == [(i, i + 1) for i in range(len(text))]
    prov = NumcaAdvantages(merge_threshold=1, update="after", at="end")
    g = RolloutGroup("q", [text, "8 12 16;"], [1.0, 0.0], [offs, offs])
    prov(g)  # first visit: root falls back to the group mean, then the table is updated
    assert prov.table.value("q", ["7"]) == 1.0 and prov.table.value("q", []) == 0.5
    adv = prov(g)
    std = float(torch.tensor([1.0, 0.0]).std()) + 1e-4
    # token 0 ("7") is in the root segment, V(root) = 0.5; from token 1 on the state is {7}
    # (then {7, 12}), both with V = 1, so the rest of this success has advantage 0
    assert torch.allclose(adv[0][1:], torch.zeros(7), atol=1e-6)
    assert torch.allclose(adv[0][:1], torch.full((1,), 0.5 / std))


def test_slow_tokenizer_rejected():
    class Slow:
        is_fast = False

    with pytest.raises(ValueError, match="fast tokenizer is required"):
        token_offsets(Slow(), "1 2")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"responses": [], "rewards": [], "offsets": []}, "empty group"),
        ({"responses": ["1"], "rewards": [1.0], "offsets": [[(0, 1)]]}, "group size 1"),
        ({"responses": ["1", "2"], "rewards": [1.0], "offsets": [[(0, 1)]] * 2}, "mismatched"),
        ({"responses": ["1", "2"], "rewards": [1.5, 0.0], "offsets": [[(0, 1)]] * 2}, "[0, 1]"),
        (
            {
                "responses": ["1", "2"],
                "rewards": [1.0, 0.0],
                "offsets": [[(0, 1)]] * 2,
                "hidden": [torch.zeros(2, 3)],
                "response_starts": [1],
            },
            "mismatched",
        ),
    ],
)
def test_rollout_group_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RolloutGroup("p", **kwargs)


def test_unknown_estimator_and_hidden_mismatch(lm):
    with pytest.raises(ValueError, match="unknown estimator"):
        make_provider("ppo")
    g = _group(lm)
    g.response_starts = [s + 1 for s in g.response_starts]
    with pytest.raises(ValueError, match="mismatched lengths"):
        HistaAdvantages(EST)(g)


def test_final_answer():
    assert final_answer("thus \\boxed{\\frac{3}{4}} done") == "\\frac{3}{4}"
    assert final_answer("5 + 6 = 11\n#### 1,100") == "1100"


def test_offline_loader_clear_error(monkeypatch):
    from icml26_shared import hub
    from icml26_shared.hub import HubUnavailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(HubUnavailableError, match="Qwen/Qwen2.5-0.5B-not-cached"):
            load_policy("Qwen/Qwen2.5-0.5B-not-cached")
        with pytest.raises(HubUnavailableError, match="openai/gsm8k"):
            load_math_problems("gsm8k", limit=1)
    finally:
        hub.hub_reachable.cache_clear()
    with pytest.raises(ValueError, match="unknown dataset"):
        load_math_problems("imagenet")


@pytest.mark.skipif(not HAS_MV, reason="math-verify (hista[bench]) not installed")
def test_cli_real_advantages_offline(monkeypatch, capsys):
    from icml26_shared import hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_reachable.cache_clear()
    try:
        code = main(["real-advantages", "--problems", "1"])
    finally:
        hub.hub_reachable.cache_clear()
    assert_one_line_error(capsys.readouterr().err, "not in the local Hugging Face cache", code)


def test_cli_real_advantages_bad_estimator(capsys):
    code = main(["real-advantages", "--estimator", "ppo"])
    assert_one_line_error(capsys.readouterr().err, "unknown estimator", code)


@pytest.mark.skipif(not HAS_MV, reason="math-verify (hista[bench]) not installed")
def test_math_verify_reward():
    from hista.qwen_math import math_verify_reward, trl_reward

    assert math_verify_reward("so the answer is $\\boxed{\\frac{1}{2}}$", "0.5") == 1.0
    assert math_verify_reward("the answer is $\\boxed{3}$", "4") == 0.0
    assert trl_reward(["$\\boxed{7}$", "$\\boxed{8}$"], ["7", "7"]) == [1.0, 0.0]


@pytest.mark.skipif(not HAS_TRL, reason="trl (hista[bench]) not installed")
@pytest.mark.parametrize(
    "advantage", [pytest.param("group", marks=pytest.mark.slow), "numca", "hista"]
)
def test_trl_grpo_trainer_adapter(lm, advantage, tmp_path):
    from datasets import Dataset
    from hista.trl_adapter import token_advantage_trainer
    from trl import GRPOConfig

    model, tok = lm
    model = tiny_model(tok, seed=1)
    rows = [{"prompt": f"{a}+{b}=", "problem_id": f"p{a}{b}"} for a in range(3) for b in range(3)]

    def parity(completions, **kw):  # mixed 0/1 rewards so groups carry signal
        return [float(len(c) % 2) for c in completions]

    kwargs = {"estimator": EST} if advantage == "hista" else {}
    cls = token_advantage_trainer(advantage, **kwargs)
    seen = []

    class Recording(cls):
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            seen.append(out)
            return out

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        max_steps=2,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        loss_type="dapo",
        learning_rate=1e-3,
        bf16=False,
        disable_tqdm=True,
        seed=0,
        temperature=1.0,
    )
    trainer = Recording(
        model=model,
        reward_funcs=parity,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
    )
    trainer.train()
    assert seen
    for out in seen:
        adv, mask = out["advantages"], out["completion_mask"]
        assert adv.shape == mask.shape  # per-token (B, T), not TRL's (B,)
        assert torch.isfinite(adv).all() and (adv[mask == 0] == 0).all()
    if advantage == "numca":
        assert trainer.advantage_provider.table.counts  # the table persisted across steps
