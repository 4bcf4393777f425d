"""Command line of watersic: ``watersic --help``.

``fit/validate/test/predict`` (LightningCLI in subclass mode over the package's two trainable
parts in :mod:`watersic.lightning`: ``WaterSICFinetune`` (WaterSIC-FT) and ``TinyLlamaPretrain``
(pretraining of the tiny LM), with ``ByteTextDataModule``; one YAML per experiment in
``configs/``), ``reproduce`` (:data:`watersic.reproduce.EXPERIMENT`), and the package commands ``quantize`` (a whole model), ``rd-curve`` (one synthetic layer against the
IT limit), ``inspect`` (per-layer report of a saved artifact) and ``benchmark`` (seconds and
peak memory of WaterSIC vs GPTQ on one large layer).

Nothing heavy is imported until a command runs: ``watersic --help`` reads the commands' summaries
without importing them, and ``rd-curve`` never imports Lightning.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER

Method = Literal["watersic", "huffman-gptq", "gptq", "rtn", "hqq", "quanto"]


def _load_model(model: str, seed: int, quick: bool):
    """``tiny-llama`` (pretrained here), ``minilm`` (bench extra) or a hub id / local path."""
    from watersic.text_corpus import byte_sequences, stdlib_text

    if model == "tiny-llama":
        from watersic.lightning import train_tiny_llama
        from watersic.tiny_llm import TinyLlamaSpec

        spec = (
            TinyLlamaSpec(hidden_size=64, intermediate_size=176, num_layers=2, num_heads=2,
                          seq_len=64, train_steps=40, train_bytes=200_000)
            if quick
            else TinyLlamaSpec()
        )  # fmt: skip
        fp = train_tiny_llama(spec, seed)
        cal = byte_sequences(stdlib_text("train", spec.train_bytes), spec.seq_len, 64)
        ev = byte_sequences(stdlib_text("heldout"), spec.seq_len, 64)
        return fp, cal, ev
    if model == "minilm":
        from watersic import minilm
        from watersic.text_corpus import stdlib_docstrings

        try:
            fp, tok = minilm.load_minilm()
        except ImportError as err:
            raise UsageError(str(err)) from None
        docs = list(stdlib_docstrings())
        return fp, minilm.calibration_windows(tok, docs[:1024], 128), None
    from icml26_shared.hub import HubUnavailableError

    from watersic.finetune import load_causal_lm

    try:
        fp = load_causal_lm(model)
    except HubUnavailableError as err:
        raise UsageError(" ".join(str(err).split())) from None
    except OSError as err:
        raise UsageError(f"cannot load model {model!r}: {str(err).splitlines()[0]}") from None
    return fp, None, None


def _hub_windows(model, tok, vocab, corpus, purpose, seq_len, n, random):
    """Token windows ``(n, seq_len)`` of ``corpus`` (a name or the user's own text file/folder)
    under the model's own tokenizer ``tok``."""
    from icml26_shared.hub import HubUnavailableError

    from watersic.lm_data import corpus_text, token_windows

    try:
        text = corpus_text(corpus, purpose)
        ids = token_windows(
            lambda t: tok(t, add_special_tokens=False)["input_ids"], text, seq_len, n, random
        )
    except HubUnavailableError as err:
        raise UsageError(" ".join(str(err).split())) from None
    except (OSError, ValueError) as err:
        raise UsageError(f"{purpose} data for {model!r}: {str(err).splitlines()[0]}") from None
    if vocab and int(ids.max()) >= vocab:
        raise UsageError(f"the tokenizer of {model!r} gives ids beyond the model's vocabulary")
    return ids


def _tokenizer(model: str):
    """The model's own tokenizer, with the hub/offline errors as one line."""
    from icml26_shared.hub import HubUnavailableError

    from watersic.finetune import load_tokenizer

    try:
        return load_tokenizer(model)
    except HubUnavailableError as err:
        raise UsageError(" ".join(str(err).split())) from None
    except (OSError, ValueError) as err:
        raise UsageError(
            f"cannot load the tokenizer of {model!r}: {str(err).splitlines()[0]}"
        ) from None


def quantize(
    model: str = "tiny-llama",
    rate: float = 3.0,
    method: Method = "watersic",
    out: Path | None = None,
    accounting: Literal["pooled", "per_column", "coded"] = "coded",
    group_size: int | None = None,
    damping: float | None = None,
    calibration: str = "stdlib",
    calibration_tokens: int = 8192,
    evaluation: str | None = None,
    seq_len: int = 512,
    quick: bool = False,
    seed: int = 0,
    attention_weighted: bool = False,
    adaptive_blend: bool = False,
    blend_mlp: bool = False,
    zero_rows: str | None = None,
) -> None:
    """Quantize a whole model and save safetensors + a JSON manifest.

    Args:
        model: ``tiny-llama`` (pretrained here on CPython's sources), ``minilm`` (bench
            extra), ``synthetic[:SPECTRUM]`` (one 1024x128 Gaussian layer, default spectrum
            wishart) or a ``transformers`` causal-LM id / local folder (Llama-style: its
            repeated blocks hold the linear layers).
        rate: Target bits per weight (entropy methods) or grid bits (gptq/rtn/hqq/quanto).
        method: Quantizer.
        out: Folder for the artifact (default: print the report only); ``watersic evaluate
            --artifact OUT`` reloads it.
        accounting: WaterSIC entropy accounting.
        group_size: GPTQ/RTN/HQQ group size.
        damping: Damping of the second moment as a fraction of its mean diagonal (default:
            each method's own: WaterSIC 3e-2, GPTQ 1e-2).
        calibration: Calibration text of a hub/local model: your own ``.txt`` file, ``.jsonl``
            file (a ``text`` field per line) or folder (``*.txt`` files or a saved
            ``datasets`` folder), or a corpus name: ``stdlib`` (CPython's sources, offline),
            ``wikitext2``, ``c4`` or ``redpajama`` (the paper's; need the hub or a local
            datasets cache). Tokenized by the model's own tokenizer.
        calibration_tokens: Calibration tokens of a hub model (random windows of
            ``seq_len``; the paper uses 128 x 2048).
        evaluation: Text (same forms as ``calibration``; a corpus name takes its held-out
            split) for perplexity and KL of a hub/local model; none by default.
        seq_len: Window length of a hub model's calibration and evaluation.
        quick: Small tiny-llama (seconds instead of minutes).
        seed: Seed of the tiny model's pretraining.
        attention_weighted: WaterSIC: weight the q/k/v calibration tokens by the attention
            they receive (the authors' recipe).
        adaptive_blend: WaterSIC: golden-section blend of the standard and drift-corrected
            q/k/v targets, scored at the o_proj input.
        blend_mlp: WaterSIC: the same blend for gate/up, scored at the down_proj input.
        zero_rows: Outlier rows to zero, ``"BLOCK.LINEAR:ROW,ROW;..."`` (e.g.
            ``"0.mlp.gate_proj:5,7;0.mlp.up_proj:5,7"``); the features they feed become dead.
    """
    from watersic.evaluation import lm_report
    from watersic.model_quantization import check_method, quantize_model
    from watersic.validation import check_rate

    try:
        check_rate(rate)
    except ValueError as err:
        raise UsageError(str(err)) from None
    check_method(method)
    from watersic.lm_data import check_corpus

    try:
        check_corpus(calibration)
        if evaluation is not None:
            check_corpus(evaluation)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if seq_len < 2 or calibration_tokens < seq_len:
        raise UsageError("need seq_len >= 2 and calibration_tokens >= seq_len")
    if damping is not None and not damping >= 0:
        raise UsageError(f"damping must be >= 0, got {damping}")
    if out is not None:
        _check_out(Path(out))
    rows = _zero_rows(zero_rows)
    if model.startswith("synthetic"):
        _quantize_synthetic(model, rate, method, out, accounting, group_size, seed)
        return
    builtin = model in ("tiny-llama", "minilm")
    if builtin and (calibration != "stdlib" or evaluation is not None):
        raise UsageError(
            f"--model {model} calibrates and evaluates on its own text; --calibration and "
            "--evaluation apply to a hub id or a local model folder"
        )
    fp, cal, ev = _load_model(model, seed, quick)
    tok, source = None, {"model": model, "seed": seed, "quick": quick}
    if cal is None:  # hub/local model: its own tokenizer on the chosen text
        local = Path(model).exists()
        source = {"model": str(Path(model).resolve()) if local else model}
        tok = _tokenizer(model)
        vocab = int(getattr(fp.config, "vocab_size", 0) or 0)
        n_cal = calibration_tokens // seq_len
        cal = _hub_windows(model, tok, vocab, calibration, "calibration", seq_len, n_cal, True)
        if evaluation is not None:
            ev = _hub_windows(model, tok, vocab, evaluation, "evaluation", seq_len, 64, False)
    try:
        art = quantize_model(
            fp, cal, rate, method, accounting=accounting, group_size=group_size,
            damping=damping, progress=True, attention_weighted=attention_weighted,
            adaptive_blend=adaptive_blend, blend_mlp=blend_mlp, zero_rows=rows,
        )  # fmt: skip
    except ValueError as err:  # e.g. a second moment not positive definite even after damping
        raise UsageError(str(err).splitlines()[0]) from None
    art.source = source
    print(f"{method}: {len(art.layers)} layers, {art.rate:.4f} bits/weight (target {rate:g})")
    if ev is not None:
        res = lm_report(fp, art.model, ev)
        base = lm_report(fp, fp, ev)
        print(
            f"held-out perplexity {res['perplexity']:.4f} (full precision "
            f"{base['perplexity']:.4f}), KL {res['kl_bits']:.4f} bits/token"
        )
    if out is not None:
        art.save(out, tokenizer=tok)
        print(f"wrote {out}")


def _zero_rows(spec: str | None) -> dict[str, list[int]] | None:
    """Parse ``"0.mlp.gate_proj:5,7;0.mlp.up_proj:5,7"`` into ``{name: rows}``."""
    if not spec:
        return None
    rows: dict[str, list[int]] = {}
    for part in spec.split(";"):
        name, sep, idx = part.strip().partition(":")
        try:
            if not sep or not name:
                raise ValueError
            rows[name] = [int(i) for i in idx.split(",")]
        except ValueError:
            raise UsageError(
                f"--zero_rows: cannot read {part!r}; write BLOCK.LINEAR:ROW,ROW;... "
                "(e.g. 0.mlp.gate_proj:5,7)"
            ) from None
    return rows


def _check_out(out: Path) -> None:
    from watersic.model_quantization import check_artifact_target

    try:
        check_artifact_target(out)
    except ValueError as e:
        raise UsageError(f"--out {e}") from None


def evaluate(
    artifact: Path,
    text: str = "stdlib",
    model: str | None = None,
    seq_len: int = 512,
    windows: int = 64,
    out: Path | None = None,
) -> None:
    """Perplexity of a saved artifact and its KL to the full-precision model on a text.

    Args:
        artifact: Folder written by ``watersic quantize --out``.
        text: Your own ``.txt``/``.jsonl`` file or folder, or a corpus name (``stdlib``,
            ``wikitext2``, ``c4``, ``redpajama``: its held-out split).
        model: The full-precision model (hub id or local folder); default: the one the
            artifact records (a ``tiny-llama`` is retrained from its recorded seed).
        seq_len: Window length in tokens (bytes for the tiny model).
        windows: At most this many consecutive non-overlapping windows.
        out: Folder for ``result.json`` (default: print only).
    """
    from icml26_shared.results import atomic_write_text

    from watersic.evaluation import lm_report
    from watersic.lm_data import check_corpus, corpus_text
    from watersic.model_quantization import load_quantized

    manifest_path = Path(artifact) / "manifest.json"
    if not manifest_path.is_file():
        raise UsageError(f"{str(manifest_path)!r} not found: not a saved watersic artifact")
    if seq_len < 2 or windows < 1:
        raise UsageError("need seq_len >= 2 and windows >= 1")
    try:
        check_corpus(text)
    except ValueError as err:
        raise UsageError(str(err)) from None
    manifest = json.loads(manifest_path.read_text())
    source = manifest.get("source") or {}
    name = model or source.get("model")
    if name is None:
        raise UsageError("the artifact does not record its model; pass --model")
    try:
        quantized = load_quantized(artifact)
    except (OSError, ValueError, KeyError) as err:
        raise UsageError(f"cannot load {artifact}: {str(err).splitlines()[0]}") from None
    if name == "tiny-llama":
        fp, _, _ = _load_model(name, int(source.get("seed", 0)), bool(source.get("quick")))
    else:
        fp, _, _ = _load_model(name, 0, False)
    longest = int(getattr(fp.config, "max_position_embeddings", 0) or 0)
    if longest and seq_len > longest:
        print(f"note: windows of {longest} tokens, the model's max_position_embeddings")
        seq_len = longest
    if name == "tiny-llama":  # byte tokens
        from watersic.text_corpus import byte_sequences, stdlib_text

        try:
            raw = (
                stdlib_text("heldout")
                if text == "stdlib"
                else corpus_text(text, "evaluation").encode("utf-8")
            )
            ids = byte_sequences(raw, seq_len, windows)
        except ValueError as err:
            raise UsageError(f"evaluation text: {err}") from None
    else:
        has_tok = (Path(artifact) / "tokenizer_config.json").exists()
        tok = _tokenizer(str(artifact) if has_tok else name)
        vocab = int(getattr(fp.config, "vocab_size", 0) or 0)
        ids = _hub_windows(name, tok, vocab, text, "evaluation", seq_len, windows, False)
    res = lm_report(fp, quantized, ids)
    base = lm_report(fp, fp, ids)
    result = {
        "artifact": str(artifact), "model": name, "text": text, "method": manifest["method"],
        "rate": manifest["rate"], "windows": int(ids.shape[0]), "seq_len": int(ids.shape[1]),
        "perplexity": res["perplexity"], "perplexity_full_precision": base["perplexity"],
        "kl_bits": res["kl_bits"],
    }  # fmt: skip
    print(
        f"{manifest['method']} at {manifest['rate']:.4f} bits/weight on {ids.shape[0]} x "
        f"{ids.shape[1]} tokens: perplexity {res['perplexity']:.4f} (full precision "
        f"{base['perplexity']:.4f}), KL {res['kl_bits']:.5f} bits/token"
    )
    if out is not None:
        path = atomic_write_text(Path(out) / "result.json", json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")


def _quantize_synthetic(model, rate, method, out, accounting, group_size, seed) -> None:
    """``quantize --model synthetic[:SPECTRUM]``: one Gaussian layer, report + bitstream."""
    import torch

    from watersic import theory
    from watersic.model_quantization import _quantize_layer
    from watersic.quantized_matrix import QuantizedMatrix
    from watersic.synthetic import SPECTRA, eigenvalues, gaussian_weights, spectrum_covariance

    spectrum = model.partition(":")[2] or "wishart"
    if spectrum not in SPECTRA:
        raise UsageError(f"unknown spectrum {spectrum!r}; choose one of {', '.join(SPECTRA)}")
    g = torch.Generator().manual_seed(seed)
    W = gaussian_weights(1024, 128, g)
    S = spectrum_covariance(spectrum, 128, g)
    gs = group_size
    q = _quantize_layer(method, W, S, S, S, None, rate, False, accounting, gs, True)
    a, n = W.shape
    side = getattr(q, "side_bits", None)
    entropy_rate = q.rate - side / (a * n) if side is not None else q.rate
    gap = theory.rate_gap(entropy_rate, q.distortion, eigenvalues(S))
    row = {"layer": f"synthetic:{spectrum}", **q.summary(), "gap_bits": gap}
    coded = None
    if isinstance(q, QuantizedMatrix):
        blob = q.to_bytes()
        coded = 8 * len(blob) / (a * n)
        row["coded_rate"] = coded
        if out is not None:
            Path(out).mkdir(parents=True, exist_ok=True)
            (Path(out) / "layer.wsic").write_bytes(blob)
    coded_txt = f", bitstream {coded:.4f} bits/weight" if coded is not None else ""
    print(
        f"{method} on synthetic:{spectrum} {a}x{n}: {q.rate:.4f} bits/weight (target {rate:g})"
        f"{coded_txt}, D/D_null {q.relative_distortion:.4e}, gap to the IT limit {gap:.3f} bits"
    )
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        manifest = {
            "method": method, "target_rate": rate, "rate": q.rate, "coded_rate": coded,
            "layers": [row],
        }  # fmt: skip
        (Path(out) / "manifest.json").write_text(json.dumps(manifest, indent=1, default=str))
        print(f"wrote {out}")


def rd_curve(
    spectrum: str = "wishart",
    rows: int = 1024,
    columns: int = 128,
    rates: list[int] | None = None,
    anchors: bool = True,
    seed: int = 0,
) -> None:
    """Rate gap to the IT limit of every method on one synthetic Gaussian layer.

    Args:
        spectrum: Covariance family (identity, power1, power2, rotated_power2, diag_1e2,
            diag_1e4, wishart).
        rows: Output features a.
        columns: Input features n.
        rates: Rates in bits (default 1 2 3 4).
        anchors: Include the HQQ / quanto anchors when installed.
        seed: Seed of W and of the covariance.
    """
    from watersic.rd_curve import rd_rows
    from watersic.synthetic import SPECTRA

    if spectrum not in SPECTRA:
        raise UsageError(f"unknown spectrum {spectrum!r}; choose one of {', '.join(SPECTRA)}")
    if rows < 1 or columns < 1:
        raise UsageError("rows and columns must be positive")
    for rate in rates or [1, 2, 3, 4]:
        if not 1 <= rate <= 8:
            raise UsageError(f"rate {rate} out of range; use integers 1-8")
        for r in rd_rows(spectrum, rate, rows, columns, seed, with_anchors=anchors):
            print(
                f"R={rate} {r['method']:26s} rate {r['rate']:.3f}  D {r['D_dB']:7.2f} dB  "
                f"gap {r['gap']:.3f} bits"
            )


def inspect(artifact: Path) -> None:
    """Print the per-layer JSON report of a saved artifact.

    Args:
        artifact: Folder written by ``watersic quantize --out``.
    """
    manifest = Path(artifact) / "manifest.json"
    if not manifest.is_file():
        raise UsageError(f"{str(manifest)!r} not found: not a saved watersic artifact")
    data = json.loads(manifest.read_text())
    print(json.dumps({k: data[k] for k in ("method", "target_rate", "rate", "coded_rate")}))
    for row in data["layers"]:
        print(json.dumps(row))


def benchmark(size: int = 4096, rate: float = 4.0, repeats: int = 1, seed: int = 0) -> None:
    """Seconds and peak memory of WaterSIC vs our GPTQ on one size x size layer.

    Both run in the same process on the same layer; with several repeats the order alternates
    (GPTQ first, then WaterSIC first, ...) so a change of machine load hits both alike. Wall
    and CPU seconds are reported (medians and ranges); on a shared machine the CPU seconds are
    what the code costs.

    Args:
        size: Rows and columns of the layer (4096 in the issue).
        rate: WaterSIC target rate; GPTQ uses round(rate) bits, group 128.
        repeats: Timed repeats of each method (medians reported).
        seed: Seed of W and of the (Wishart) second moment.
    """
    import os
    import statistics
    import time

    import torch
    from icml26_shared.bench import peak_memory

    from watersic.gptq import gptq_quantize
    from watersic.synthetic import gaussian_weights, spectrum_covariance
    from watersic.validation import check_rate

    if size < 8:
        raise UsageError("size must be at least 8")
    if repeats < 1:
        raise UsageError("repeats must be at least 1")
    try:
        check_rate(rate)
    except ValueError as err:
        raise UsageError(str(err)) from None
    g = torch.Generator().manual_seed(seed)
    W = gaussian_weights(size, size, g)
    S = spectrum_covariance("wishart", size, g)
    gs = 128 if size % 128 == 0 else None
    load0 = os.getloadavg()[0]
    print(
        f"layer {size}x{size}, Wishart second moment, {torch.get_num_threads()} torch threads, "
        f"{repeats} repeat(s), load average {load0:.1f}"
    )
    methods = {
        "gptq": lambda: gptq_quantize(W, S, bits=round(rate), group_size=gs),
        "watersic": lambda: _quantize_matrix(W, S, rate),
    }
    wall: dict[str, list[float]] = {m: [] for m in methods}
    cpu: dict[str, list[float]] = {m: [] for m in methods}
    mem: dict[str, float] = dict.fromkeys(methods, 0.0)
    last = {}
    for rep in range(repeats):
        order = list(methods) if rep % 2 == 0 else list(methods)[::-1]
        for name in order:
            w0, c0 = time.perf_counter(), time.process_time()
            with peak_memory() as pm:
                last[name] = methods[name]()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
            mem[name] = max(mem[name], pm.delta_mb)
    for name in methods:
        q = last[name]
        print(
            f"  {name:9s} {statistics.median(wall[name]):8.2f} s wall "
            f"({min(wall[name]):.2f}-{max(wall[name]):.2f})  "
            f"{statistics.median(cpu[name]):8.2f} s CPU ({min(cpu[name]):.2f}-{max(cpu[name]):.2f})"
            f"  peak memory +{mem[name]:8.1f} MiB  rate {q.rate:.3f}  relative distortion "
            f"{q.relative_distortion:.3e}"
        )
    r_wall = statistics.median(wall["watersic"]) / statistics.median(wall["gptq"])
    r_cpu = statistics.median(cpu["watersic"]) / statistics.median(cpu["gptq"])
    print(
        f"  WaterSIC / GPTQ time ratio: {r_wall:.2f} (wall), {r_cpu:.2f} (CPU: what the code "
        f"costs on a shared machine); load average {load0:.1f} -> {os.getloadavg()[0]:.1f}"
    )


def _quantize_matrix(W, S, rate):
    from watersic.layer_quantizer import quantize_matrix

    return quantize_matrix(W, S, rate=rate)


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    # Subclass mode: a config names its module by class_path (watersic.lightning.WaterSICFinetune
    # or watersic.lightning.TinyLlamaPretrain, data watersic.lightning.ByteTextDataModule).
    return PaperCLI(
        PAPER,
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "quantize": "watersic.cli:quantize",
            "rd-curve": "watersic.cli:rd_curve",
            "evaluate": "watersic.cli:evaluate",
            "inspect": "watersic.cli:inspect",
            "benchmark": "watersic.cli:benchmark",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``watersic`` console script."""
    return build_cli().main(args)
