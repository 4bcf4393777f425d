"""The SFT -> GRPO recipe for real (Hub) models through TRL's ``SFTTrainer`` / ``GRPOTrainer``.

The paper post-trains Qwen2.5-VL-7B / Qwen3-VL-8B with LlamaFactory (SFT) then verl (GRPO). This
module is the documented launcher for the same recipe on TRL (``pip install trl``; not needed by
the micro-world path, which uses :mod:`videokr.lightning`):

* :data:`SFT_HPARAMS` / :data:`GRPO_HPARAMS` -- the authors' settings (LlamaFactory / verl configs
  as read from their repository), mapped onto TRL's argument names.
* :func:`sft_config` / :func:`grpo_config` -- ``trl.SFTConfig`` / ``trl.GRPOConfig`` with those
  settings, any field overridable.
* :func:`accuracy_reward` / :func:`format_reward` -- :mod:`videokr.rewards` as TRL reward functions;
  ``reward_weights = (0.9, 0.1)`` makes TRL's sum the paper's ``0.9 * acc + 0.1 * format``.
* :func:`load_frames` -- a record's clip as PIL frames (``.npy`` arrays; other files through PyAV
  when installed), uniformly sampled to at most ``max_frames``.
* :func:`to_trl_dataset` -- records -> TRL rows: SFT ``prompt``/``completion``, GRPO ``prompt`` plus
  the ``solution`` / ``problem_type`` columns the rewards read; with frames, conversational prompts
  and an ``images`` column (TRL's multi-image input, one placeholder per frame: the clip goes in
  as a frame sequence; TRL's trainers take image, not video, inputs).
* :func:`launch` -- load model and processor (offline-aware, :mod:`icml26_shared.hub`), build the
  trainer, train, save. ``videokr trl-launch`` on the command line.

GRPO mapping (verl -> TRL): group size ``n = 8`` -> ``num_generations``; KL *loss* with the k3
(``low_var_kl``) estimator and coefficient 0.01 -> ``beta = 0.01`` (TRL's per-token KL is k3);
PPO clip 0.2 -> ``epsilon``; token-mean loss aggregation -> ``loss_type = "dapo"``; advantage
``(r - mean_G) / std_G`` -> ``scale_rewards = "group"``; train batch 32 prompts with PPO
mini-batch 8 -> ``steps_per_generation = 4`` (one rollout, four optimiser steps).

>>> accuracy_reward(["<think>x</think><answer>B</answer>"], solution=["<answer>B</answer>"])
[1.0]
>>> GRPO_HPARAMS["num_generations"], GRPO_HPARAMS["beta"], REWARD_WEIGHTS
(8, 0.01, (0.9, 0.1))
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .rewards import ACCURACY_WEIGHT, FORMAT_WEIGHT
from .rewards import accuracy_reward as _accuracy
from .rewards import format_reward as _format
from .schema import answer_of, resolve_video

#: LlamaFactory SFT stage of the authors (full fine-tuning, vision tower and projector frozen).
SFT_HPARAMS: dict[str, Any] = {
    "learning_rate": 1e-5,
    "lr_scheduler_type": "cosine",
    "warmup_ratio": 0.02,
    "num_train_epochs": 1,
    "per_device_train_batch_size": 4,  # effective batch 4 per device
    "max_length": 16_384,  # cutoff_len
    "bf16": True,
}
#: verl GRPO stage of the authors.
GRPO_HPARAMS: dict[str, Any] = {
    "learning_rate": 5e-6,
    "num_generations": 8,  # rollout n
    "beta": 0.01,  # kl_loss_coef, kl_loss_type low_var_kl (k3); no KL in the reward
    "epsilon": 0.2,  # PPO clip ratio
    "loss_type": "dapo",  # verl token-mean aggregation
    "scale_rewards": "group",  # (r - mean_G) / std_G
    "max_completion_length": 2048,  # max response length
    "per_device_train_batch_size": 64,  # 8 prompts x 8 completions (PPO mini-batch 8)
    "steps_per_generation": 4,  # train batch 32 prompts = 4 mini-batches per rollout
    "num_train_epochs": 1,
    "temperature": 1.0,
    "bf16": True,
}
REWARD_WEIGHTS = (ACCURACY_WEIGHT, FORMAT_WEIGHT)  # 0.9 accuracy + 0.1 format
MAX_FRAMES = 128  # the paper's upper bound (2 fps, at most 128 frames)
PROMPT = (
    "{question}\n{options}\nThink step by step inside <think></think> tags, then give {what} "
    "inside <answer></answer> tags."
)  # the prompt of the authors' videokr_eval task


def _require_trl():
    try:
        import trl
    except ImportError as exc:  # pragma: no cover - trl is a declared dependency
        raise ImportError("the TRL launcher needs trl: pip install trl") from exc
    return trl


def _warmup(config_cls: type, kw: dict[str, Any]) -> dict[str, Any]:
    """transformers >= 5 takes the warmup ratio as a float ``warmup_steps`` (no ``warmup_ratio``)."""
    import dataclasses

    if "warmup_ratio" in kw and "warmup_ratio" not in {
        f.name for f in dataclasses.fields(config_cls)
    }:
        kw = dict(kw)
        kw["warmup_steps"] = kw.pop("warmup_ratio")
    return kw


def sft_config(output_dir: str | os.PathLike, **overrides: Any) -> Any:
    """``trl.SFTConfig`` with :data:`SFT_HPARAMS`; ``overrides`` win.

    >>> sft_config("out", bf16=False, use_cpu=True).learning_rate
    1e-05
    """
    trl = _require_trl()
    kw = {**SFT_HPARAMS, "report_to": "none", **overrides}
    return trl.SFTConfig(output_dir=str(output_dir), **_warmup(trl.SFTConfig, kw))


def grpo_config(output_dir: str | os.PathLike, **overrides: Any) -> Any:
    """``trl.GRPOConfig`` with :data:`GRPO_HPARAMS` and :data:`REWARD_WEIGHTS`; ``overrides`` win.

    >>> c = grpo_config("out", bf16=False, use_cpu=True)
    >>> c.num_generations, c.beta, c.reward_weights
    (8, 0.01, [0.9, 0.1])
    """
    trl = _require_trl()
    kw = {**GRPO_HPARAMS, "reward_weights": list(REWARD_WEIGHTS), "report_to": "none"}
    return trl.GRPOConfig(output_dir=str(output_dir), **{**kw, **overrides})


def _text(completion: Any) -> str:
    """A TRL completion (plain string or a list of chat messages) as text."""
    if isinstance(completion, str):
        return completion
    parts = []
    for msg in completion:
        content = msg.get("content", "") if isinstance(msg, Mapping) else str(msg)
        if isinstance(content, list):
            content = "".join(c.get("text", "") for c in content if isinstance(c, Mapping))
        parts.append(str(content))
    return "".join(parts)


def accuracy_reward(
    completions: Sequence[Any],
    solution: Sequence[str],
    problem_type: Sequence[str] | None = None,
    **_: Any,
) -> list[float]:
    """TRL reward function: :func:`videokr.rewards.accuracy_reward` per completion."""
    types = problem_type or ["multiple choice"] * len(completions)
    return [_accuracy(_text(c), s, t) for c, s, t in zip(completions, solution, types, strict=True)]


def format_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """TRL reward function: :func:`videokr.rewards.format_reward` per completion.

    >>> format_reward([[{"role": "assistant", "content": "<think>a</think><answer>A</answer>"}]])
    [1.0]
    """
    return [_format(_text(c)) for c in completions]


def load_frames(
    record: Mapping[str, Any],
    video_root: str | os.PathLike | None = None,
    max_frames: int = MAX_FRAMES,
) -> list[Any]:
    """The record's clip as at most ``max_frames`` uniformly sampled RGB PIL images.

    ``.npy`` files hold ``(T, H, W)`` or ``(T, H, W, 3)`` arrays in [0, 1] (or uint8); other
    files are decoded with PyAV when it is installed. A missing file names the path and the
    video-root setting.
    """
    from PIL import Image

    path = resolve_video(record, video_root)
    if path.suffix == ".npy":
        video = np.load(path)
    else:
        try:
            import av
        except ImportError:
            raise ImportError(
                f"decoding {path.suffix} videos needs PyAV (pip install av), or convert the clip "
                "to a .npy frame array"
            ) from None
        with av.open(str(path)) as container:
            video = np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])
    if video.ndim == 3:
        video = np.repeat(video[..., None], 3, axis=-1)
    if video.ndim != 4 or video.shape[-1] != 3:
        raise ValueError(
            f"video {str(path)!r}: expected (T, H, W) or (T, H, W, 3), got {video.shape}"
        )
    if video.dtype != np.uint8:
        video = (np.clip(video, 0.0, 1.0) * 255).round().astype(np.uint8)
    idx = np.unique(np.linspace(0, len(video) - 1, min(max_frames, len(video))).round().astype(int))
    return [Image.fromarray(video[i]) for i in idx]


def prompt_text(record: Mapping[str, Any]) -> str:
    """The evaluation prompt for one record (option letter only for multiple choice)."""
    mc = record["problem_type"] == "multiple choice"
    return PROMPT.format(
        question=record["question"],
        options="\n".join(record.get("options") or []),
        what="only the option letter" if mc else "the final answer",
    )


def response_text(record: Mapping[str, Any]) -> str:
    """SFT target ``<think>rationale</think><answer>answer</answer>``."""
    return (
        f"<think>{record.get('think', '')}</think><answer>{answer_of(record['solution'])}</answer>"
    )


def to_trl_dataset(
    records: Sequence[Mapping[str, Any]],
    stage: str,
    video_root: str | os.PathLike | None = None,
    with_video: bool = True,
    max_frames: int = MAX_FRAMES,
) -> Any:
    """Validated records as a ``datasets.Dataset`` in TRL's format for ``stage`` (sft / grpo).

    >>> rec = {"id": "a", "video_path": "v.npy", "question": "Which way?", "options": ["A. l", "B. r"],
    ...        "problem_type": "multiple choice", "solution": "<answer>B</answer>", "think": "right"}
    >>> row = to_trl_dataset([rec], "sft", with_video=False)[0]
    >>> row["completion"]
    '<think>right</think><answer>B</answer>'
    """
    from datasets import Dataset

    from .schema import validate_corpus

    if stage not in ("sft", "grpo"):
        raise ValueError(f"unknown stage {stage!r}; choose sft or grpo")
    rows = []
    for r in validate_corpus(records):
        text = prompt_text(r)
        row: dict[str, Any] = {"id": r["id"]}
        if with_video:  # TRL puts one image placeholder per frame before the user text
            row["prompt"] = [{"role": "user", "content": text}]
            row["images"] = load_frames(r, video_root, max_frames)
            if stage == "sft":
                row["completion"] = [{"role": "assistant", "content": response_text(r)}]
        else:
            row["prompt"] = text
            if stage == "sft":
                row["completion"] = response_text(r)
        if stage == "grpo":
            row["solution"], row["problem_type"] = r["solution"], r["problem_type"]
        rows.append(row)
    return Dataset.from_list(rows)


def launch(
    stage: str,
    model: str,
    records: Sequence[Mapping[str, Any]],
    output_dir: str | os.PathLike,
    video_root: str | os.PathLike | None = None,
    with_video: bool = True,
    max_frames: int = MAX_FRAMES,
    **overrides: Any,
) -> Any:
    """Train ``model`` (a Hub id or local folder) on ``records`` with TRL; returns the trainer.

    ``with_video``: the model is an image-text-to-text model (Qwen2.5-VL, Qwen3-VL) loaded with
    ``AutoModelForImageTextToText`` / ``AutoProcessor`` and fed the clip as frames; otherwise a
    causal LM with its tokenizer and text-only prompts (the blind setting, and the offline test).
    Offline and not cached, the model fails with one line naming it.
    """
    from icml26_shared.hub import from_pretrained

    trl = _require_trl()
    if stage not in ("sft", "grpo"):
        raise ValueError(f"unknown stage {stage!r}; choose sft or grpo")
    import transformers

    hint = "the micro-world recipe runs offline: videokr fit --config configs/sft_full.yaml"
    if with_video:
        model_cls, proc_cls = transformers.AutoModelForImageTextToText, transformers.AutoProcessor
    else:
        model_cls, proc_cls = transformers.AutoModelForCausalLM, transformers.AutoTokenizer
    processor = from_pretrained(proc_cls, model, offline_hint=hint)
    net = from_pretrained(model_cls, model, offline_hint=hint)
    data = to_trl_dataset(records, stage, video_root, with_video, max_frames)
    if stage == "sft":
        args = sft_config(output_dir, **overrides)
        trainer = trl.SFTTrainer(
            model=net,
            args=args,
            train_dataset=data.remove_columns("id"),
            processing_class=processor,
        )
    else:
        args = grpo_config(output_dir, **overrides)
        trainer = trl.GRPOTrainer(
            model=net,
            reward_funcs=[accuracy_reward, format_reward],
            args=args,
            train_dataset=data,
            processing_class=processor,
        )
    trainer.train()
    trainer.save_model(str(Path(output_dir)))
    return trainer
