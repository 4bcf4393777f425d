"""``poet-x reproduce``: POET-X vs POET vs AdamW / Muon on a tiny Llama, CPU scale.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500). One run trains every method of
:data:`~poet_x.optimizer_comparison.METHODS` on the same model, data and tokens (each in its
own process, then on the Markov chain: :func:`~poet_x.optimizer_comparison.comparison`);
sizes in ``configs/reproduce/{quick,full,paper}.yaml``:

1. ``text``: optimiser state, saved activations, accounted and measured memory, tokens/s,
   validation loss at equal tokens and equal time, spectrum drift and orthogonality error on
   byte-level CPython stdlib text (and the curves figure).
2. ``markov``: excess loss over the exact entropy rate of an order-2 Markov chain.
3. ``memory``: one layer at the paper's Llama-8B shapes (4096 x 14336, 4096 x 4096, 2048
   tokens, b = 256 / 512): memory held for backward, optimiser state and fwd+bwd time of
   POET, POET-X fast / mem, POET-XQ, AdamW and GaLore, next to the analytic whole-model
   table (:mod:`~poet_x.layer_benchmark`; the same code as ``poet-x benchmark``).
"""

from __future__ import annotations

from icml26_shared.experiment import Experiment, Section, SectionResult

from .layer_benchmark import LayerBenchmarkSetting, benchmark_tables
from .optimizer_comparison import (
    ComparisonSetting,
    comparison,
    curves_figure,
    markov_table,
    summary_line,
    text_table,
)


def text_section(s: ComparisonSetting, seed: int) -> SectionResult:
    r = comparison(s, seed)
    notes = [n for n in [summary_line(r.rows, r.markov_rows)] if n]
    if r.skipped:
        notes.append("Skipped (bench extra not installed: pip install 'poet-x[bench]'): "
                     + ", ".join(r.skipped))  # fmt: skip
    where = "its own process per method" if s.isolate else "one process"
    notes.append(f"CPU time of the comparison (one thread per process, parent + method "
                 f"processes): {r.process_cpu_s:.0f} s; training ran in {where}.")  # fmt: skip
    figure = curves_figure(r.rows, r.markov_rows)
    return SectionResult([text_table(r.rows, s)], {"poet_x_curves.png": figure}, notes)


def markov_section(s: ComparisonSetting, seed: int) -> SectionResult:
    r = comparison(s, seed)
    return SectionResult([markov_table(r.markov_rows, s, seed)])


def memory_section(s: LayerBenchmarkSetting, seed: int) -> SectionResult:
    import sys
    import time

    t0, cpu0 = time.perf_counter(), time.process_time()

    def progress(msg: str) -> None:
        print(f"  memory {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    r = benchmark_tables(s, seed, progress)
    notes = [
        r.summary,
        "held for backward = every tensor autograd keeps for the backward, once per storage, "
        "the layer's own stored base weight included (POET-X_mem keeps W~0, POET-XQ its uint8 "
        "codes); activations = the same without the layer's parameters and buffers. Bytes are "
        "exact and do not depend on the seed or the machine.",
        f"Times: median of {s.repeats} forward+backward pass(es) per row, {s.device}, "
        f"{s.dtype}; this run took {time.perf_counter() - t0:.0f} s wall, "
        f"{time.process_time() - cpu0:.0f} s CPU.",
    ]
    return SectionResult(r.tables, notes=notes)


EXPERIMENT = Experiment(
    "poet-x",
    [
        Section(
            "text",
            text_section,
            "POET-X trains with a fraction of AdamW's optimiser state and memory, keeps the "
            "spectrum of W0, and stays close to AdamW in loss at equal tokens",
            ComparisonSetting,
        ),
        Section(
            "markov",
            markov_section,
            "the same ordering on data with a known floor (excess loss over the entropy rate)",
            ComparisonSetting,
        ),
        Section(
            "memory",
            memory_section,
            "at the paper's layer shapes POET-X_mem holds less for backward than POET-X_fast, "
            "which holds less than POET (>= 3x below it); POET-XQ holds less than POET-X_mem; "
            "the rotations' optimiser state is a fraction of AdamW's",
            LayerBenchmarkSetting,
        ),
    ],  # fmt: skip
    notes=[
        "Every method trains the same randomly initialised Llama on the same windows with the "
        "same seed for the same number of optimiser steps (equal tokens), through "
        "CausalLMModule's own optimiser step and merge; one thread per process."
    ],
)
