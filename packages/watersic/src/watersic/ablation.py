"""One switch at a time: what each part of the WaterSIC recipe does on the tiny Llama.

Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). :data:`SWITCHES` lists the options of
:func:`watersic.model_quantization.quantize_model` that make up the recipe -- the entropy
accounting, the damping, the authors' paper-reproduction extras (attention-weighted q/k/v
moments, the adaptive target blend, the blend for gate/up), the drift-corrected target, the
residual compensation, the global rate control and the rescalers -- each flipped away from
the default; :func:`ablation_table` quantizes one pretrained model once per row and scores
held-out KL against Huffman-GPTQ at the same rate.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from icml26_shared.results import Table

#: The options flipped one at a time: a value, or ``None`` for "the other boolean".
SWITCHES: tuple[tuple[str, object], ...] = (
    ("accounting", "pooled"),  # the paper's
    ("accounting", "per_column"),  # plug-in per-column histograms, their cost not counted
    ("accounting", "coded"),
    ("damping", 1e-4),  # the authors'
    ("damping", 1e-2),
    ("damping", 1e-1),
    ("attention_weighted", None),
    ("adaptive_blend", None),
    ("blend_mlp", None),
    ("drift_correction", None),
    ("residual_compensation", None),
    ("rate_control", None),
    ("rescalers", None),
)


def switches(defaults: dict) -> dict[str, dict]:
    """Row name -> the options of that row: ``defaults`` first, then each of :data:`SWITCHES`
    that changes them (a value equal to the default is left out).

    >>> rows = switches({"accounting": "coded", "damping": 1e-2, "rescalers": True})
    >>> list(rows)[:3], rows["rescalers=False"]
    (['defaults', 'accounting=pooled', 'accounting=per_column'], {'rescalers': False})
    """
    rows: dict[str, dict] = {"defaults": {}}
    for key, value in SWITCHES:
        if key not in defaults:
            continue
        value = (not defaults[key]) if value is None else value
        if value != defaults[key]:
            rows[f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"] = {
                key: value
            }
    return rows


def ablation_table(spec, rates: Sequence[float], calibration_sequences: int,
                   evaluation_sequences: int, seed: int = 0) -> Table:  # fmt: skip
    """WaterSIC with one switch flipped per row, and Huffman-GPTQ, on one pretrained tiny LM.

    Args:
        spec: The :class:`~watersic.tiny_llm.TinyLlamaSpec` (the ``tiny_lm`` section's model).
        rates: Target rates (bits per weight).
        calibration_sequences, evaluation_sequences: As in the ``tiny_lm`` section.
        seed: Seed of the pretrained model.
    """
    import inspect

    from watersic.evaluation import lm_report
    from watersic.model_benchmarks import quantize_for_benchmark, tiny_lm_data, trained_tiny_llama
    from watersic.model_quantization import MODEL_DAMPING, quantize_model

    defaults = {k: p.default for k, p in inspect.signature(quantize_model).parameters.items()}
    defaults["damping"] = MODEL_DAMPING if defaults["damping"] is None else defaults["damping"]
    fp, _ = trained_tiny_llama(spec, seed)
    _, calibration, evaluation = tiny_lm_data(spec, calibration_sequences, evaluation_sequences)
    table = Table(
        f"Ablation: WaterSIC with one switch flipped, tiny Llama (hidden {spec.hidden_size}, "
        f"{spec.num_layers} layers), seed {seed}",
        ["rate_target", "variant", "rate", "perplexity", "kl_bits", "vs_huffman", "time"],
        units={"rate": "bits/w", "kl_bits": "bits/token", "time": "s"},
        notes=(
            "Same model, calibration and evaluation windows as the tiny_lm section (its first "
            "seed). defaults: quantize_model's defaults; every other row changes only the "
            "option its name gives (drift_correction=False: the quantized-path second moment "
            "only, as GPTQ; residual compensation needs the drift path and is off with it). "
            "vs_huffman: the row's KL / Huffman-GPTQ's KL at the same rate."
        ),
    )
    for rate in rates:
        hg = quantize_for_benchmark(fp, calibration, rate, "huffman-gptq")
        ref = lm_report(fp, hg.model, evaluation)
        table.add_row(rate_target=rate, variant="huffman-gptq", rate=hg.rate,
                      perplexity=ref["perplexity"], kl_bits=ref["kl_bits"], vs_huffman=1.0)  # fmt: skip
        for name, kw in switches(defaults).items():
            t0 = time.perf_counter()
            art = quantize_for_benchmark(fp, calibration, rate, "watersic", **kw)
            res = lm_report(fp, art.model, evaluation)
            table.add_row(rate_target=rate, variant=name, rate=art.rate,
                          perplexity=res["perplexity"], kl_bits=res["kl_bits"],
                          vs_huffman=res["kl_bits"] / ref["kl_bits"],
                          time=time.perf_counter() - t0)  # fmt: skip
    return table
