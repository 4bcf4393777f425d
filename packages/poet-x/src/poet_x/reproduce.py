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
"""

from __future__ import annotations

from icml26_shared.experiment import Experiment, Section, SectionResult

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
    ],  # fmt: skip
    notes=[
        "Every method trains the same randomly initialised Llama on the same windows with the "
        "same seed for the same number of optimiser steps (equal tokens), through "
        "CausalLMModule's own optimiser step and merge; one thread per process."
    ],
)
