"""Command line of poet-x: ``poet-x --help``.

``fit/validate/test/predict`` (LightningCLI; models :class:`~poet_x.lightning.CausalLMModule`
and :class:`~poet_x.lightning.TeacherRegressionModule`, data
:class:`~poet_x.lightning.TextDataModule` (offline), :class:`~poet_x.lightning.HFTextDataModule`
(C4 / WikiText / TinyStories) and :class:`~poet_x.lightning.TeacherRegressionDataModule`,
given as ``class_path`` / ``init_args``; add ``--trainer.callbacks+=POETMergeCallback`` or use
the configs, which include it), ``reproduce``, and the package commands ``memory``
(analytic 1B-13B memory), ``convert`` (wrap a tiny Llama and print what was converted) and
``merge`` (export a checkpoint's POET layers to plain Linears with ``save_pretrained``).
"""

from __future__ import annotations

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
    print(f"wrote {out}")


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
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``poet-x`` console script."""
    return build_cli().main(args)
