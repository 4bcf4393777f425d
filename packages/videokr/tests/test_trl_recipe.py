"""The TRL launcher for real models: paper settings, reward parity, frames, offline error, one step."""

import importlib.util

import numpy as np
import pytest
from videokr.microworld import make_microworld
from videokr.rewards import compute_score

pytestmark = pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl not installed")

OUTS = [
    "<think>a</think><answer>B</answer>",
    "<think>a</think><answer>C</answer>",
    "<answer>B</answer>",
    "B",
    "<think>a</think><answer>A</answer><answer>B</answer>",
]


def test_configs_carry_the_papers_settings(tmp_path):
    from videokr.trl_recipe import grpo_config, sft_config

    g = grpo_config(tmp_path, bf16=False, use_cpu=True)
    assert (g.num_generations, g.beta, g.epsilon, g.learning_rate) == (8, 0.01, 0.2, 5e-6)
    assert g.scale_rewards == "group" and g.reward_weights == [0.9, 0.1]
    s = sft_config(tmp_path, bf16=False, use_cpu=True)
    warmup = getattr(s, "warmup_ratio", None) or s.warmup_steps  # transformers 5: a float ratio
    assert (s.learning_rate, warmup, s.num_train_epochs) == (1e-5, 0.02, 1)
    assert s.lr_scheduler_type == "cosine"
    assert grpo_config(tmp_path, bf16=False, use_cpu=True, beta=0.0).beta == 0.0


def test_weighted_trl_rewards_equal_compute_score():
    from videokr.trl_recipe import REWARD_WEIGHTS, accuracy_reward, format_reward

    sols = ["<answer>B</answer>"] * len(OUTS)
    acc, fmt = accuracy_reward(OUTS, solution=sols), format_reward(OUTS)
    w_acc, w_fmt = REWARD_WEIGHTS
    for o, a, f in zip(OUTS, acc, fmt, strict=True):
        assert w_acc * a + w_fmt * f == pytest.approx(compute_score(o, "<answer>B</answer>"))
    chat = [[{"role": "assistant", "content": o}] for o in OUTS]
    assert accuracy_reward(chat, solution=sols) == acc and format_reward(chat) == fmt


def test_frames_sampled_and_missing_video_named(tmp_path, monkeypatch):
    from videokr.trl_recipe import load_frames, to_trl_dataset

    w = make_microworld(6, seed=0, root=tmp_path)
    rec = w.eval[0]
    frames = load_frames(rec, tmp_path, max_frames=4)
    assert len(frames) == 4 and frames[0].size == (16, 16) and frames[0].mode == "RGB"
    assert len(load_frames(rec, tmp_path, max_frames=100)) == 7  # never more than the clip has
    ds = to_trl_dataset(w.eval[:2], "grpo", tmp_path, max_frames=3)
    assert set(ds.column_names) == {"id", "prompt", "images", "solution", "problem_type"}
    assert len(ds[0]["images"]) == 3 and ds[0]["prompt"][0]["role"] == "user"
    monkeypatch.delenv("VIDEOKR_VIDEO_ROOT", raising=False)
    with pytest.raises(FileNotFoundError, match="VIDEOKR_VIDEO_ROOT"):
        load_frames({**rec, "video_path": "videos/none.npy"}, tmp_path)


def test_offline_model_error_names_model(monkeypatch, tmp_path):
    from icml26_shared import hub
    from videokr.trl_recipe import launch

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    hub.hub_reachable.cache_clear()
    try:
        with pytest.raises(hub.HubUnavailableError, match="Qwen/Qwen2.5-VL-7B-Instruct"):
            launch("grpo", "Qwen/Qwen2.5-VL-7B-Instruct", [], tmp_path / "o")
    finally:
        hub.hub_reachable.cache_clear()


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    """A random 1-layer Llama with the micro-world word-level tokenizer, saved like a Hub model."""
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from videokr.tiny_video_lm import build_tokenizer

    path = tmp_path_factory.mktemp("tiny-lm")
    tok = PreTrainedTokenizerFast(tokenizer_object=build_tokenizer(), pad_token="[PAD]",
                                  unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]")  # fmt: skip
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      pad_token_id=0, bos_token_id=2, eos_token_id=3)  # fmt: skip
    LlamaForCausalLM(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


CPU = {"bf16": False, "use_cpu": True, "max_steps": 1, "save_strategy": "no", "logging_steps": 1}


@pytest.mark.slow  # importing TRL's trainers and two tiny trainings: ~10 s CPU
def test_launch_sft_then_grpo_one_step_each(tiny_lm, tmp_path):
    from videokr.trl_recipe import launch

    w = make_microworld(6, seed=0)
    recs = w.genuine(w.train)[:8]
    sft = launch("sft", str(tiny_lm), recs, tmp_path / "sft", with_video=False,
                 per_device_train_batch_size=4, max_length=128, **CPU)  # fmt: skip
    assert np.isfinite(sft.state.log_history[-1]["train_loss"])
    grpo = launch("grpo", str(tmp_path / "sft"), recs, tmp_path / "grpo", with_video=False,
                  per_device_train_batch_size=4, num_generations=2, steps_per_generation=1,
                  max_completion_length=6, **CPU)  # fmt: skip
    logs = grpo.state.log_history[0]
    assert "rewards/accuracy_reward/mean" in logs and "rewards/format_reward/mean" in logs
    assert 0.0 <= logs["reward"] <= 1.0 and logs["kl"] >= 0.0


def test_cli_trl_launch_errors_are_one_line(tmp_path, capsys, monkeypatch):
    from icml26_shared import hub
    from icml26_shared.contract import assert_one_line_error
    from videokr.cli import main
    from videokr.corpus import write_jsonl

    w = make_microworld(4, seed=0, root=tmp_path)
    corpus = write_jsonl(tmp_path / "c.jsonl", w.genuine(w.train))
    base = ["trl-launch", "--model", "Qwen/Qwen2.5-VL-7B-Instruct", "--corpus", str(corpus),
            "--out", str(tmp_path / "o"), "--video_root", str(tmp_path)]  # fmt: skip
    code = main([*base, "--stage", "ppo"])
    assert_one_line_error(capsys.readouterr().err, "unknown stage 'ppo'", code)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    hub.hub_reachable.cache_clear()
    try:
        code = main([*base, "--stage", "grpo"])
    finally:
        hub.hub_reachable.cache_clear()
    assert_one_line_error(capsys.readouterr().err, "Qwen/Qwen2.5-VL-7B-Instruct", code)
