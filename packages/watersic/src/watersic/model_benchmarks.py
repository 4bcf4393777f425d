"""Whole-model benchmarks: every quantizer on a real encoder and on a tiny causal LM.

Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956) quantize pretrained transformers layer
by layer (:func:`watersic.model_quantization.quantize_model`) and compare the methods at equal
rate. Offline on a CPU, two models stand in for the paper's Llama / Qwen:

* :func:`minilm_table` -- benchmark (b): the pretrained all-MiniLM-L6-v2 encoder
  (:mod:`watersic.minilm`, ``bench`` extra), scored by the mean per-layer relative output MSE
  and the fidelity of its sentence embeddings (:func:`watersic.evaluation.embedding_fidelity`);
* :func:`tiny_lm_table` -- benchmark (c): a byte-level Llama pretrained here on CPython's
  sources (:func:`watersic.lightning.train_tiny_llama`), scored by held-out perplexity and
  KL(P_fp || P_q) in bits per token (:func:`watersic.evaluation.lm_report`), with WaterSIC-FT
  (:func:`watersic.lightning.finetune_rescalers`) as an extra row;
* :func:`method_figure` -- one metric per panel against the rate, one curve per method.

Anchors that are not installed are skipped (:func:`watersic.anchors.supports`).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Sequence

from icml26_shared.results import Table

from watersic import anchors
from watersic.model_quantization import ENTROPY_METHODS

__all__ = ["MODEL_METHODS", "mean_sd", "method_figure", "minilm_table", "quantize_for_benchmark",
           "seed_summary", "tiny_lm_data", "tiny_lm_table", "trained_tiny_llama"]  # fmt: skip

#: Methods of the whole-model benchmarks, ours first.
MODEL_METHODS = ("watersic", "huffman-gptq", "gptq", "rtn", "hqq", "quanto")


def quantize_for_benchmark(model, calibration, rate: float, method: str, **kwargs):
    """``quantize_model`` as the benchmarks call it: GPTQ/RTN with group 128, warnings off.

    The warnings silenced are the rate search's resolution notes at these small sizes.
    """
    from watersic.model_quantization import quantize_model

    group = 128 if method in ("gptq", "rtn") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return quantize_model(model, calibration, float(rate), method, group_size=group, **kwargs)


def minilm_table(
    rates: Sequence[float],
    calibration_docs: int = 512,
    evaluation_docs: int = 256,
    seq_len: int = 128,
    mse_docs: int = 64,
    blocks: int | None = None,
) -> Table | None:
    """Benchmark (b): every method on all-MiniLM-L6-v2 at each rate (``None`` if not installed).

    Args:
        rates: Target rates (bits per weight).
        calibration_docs: Stdlib docstrings (the first ones) cut into calibration windows.
        evaluation_docs: Other docstrings (the last ones) for the embedding fidelity.
        seq_len: Calibration window length in tokens (the evaluation's maximum length, so
            every position embedding the evaluation uses is calibrated).
        mse_docs: Evaluation docstrings used for the per-layer output MSE.
        blocks: Quantize only the first ``blocks`` of the 6 encoder blocks (None: all).
    """
    from watersic import minilm
    from watersic.evaluation import embedding_fidelity, layer_relative_mse
    from watersic.text_corpus import stdlib_docstrings, text_hash

    if not minilm.available():
        return None
    model, tok = minilm.load_minilm()
    docs = list(stdlib_docstrings())
    # Calibration must hold many more tokens than the widest layer has inputs (1536, the FFN
    # down projection): with fewer, Sigma is rank-deficient and WaterSIC's light damping (1e-4)
    # fits the codes to directions the calibration text never excites (README: "Why WaterSIC
    # lost on MiniLM at 2 bits").
    cal_text, eval_text = docs[:calibration_docs], docs[-evaluation_docs:]
    calibration = minilm.calibration_windows(tok, cal_text, seq_len)
    reference = minilm.sentence_embeddings(model, tok, eval_text)
    mse_batches = minilm.encoder_batches(tok, eval_text[:mse_docs])
    n_layers = 6 * (blocks or 6)
    scope = (
        f"block 0 of 6 quantized ({n_layers} block linears), the rest full precision"
        if blocks == 1
        else f"blocks 0-{blocks - 1} of 6 quantized ({n_layers} block linears)"
        if blocks
        else "36 block linears quantized"
    )
    table = Table(
        f"(b) all-MiniLM-L6-v2 (pretrained, {scope})",
        ["rate_target", "method", "rate", "layer_rel_mse", "cosine", "similarity_spearman",
         "top10_overlap", "time"],
        units={"rate": "bits/w", "time": "s"},
        notes=(
            f"Calibration: {calibration.shape[0]} windows of {seq_len} tokens "
            f"({calibration.numel()} tokens, {calibration.numel() / 1536:.1f} per input of the "
            f"widest layer) from {calibration_docs} stdlib docstrings; evaluation: "
            f"{evaluation_docs} other docstrings (docstring set hash "
            f"{text_hash(chr(10).join(docs).encode())}). rate: bits per quantized weight with side "
            "information (GPTQ/RTN: group 128 + fp16 scale and zero; HQQ: group 64; quanto: its "
            f"group 128). layer_rel_mse: mean over the {n_layers} quantized layers of ||Wx - What "
            "xhat||^2 / ||Wx||^2 on the evaluation text (padding left out); cosine / spearman / "
            "top-10 overlap: mean-pooled embeddings vs the full-precision model."
        ),
    )  # fmt: skip
    for rate in rates:
        for method in MODEL_METHODS:
            if not anchors.supports(method, rate):
                continue
            start = time.perf_counter()
            art = quantize_for_benchmark(model, calibration, rate, method, blocks=blocks)
            elapsed = time.perf_counter() - start
            emb = minilm.sentence_embeddings(art.model, tok, eval_text)
            fid = embedding_fidelity(reference, emb, k=10)
            mse = layer_relative_mse(model, art.model, mse_batches, list(art.layers))
            table.add_row(
                rate_target=rate, method=method, rate=art.rate,
                layer_rel_mse=sum(mse.values()) / len(mse), cosine=fid["cosine"],
                similarity_spearman=fid["similarity_spearman"],
                top10_overlap=fid["neighbour_overlap"], time=elapsed,
            )  # fmt: skip
    return table


@functools.lru_cache(maxsize=4)
def trained_tiny_llama(spec, seed: int):
    """The pretrained tiny LM of ``(spec, seed)`` and its pretraining seconds (cached, so the
    ``tiny_lm`` and ``ablation`` sections of one run share the model)."""
    from watersic.lightning import train_tiny_llama

    start = time.perf_counter()
    model = train_tiny_llama(spec, seed)
    return model, time.perf_counter() - start


def tiny_lm_data(spec, calibration_sequences: int, evaluation_sequences: int):
    """Training text, calibration windows (the first training bytes) and held-out windows."""
    from watersic.text_corpus import byte_sequences, stdlib_text

    train = stdlib_text("train", spec.train_bytes)
    calibration = byte_sequences(train, spec.seq_len, calibration_sequences)
    evaluation = byte_sequences(stdlib_text("heldout"), spec.seq_len, evaluation_sequences)
    return train, calibration, evaluation


def tiny_lm_table(
    spec,
    rates: Sequence[float],
    calibration_sequences: int,
    evaluation_sequences: int,
    seeds: Sequence[int] = (0,),
    baseline_seeds: int | None = None,
    finetune_steps: int = 0,
    finetune_rate: float = 2.0,
    finetune_bytes: int = 2_000_000,
    finetune_lr: float = 5e-4,
    finetune_min_lr: float = 5e-6,
) -> tuple[Table, Table]:
    """Benchmark (c): every method on the tiny byte-level Llama, one model per seed.

    Args:
        spec: The :class:`~watersic.tiny_llm.TinyLlamaSpec` pretrained here, once per seed.
        rates: Target rates (bits per weight).
        calibration_sequences: Calibration windows of ``spec.seq_len`` training bytes.
        evaluation_sequences: Held-out windows for perplexity and KL.
        seeds: Seeds of the pretraining (and of WaterSIC-FT's shuffle).
        baseline_seeds: Run the methods other than WaterSIC and Huffman-GPTQ (GPTQ, RTN, the
            anchors) on the first ``baseline_seeds`` seeds only (None: on all).
        finetune_steps: WaterSIC-FT steps at ``finetune_rate`` on the first seed's model
            (0: no WaterSIC-FT row).
        finetune_rate: Rate of the WaterSIC quantization that WaterSIC-FT trains.
        finetune_bytes: WaterSIC-FT reads the training text from byte 500,000 up to this.
        finetune_lr, finetune_min_lr: WaterSIC-FT's AdamW cosine schedule.

    Returns:
        The summary (mean ± sample standard deviation over the seeds, WaterSIC's KL over
        Huffman-GPTQ's per seed) and the per-seed table.
    """
    from watersic.evaluation import lm_report
    from watersic.lightning import finetune_rescalers
    from watersic.text_corpus import text_hash

    seeds = list(seeds)
    train, calibration, evaluation = tiny_lm_data(spec, calibration_sequences, evaluation_sequences)
    runs = Table(
        "(c) per seed",
        ["seed", "rate_target", "method", "rate", "file", "perplexity", "kl_bits", "time"],
        units={"rate": "bits/w", "file": "bits/w", "kl_bits": "bits/token", "time": "s"},
    )  # fmt: skip
    train_times = []
    for k, seed in enumerate(seeds):
        fp, train_time = trained_tiny_llama(spec, seed)
        train_times.append(train_time)
        base = lm_report(fp, fp, evaluation)
        runs.add_row(seed=seed, rate_target=None, method="full precision", rate=32.0,
                     perplexity=base["perplexity"], kl_bits=0.0)  # fmt: skip
        for rate in rates:
            for method in MODEL_METHODS:
                if not anchors.supports(method, rate) or (
                    method not in ENTROPY_METHODS and baseline_seeds is not None
                    and k >= baseline_seeds
                ):  # fmt: skip
                    continue
                t0 = time.perf_counter()
                art = quantize_for_benchmark(fp, calibration, rate, method)
                elapsed = time.perf_counter() - t0
                res = lm_report(fp, art.model, evaluation)
                runs.add_row(seed=seed, rate_target=rate, method=method, rate=art.rate,
                             file=art.coded_rate(), perplexity=res["perplexity"],
                             kl_bits=res["kl_bits"], time=elapsed)  # fmt: skip
    if finetune_steps:
        fp, _ = trained_tiny_llama(spec, seeds[0])
        t0 = time.perf_counter()
        art = quantize_for_benchmark(fp, calibration, finetune_rate, "watersic")
        student = finetune_rescalers(
            fp, art, finetune_steps, spec.seq_len, batch_size=16, lr=finetune_lr,
            min_lr=finetune_min_lr, train_offset=500_000, train_bytes=finetune_bytes, seed=seeds[0],
        )  # fmt: skip
        res = lm_report(fp, student, evaluation)
        runs.add_row(seed=seeds[0], rate_target=finetune_rate,
                     method=f"watersic-ft ({finetune_steps} steps)", rate=art.rate,
                     file=art.coded_rate(),
                     perplexity=res["perplexity"], kl_bits=res["kl_bits"],
                     time=time.perf_counter() - t0)  # fmt: skip
    summary = seed_summary(
        runs,
        f"(c) Tiny byte-level Llama ({spec.num_layers} layers, hidden {spec.hidden_size}, "
        f"FFN {spec.intermediate_size}): held-out perplexity and KL, {len(seeds)} seed(s)",
    )
    summary.notes = (
        f"Seeds {seeds}: one model pretrained per seed for {spec.train_steps} steps "
        f"(mean {sum(train_times) / len(train_times):.0f} s) on {len(train)} bytes of CPython "
        f"stdlib source (hash {text_hash(train)}); calibration {calibration_sequences} x "
        f"{spec.seq_len} training bytes, evaluation {evaluation_sequences} x {spec.seq_len} bytes "
        "of held-out stdlib files. Cells: mean ± sample standard deviation over the seeds (one "
        "seed: the value; seeds says how many)."
        + (
            f" GPTQ, RTN and the anchors ran on the first {baseline_seeds} seed(s) only."
            if baseline_seeds is not None and baseline_seeds < len(seeds)
            else ""
        )
        + (
            " vs_huffman: WaterSIC's KL / Huffman-GPTQ's KL at the same rate, per "
            "seed, then mean ± sd; wins: seeds where WaterSIC's KL <= Huffman-GPTQ's. rate: bits per "
            "quantized weight with side information, as each method targets it (block linears "
            "only; embeddings and LM head stay fp32): WaterSIC's coded accounting is its file size, "
            "Huffman-GPTQ's is the authors' pooled entropy + fp16 row scales, which leaves its count "
            "table out. file: bits per weight of the stored bitstreams / packed codes (anchors: "
            "their rate). GPTQ/RTN use group 128 (one group per row here when a layer has fewer "
            "inputs)."
        )
        + (
            f" watersic-ft (seed {seeds[0]} only): WaterSIC at {finetune_rate:g} bits, then only "
            f"its rescalers trained for {finetune_steps} AdamW steps (batch 16, lr "
            f"{finetune_lr:g} cosine to {finetune_min_lr:g}) by KL to the full-precision model "
            f"on training bytes 500,000-{finetune_bytes:,} (the WaterSICFinetune LightningModule)."
            if finetune_steps
            else ""
        )
    )
    return summary, runs


def mean_sd(values: Sequence[float]) -> str:
    """``"m ± sd"`` (sample standard deviation) of ``values``; one value is printed alone.

    >>> mean_sd([1.0, 2.0, 3.0])
    '2 ± 1'
    """
    import statistics

    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.4g}"
    return f"{m:.4g} ± {statistics.stdev(values):.2g}"


def seed_summary(runs: Table, title: str) -> Table:
    """Collapse a per-seed table into one row per (rate, method): mean ± sd over seeds, and for
    WaterSIC its KL over Huffman-GPTQ's (per seed) and the seeds where it is not above."""
    groups: dict[tuple, list[dict]] = {}
    for r in runs.rows:
        groups.setdefault((r["rate_target"], r["method"]), []).append(r)
    hg = {(r["rate_target"], r["seed"]): r["kl_bits"] for r in runs.rows
          if r["method"] == "huffman-gptq"}  # fmt: skip
    table = Table(
        title,
        [
            "rate_target",
            "method",
            "seeds",
            "rate",
            "file",
            "perplexity",
            "kl_bits",
            "vs_huffman",
            "wins",
        ],
        units={"rate": "bits/w", "file": "bits/w", "kl_bits": "bits/token"},
    )
    for (rate, method), rows in groups.items():
        ratio = [r["kl_bits"] / hg[(rate, r["seed"])] for r in rows
                 if method == "watersic" and hg.get((rate, r["seed"]))]  # fmt: skip
        wins = sum(x <= 1.0 for x in ratio)
        table.add_row(
            rate_target=rate, method=method, seeds=len(rows),
            rate=sum(r["rate"] for r in rows) / len(rows),
            file=sum(r["file"] for r in rows) / len(rows) if rows[0].get("file") else None,
            perplexity=mean_sd([r["perplexity"] for r in rows]),
            kl_bits=mean_sd([r["kl_bits"] for r in rows]),
            vs_huffman=mean_sd(ratio) if ratio else None,
            wins=f"{wins}/{len(ratio)}" if ratio else None,
        )  # fmt: skip
    return table


def method_figure(table: Table, ys: Sequence[str], title: str, x: str = "rate",
                  logy: Sequence[str] = ("layer_rel_mse", "kl_bits")):  # fmt: skip
    """One panel per metric in ``ys`` against ``x``, a curve per method (full precision left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in table.rows if r["method"] != "full precision"]
    if rows and "seed" in rows[0]:  # per-seed rows: plot the mean over seeds
        acc: dict[tuple, list[dict]] = {}
        for r in rows:
            acc.setdefault((r["method"], r["rate_target"]), []).append(r)
        rows = [{"method": m, **{k: sum(r[k] for r in rs) / len(rs) for k in (x, *ys)}}
                for (m, _), rs in acc.items()]  # fmt: skip
    fig, axes = plt.subplots(1, len(ys), figsize=(4.5 * len(ys), 3.4), squeeze=False)
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for ax, y in zip(axes.flat, ys, strict=True):
        for m in methods:
            pts = sorted((r[x], r[y]) for r in rows if r["method"] == m and r.get(y) is not None)
            if pts:
                xs, vs = zip(*pts, strict=True)
                ax.plot(xs, vs, "o-", label=m, ms=3)
        if y in logy:
            ax.set_yscale("log")
        ax.set_xlabel("bits / weight")
        ax.set_ylabel(y)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(title)
    return fig
