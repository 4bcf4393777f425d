"""Command line of poet-x: ``poet-x --help``.

``fit/validate/test/predict`` (LightningCLI; models :class:`~poet_x.lightning.CausalLMModule`
and :class:`~poet_x.lightning.TeacherRegressionModule`, data
:class:`~poet_x.lightning.TextDataModule` (offline), :class:`~poet_x.lightning.HFTextDataModule`
(C4 / WikiText / TinyStories) and :class:`~poet_x.lightning.TeacherRegressionDataModule`,
given as ``class_path`` / ``init_args``; add ``--trainer.callbacks+=POETMergeCallback`` or use
the configs, which include it), ``reproduce``, and the package commands ``memory``
(analytic 1B-13B memory), ``convert`` (wrap a tiny Llama and print what was converted) and
``merge`` (export a checkpoint's POET layers to plain Linears with ``save_pretrained``) and
``benchmark`` (one layer at the paper's shapes: memory held for backward, optimiser state,
time; :mod:`~poet_x.layer_benchmark`).

Own model: ``poet-x fit --model PATH_OR_ID --data FILE_OR_DIR`` (:func:`own_model_arguments`)
is ``poet-x fit --config poet-x:own_model/defaults.yaml`` with ``CausalLMModule(pretrained=...)`` and
``HFTextDataModule(dataset=..., tokenizer=<the model's>)``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def memory(
    model: Literal["llama_1b", "llama_3b", "llama_8b", "llama_13b", "all"] = "all",
    block_size: int = 256,
    galore_rank: int = 512,
    gpu_gb: float = 80.0,
) -> None:
    """Analytic weight+grad+optimiser memory of AdamW, GaLore and POET-X (no activations).

    Args:
        model: Llama shape, or ``all``.
        block_size: POET block size b.
        galore_rank: GaLore projection rank.
        gpu_gb: GPU memory to compare against.
    """
    from .memory_accounting import LLAMA_SHAPES, analytic_memory

    if block_size < 2:
        raise UsageError(f"block_size must be >= 2, got {block_size}")
    names = list(LLAMA_SHAPES) if model == "all" else [model]
    for name in names:
        r = analytic_memory(LLAMA_SHAPES[name], block_size, galore_rank)
        fits = {
            k: ("fits" if r[k] <= gpu_gb else "OOM") for k in ("AdamW GB", "GaLore GB", "POET-X GB")
        }
        print(
            f"{name}: {r['params (B)']:.2f}B params | AdamW {r['AdamW GB']:.1f} GB ({fits['AdamW GB']})"
            f" | GaLore {r['GaLore GB']:.1f} GB ({fits['GaLore GB']}) | POET-X {r['POET-X GB']:.1f} GB"
            f" ({fits['POET-X GB']}) on {gpu_gb:g} GB, before activations"
        )


def convert(
    hidden_size: int = 128,
    intermediate_size: int = 384,
    num_layers: int = 2,
    block_size: int = 32,
    on_indivisible: Literal["raise", "skip"] = "raise",
) -> None:
    """Wrap a randomly initialised tiny Llama with POET-X and list converted/skipped layers.

    Args:
        hidden_size: Llama hidden size.
        intermediate_size: Llama MLP size.
        num_layers: Number of decoder layers.
        block_size: POET block size b.
        on_indivisible: ``raise`` on dimensions not divisible by b, or ``skip`` them.
    """
    from .config import POETConfig
    from .lightning import tiny_llama
    from .model_surgery import wrap_model

    try:
        cfg = POETConfig(block_size=block_size, on_indivisible=on_indivisible)
        model = tiny_llama(256, hidden_size, intermediate_size, num_layers, 4, 64)
        rep = wrap_model(model, cfg)
    except (ValueError, TypeError) as err:
        raise UsageError(str(err)) from None
    print(f"converted {len(rep.wrapped)} Linear layers: {', '.join(rep.wrapped)}")
    print(f"skipped (indivisible): {', '.join(rep.skipped) or 'none'}")


def merge(checkpoint: Path, out: Path) -> None:
    """Export a ``poet-x fit`` checkpoint as a plain transformers model (``save_pretrained``).

    Every POET layer becomes the plain layer it replaced (``nn.Linear``, or GPT-2's
    ``Conv1D``) holding W_eff = R W0 P and the effective bias; a model trained from
    ``--model PATH_OR_ID`` gets that model's tokenizer saved next to it, so
    ``AutoModelForCausalLM.from_pretrained(out)`` and ``AutoTokenizer.from_pretrained(out)``
    load the result offline.

    Args:
        checkpoint: Lightning checkpoint of a CausalLMModule.
        out: Output folder for ``save_pretrained``.
    """
    from icml26_shared.results import ensure_writable_dir

    from .lightning import CausalLMModule
    from .model_surgery import merge_to_linear

    module = load_checkpoint(CausalLMModule, checkpoint)
    ensure_writable_dir(out)
    model = merge_to_linear(module.model)
    model.save_pretrained(out)
    pretrained = module.hparams.get("pretrained")
    if pretrained:
        try:
            from icml26_shared.hub import from_pretrained
            from transformers import AutoTokenizer

            from_pretrained(AutoTokenizer, pretrained).save_pretrained(out)
        except (OSError, ValueError, RuntimeError):  # a model without a tokenizer
            print(f"note: no tokenizer found with {pretrained!r}; wrote the model only")
    print(f"wrote {out}")


def _option(argv: list[str], name: str) -> tuple[int, str] | None:
    """(index of the value, value) of ``--name VALUE`` or ``--name=VALUE``, else None."""
    for i, tok in enumerate(argv):
        if tok == name and i + 1 < len(argv):
            return i + 1, argv[i + 1]
        if tok.startswith(name + "="):
            return i, tok.partition("=")[2]
    return None


def _is_model_reference(value: str) -> bool:
    """A model folder, or a Hub id ``org/name`` (not a class path, config file or JSON)."""
    if value.startswith(("{", "[")) or value.endswith((".yaml", ".yml", ".json")):
        return False
    return os.path.isdir(value) or ("/" in value and not os.path.exists(value))


def _is_text_reference(value: str) -> bool:
    """A local text file or folder (not a config file)."""
    return os.path.exists(value) and not value.endswith((".yaml", ".yml", ".json"))


def own_model_arguments(argv: Sequence[str], configs: Path) -> list[str]:
    """Rewrite ``fit --model PATH_OR_ID --data FILE_OR_DIR`` into the LightningCLI form.

    ``--model`` naming a model folder or Hub id becomes ``--config configs/own_model/defaults.yaml
    --model.init_args.pretrained PATH_OR_ID``; ``--data`` naming a local text file or folder
    becomes ``--data.init_args.dataset FILE_OR_DIR`` with the model's tokenizer. Anything else
    (class paths, config files) is left to LightningCLI unchanged.

    >>> own_model_arguments(["fit", "--model", "org/llm", "--trainer.max_steps", "3"], Path("c"))
    ['fit', '--config', 'c/own_model/defaults.yaml', '--model.init_args.pretrained', 'org/llm', '--trainer.max_steps', '3']
    """
    argv = list(argv)
    if not argv or argv[0] not in ("fit", "validate", "test", "predict"):
        return argv
    model, data = _option(argv, "--model"), _option(argv, "--data")
    if model is None or not _is_model_reference(model[1]):
        return argv
    extra = [
        "--config",
        str(configs / "own_model" / "defaults.yaml"),
        "--model.init_args.pretrained",
        model[1],
    ]
    drop = {model[0]} | ({model[0] - 1} if argv[model[0]] == model[1] else set())
    if data is not None and _is_text_reference(data[1]):
        extra += ["--data.init_args.dataset", data[1], "--data.init_args.tokenizer", model[1]]
        drop |= {data[0]} | ({data[0] - 1} if argv[data[0]] == data[1] else set())
    rest = [tok for i, tok in enumerate(argv[1:], start=1) if i not in drop]
    return [argv[0], *extra, *rest]


def benchmark(
    shapes: str = "14336x4096,4096x4096",
    tokens: int = 2048,
    block_sizes: str = "256,512",
    methods: str = "naive,fast,mem,xq,adamw,galore",
    repeats: int = 1,
    dtype: Literal["float32", "bfloat16", "float64"] = "float32",
    device: Literal["cpu", "cuda"] = "cpu",
    galore_rank: int = 512,
    models: str = "llama_1b,llama_3b,llama_8b",
    out: Path | None = None,
) -> None:
    """One layer at the paper's shapes: memory held for backward, optimiser state, fwd+bwd time.

    Runs POET (naive), POET-X fast / mem, POET-XQ, AdamW and GaLore on one (out x in) layer
    with ``tokens`` rows, prints the table and the analytic whole-model table; on ``--device
    cuda`` it also measures peak CUDA memory. The paper's single-layer setting (Llama-8B, 2048
    tokens, b = 256 / 512) is the default; POET's dense R W0 P takes minutes per pass on a CPU.

    Args:
        shapes: Comma-separated ``OUTxIN`` layer shapes.
        tokens: Rows per forward pass.
        block_sizes: Comma-separated POET block sizes b.
        methods: Comma-separated subset of naive, fast, mem, xq, adamw, galore.
        repeats: Timed forward+backward passes per method.
        dtype: Floating-point type of the layer and the input.
        device: ``cpu`` or ``cuda``.
        galore_rank: GaLore projection rank.
        models: Comma-separated Llama sizes of the analytic table (empty: none).
        out: Folder for result.json and table.md (optional).
    """
    import sys

    from .layer_benchmark import LayerBenchmarkSetting, benchmark_tables

    try:
        setting = LayerBenchmarkSetting(
            shapes=[[int(v) for v in s.lower().split("x")] for s in shapes.split(",") if s],
            tokens=tokens,
            block_sizes=[int(b) for b in block_sizes.split(",") if b],
            layer_methods=[m.strip() for m in methods.split(",") if m.strip()],
            repeats=repeats, dtype=dtype, device=device, galore_rank=galore_rank,
            models=[m.strip() for m in models.split(",") if m.strip()],
        )  # fmt: skip
    except ValueError as err:
        raise UsageError(f"benchmark: {err}") from None
    if out is not None:
        from icml26_shared.results import ensure_writable_dir

        ensure_writable_dir(out)
    result = benchmark_tables(setting, progress=lambda m: print(m, file=sys.stderr, flush=True))
    text = "\n\n".join(t.to_markdown() for t in result.tables) + "\n\n" + result.summary + "\n"
    print(text)
    if out is not None:
        import dataclasses
        import json

        from icml26_shared.results import atomic_write_text

        payload = {
            "setting": dataclasses.asdict(setting),
            "rows": result.rows,
            "tables": [t.to_dict() for t in result.tables],
            "summary": result.summary,
        }
        atomic_write_text(Path(out) / "result.json", json.dumps(payload, indent=2))
        atomic_write_text(Path(out) / "table.md", text)
        print(f"wrote {Path(out) / 'result.json'} and table.md", file=sys.stderr)


def build_cli() -> PaperCLI:
    """The package's CLI (model and data given as ``class_path`` / ``init_args``; nothing heavy
    is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "memory": "poet_x.cli:memory",
            "convert": "poet_x.cli:convert",
            "merge": "poet_x.cli:merge",
            "benchmark": "poet_x.cli:benchmark",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``poet-x`` console script."""
    import sys

    cli = build_cli()
    argv = list(sys.argv[1:] if args is None else args)
    if argv and argv[0] in ("fit", "validate", "test", "predict") and "--model" in " ".join(argv):
        from icml26_shared.cli import config_folder

        try:
            new = own_model_arguments(argv, config_folder(PAPER))
        except UsageError as err:
            print(f"poet-x: error: {err}", file=sys.stderr)
            return 2
        if args is None:
            sys.argv[1:] = new
            return cli.main(None)
        return cli.main(new)
    return cli.main(args)
