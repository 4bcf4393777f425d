"""Command line of videokr: ``videokr --help``.

``fit/validate/test/predict`` (LightningCLI; ``--model`` is :class:`~videokr.lightning.SFTModule`
or :class:`~videokr.lightning.GRPOModule`, one YAML per recipe stage in ``configs/``), ``reproduce``,
and the pipeline commands below.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def synth(out: Path, n_videos: int = 200, seed: int = 0) -> None:
    """Generate the SynthKR micro-world (clips, manifest, raw train/eval JSONL with planted defects).

    Args:
        out: Output folder (clips under out/videos; use it as --video_root).
        n_videos: Number of clips.
        seed: Random seed.
    """
    from .corpus import write_jsonl
    from .microworld import make_microworld

    w = make_microworld(n_videos, seed=seed, root=out)
    w.manifest.write(Path(out) / "manifest.jsonl")
    write_jsonl(Path(out) / "train_raw.jsonl", w.train)
    write_jsonl(Path(out) / "eval_raw.jsonl", w.eval)
    write_jsonl(Path(out) / "defects.jsonl", [{"id": k, "defect": v} for k, v in w.defects.items()])
    print(
        f"wrote {len(w.videos)} clips, {len(w.train)} train and {len(w.eval)} eval items to {out}"
    )


def build(
    out: Path,
    n_videos: int = 200,
    seed: int = 0,
    allow_nc: bool = False,
    allow_nd: bool = False,
    review: Path | None = None,
) -> None:
    """Run the corpus pipeline (collect, generate, filters, review) into a folder; resumable.

    Args:
        out: Output folder (train.jsonl, eval.jsonl, manifest.jsonl, stages/, pipeline.json).
        n_videos: Number of micro-world clips to collect.
        seed: Random seed.
        allow_nc: Also accept non-commercial (NC) Creative Commons licenses.
        allow_nd: Also accept no-derivatives (ND) Creative Commons licenses.
        review: A filled review sheet (CSV) whose accept/reject/edit decisions are applied last.
    """
    from .pipeline import build_corpus

    log = build_corpus(out, n_videos, seed, allow_nc, allow_nd, review)
    print(
        f"train: {log['train.jsonl']['records']} items, eval: {log['eval.jsonl']['records']} items"
    )
    for name, entry in log.items():
        if isinstance(entry, dict) and "removed" in entry:
            print(f"  {name}: removed {len(entry['removed'])}")


def check_corpus(corpus: Path, video_root: Path | None = None, check_videos: bool = True) -> None:
    """Validate a corpus file against the schema (one clear line for the first bad record).

    Args:
        corpus: JSONL file in the VideoKR schema.
        video_root: Folder the video paths are relative to (default: $VIDEOKR_VIDEO_ROOT).
        check_videos: Check that every referenced video file exists.
    """
    from .corpus import load_local

    rows = load_local(corpus, video_root=video_root, check_videos=check_videos)
    print(f"{corpus}: {len(rows)} valid records")


def filter(  # noqa: A001 - the command is called filter
    corpus: Path, out: Path, review_sheet: Path | None = None, rationale: bool = False
) -> None:
    """Apply the text-only quality filters (blind text, near-duplicates, rationale) to a corpus file.

    Args:
        corpus: JSONL corpus (validated first).
        out: Output JSONL of the kept items; the removal report goes next to it (.report.json).
        review_sheet: Also export the kept items as a review sheet (CSV) for human review.
        rationale: Also validate rationales with the micro-world conventions (the rationale names
            the labelled option's text last; knowledge items cite the micro-world knowledge bank).
            Off by default: on other corpora it would remove items whose rationales paraphrase.
    """
    from icml26_shared.results import atomic_write_text

    from .corpus import load_local, write_jsonl
    from .filters import BlindTextFilter, CoTValidator, MinHashDedup
    from .knowledge import microworld_bank
    from .pipeline import run_filters
    from .review import export_review

    rows = load_local(corpus)
    chain = [BlindTextFilter(), MinHashDedup()]
    if rationale:
        chain.append(CoTValidator(microworld_bank()))
    kept, reports = run_filters(rows, chain)
    write_jsonl(out, kept)
    report = {r.name: r.removed for r in reports}
    atomic_write_text(f"{out}.report.json", json.dumps(report, indent=1) + "\n")
    if review_sheet is not None:
        export_review(review_sheet, kept)
    print(
        f"kept {len(kept)} of {len(rows)}; "
        + ", ".join(f"{r.name}: -{len(r.removed)}" for r in reports)
    )


def evaluate(
    corpus: Path,
    predictions: Path,
    judge: str = "rule",
    judge_url: str = "",
    judge_model: str = "gpt-4o",
    judge_api_key_env: str = "OPENAI_API_KEY",
) -> None:
    """Score predictions (JSONL of {id, output}) on a benchmark: accuracy by skill, subject, type.

    Args:
        corpus: Benchmark JSONL in the VideoKR schema.
        predictions: JSONL with one {"id": ..., "output": ...} per line (e.g. from videokr predict).
        judge: rule (open-ended skipped and counted), rouge (open-ended by ROUGE) or chat (a model judge).
        judge_url: Base URL of an OpenAI-compatible endpoint for --judge chat (ends before /chat).
        judge_model: Model name the chat judge asks.
        judge_api_key_env: Environment variable holding the endpoint's API key (may be unset).
    """
    import os

    from .corpus import load_local, read_jsonl
    from .harness import ChatJudge, EvalHarness, RougeJudge, RuleJudge

    judges = {"rule": RuleJudge, "rouge": RougeJudge, "chat": ChatJudge}
    if judge not in judges:
        raise UsageError(f"eval: unknown judge {judge!r}; choose from {', '.join(judges)}")
    if judge == "chat" and not judge_url:
        raise UsageError("eval: --judge chat needs --judge_url (an OpenAI-compatible endpoint)")
    rows = load_local(corpus)
    preds = {}
    for p in read_jsonl(predictions):
        if "id" not in p or "output" not in p:
            raise UsageError(f"eval: {predictions}: every line needs 'id' and 'output'")
        preds[str(p["id"])] = str(p["output"])
    unknown = set(preds) - {r["id"] for r in rows}
    if unknown:
        raise UsageError(
            f"eval: {len(unknown)} predictions have ids not in the corpus, e.g. {sorted(unknown)[0]!r}"
        )
    scorer = (
        ChatJudge(judge_url, judge_model, os.environ.get(judge_api_key_env, ""))
        if judge == "chat"
        else judges[judge]()
    )
    res = EvalHarness(rows, scorer).evaluate(preds)
    print(json.dumps({"overall": res.overall, "format": res.format_rate, "scored": res.n_scored,
                      "skipped": res.n_skipped, **res.by}, indent=1))  # fmt: skip


def export_lmms_eval(out: Path, data_files: str = "VideoKR_eval.jsonl") -> None:
    """Export VideoKR-Eval as an lmms-eval task folder (videokr_eval.yaml + utils.py).

    Args:
        out: Folder to write the task into.
        data_files: Path of the eval JSONL as lmms-eval should load it.
    """
    from .harness import export_lmms_eval_task

    for p in export_lmms_eval_task(out, data_files):
        print(f"wrote {p}")


def trl_launch(
    stage: str,
    model: str,
    corpus: Path,
    out: Path,
    video_root: Path | None = None,
    with_video: bool = True,
    max_frames: int = 128,
    max_steps: int = -1,
    cpu: bool = False,
) -> None:
    """Train a real (Hub) model with the paper's SFT or GRPO settings through TRL (bench extra).

    Args:
        stage: sft (SFTTrainer on <think>/<answer> targets) or grpo (GRPOTrainer, 0.9 acc + 0.1 format).
        model: Hub id or local folder, e.g. Qwen/Qwen2.5-VL-7B-Instruct (the GRPO stage starts from the SFT output).
        corpus: JSONL corpus in the VideoKR schema (e.g. VideoKR-COT-201K.jsonl or VideoKR-RL-114K.jsonl).
        out: Output folder for checkpoints and the final model.
        video_root: Folder the video paths are relative to (default: $VIDEOKR_VIDEO_ROOT).
        with_video: Feed the clip as frames to an image-text-to-text model; false: text-only causal LM.
        max_frames: At most this many uniformly sampled frames per clip (paper: 128).
        max_steps: Stop after this many optimiser steps (-1: one epoch, as in the paper).
        cpu: Train on the CPU in float32 (no bf16).
    """
    from icml26_shared.hub import HubUnavailableError

    from .corpus import load_local

    if stage not in ("sft", "grpo"):
        raise UsageError(f"trl-launch: unknown stage {stage!r}; choose sft or grpo")
    # optional quantisation back-ends imported by TRL/transformers log torch pytree deprecations
    logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)
    try:
        from .trl_recipe import launch
    except ImportError as exc:
        raise UsageError(f"trl-launch: {exc}") from None
    rows = load_local(corpus, video_root=video_root, check_videos=with_video)
    extra = {"max_steps": max_steps}
    if cpu:
        extra.update(use_cpu=True, bf16=False)
    try:
        trainer = launch(stage, model, rows, out, video_root, with_video, max_frames, **extra)
    except HubUnavailableError as exc:
        raise UsageError(f"trl-launch: {' '.join(str(exc).split())}") from None
    print(f"trained {stage} for {trainer.state.global_step} steps; model saved to {out}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="videokr.lightning:SFTModule",
        datamodule_class="videokr.lightning:SynthKRDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "synth": "videokr.cli:synth",
            "build": "videokr.cli:build",
            "check-corpus": "videokr.cli:check_corpus",
            "filter": "videokr.cli:filter",
            "eval": "videokr.cli:evaluate",
            "export-lmms-eval": "videokr.cli:export_lmms_eval",
            "trl-launch": "videokr.cli:trl_launch",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``videokr`` console script."""
    return build_cli().main(args)
