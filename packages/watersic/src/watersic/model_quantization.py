"""Whole-model quantization: ``quantize_model`` and the saved ``QuantizedArtifact``.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), whole-model pipeline:

1. the repeated blocks (the ``nn.ModuleList`` holding most ``nn.Linear`` layers) are processed
   in order; the inputs of block 0 are captured with a pre-hook (:func:`_block_inputs`);
2. inside a block the linears are grouped by shared input (q/k/v, then o, then gate/up, then
   down for Llama) in execution order (:func:`_linear_groups`);
3. for each group, forward hooks collect in float64, streaming over calibration batches, the
   second moment of the full-precision input x (FP model), of the quantized-path input xhat
   (model whose earlier layers are already quantized) and their cross moment, plus
   E[(R - Rhat) xhat^T] for the layers writing into the residual stream (o_proj, down_proj);
4. each layer is quantized with its rate from the global :class:`~watersic.rate_control.RateController`
   (WaterSIC uses the drift-corrected target; GPTQ/RTN use the quantized-path Hessian, as in
   sequential GPTQ), and its dequantized weights are put into the quantized-path model;
5. both paths are propagated to the next block. Embeddings and the LM head stay in full
   precision.

The result is saved as safetensors (entropy-coded bitstreams as uint8 tensors, fixed-rate
codes, full-precision remainder) plus a JSON manifest, and loads back into a ``transformers``
model with :func:`load_quantized`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from watersic.attention_importance import ATTENTION_EPS, block_attention_importance, mix
from watersic.attention_importance import supports as supports_attention
from watersic.gptq import gptq_quantize, huffman_gptq
from watersic.layer_quantizer import quantize_matrix
from watersic.quantized_matrix import QuantizedMatrix
from watersic.rate_control import RateController
from watersic.rtn import FixedRateMatrix, rtn_quantize
from watersic.second_moment import SecondMoment
from watersic.target_blend import BLEND_STEPS, blend_moments, golden_section, relative_mse
from watersic.validation import check_rate

#: Our quantizers, then the external anchors of the ``bench`` extra.
METHODS = ("watersic", "huffman-gptq", "gptq", "rtn", "hqq", "quanto")
ANCHOR_METHODS = ("hqq", "quanto")
ENTROPY_METHODS = ("watersic", "huffman-gptq")
#: Linear layers writing into the residual stream of a Llama-style block -> the norm whose
#: input is that residual.
RESIDUAL_SOURCES = {"o_proj": "input_layernorm", "down_proj": "post_attention_layernorm"}
FORMAT = "watersic-artifact/1"
#: WaterSIC's damping in whole models (fraction of the mean diagonal): 3e-2, the best of
#: 1e-4/1e-3/1e-2/3e-2/1e-1 on the tiny Llama at rates 1-4 (docs/recipe_defaults.md).
MODEL_DAMPING = 3e-2


def check_method(method: str) -> str:
    """Return ``method`` if known, else raise a clear ``ValueError``."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    if method in ANCHOR_METHODS:
        from watersic.anchors import available

        if not available(method):
            raise ValueError(
                f"method {method!r} needs the optional anchor library; "
                "install it with: pip install 'watersic[bench]'"
            )
    return method


class _Stop(Exception):
    pass


def find_blocks(model: nn.Module) -> tuple[str, nn.ModuleList]:
    """The ``nn.ModuleList`` of repeated blocks holding the most ``nn.Linear`` layers."""
    best: tuple[int, str, nn.ModuleList] | None = None
    for name, mod in model.named_modules():
        if isinstance(mod, nn.ModuleList) and len(mod) > 0:
            count = sum(isinstance(m, nn.Linear) for m in mod.modules())
            if count and (best is None or count > best[0]):
                best = (count, name, mod)
    if best is None:
        raise ValueError(
            f"{type(model).__name__} has no repeated blocks with nn.Linear layers to quantize"
        )
    return best[1], best[2]


def _block_inputs(
    model: nn.Module, blocks: nn.ModuleList, batches: Sequence[torch.Tensor]
) -> tuple[list[torch.Tensor], list[dict]]:
    """Hidden states entering block 0 and the keyword arguments the model passes to blocks."""
    inputs: list[torch.Tensor] = []
    kwargs: list[dict] = []

    def hook(module, args, kw):
        inputs.append(args[0] if args else kw.pop("hidden_states"))
        kwargs.append({**kw, **({"_extra_args": args[1:]} if len(args) > 1 else {})})
        raise _Stop

    handle = blocks[0].register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            for batch in batches:
                with contextlib.suppress(_Stop):
                    model(input_ids=batch)
    finally:
        handle.remove()
    return inputs, kwargs


def _call_block(block: nn.Module, x: torch.Tensor, kw: dict) -> torch.Tensor:
    kw = dict(kw)
    extra = kw.pop("_extra_args", ())
    out = block(x, *extra, **kw)
    return out[0] if isinstance(out, tuple) else out


def _linear_groups(block: nn.Module, x: torch.Tensor, kw: dict) -> list[list[str]]:
    """Names of the block's linears grouped by shared input, in execution order."""
    order: list[tuple[str, int]] = []
    alive: list[torch.Tensor] = []  # keep every input alive so that no id() is reused
    handles = []

    def hook(m, inp, out, name):
        alive.append(inp[0])
        order.append((name, id(inp[0])))

    for name, mod in block.named_modules():
        if isinstance(mod, nn.Linear):
            handles.append(
                mod.register_forward_hook(lambda m, inp, out, name=name: hook(m, inp, out, name))
            )
    try:
        with torch.no_grad():
            _call_block(block, x, kw)
    finally:
        for h in handles:
            h.remove()
    groups: list[list[str]] = []
    seen: dict[int, int] = {}
    done: set[str] = set()
    for name, key in order:
        if name in done:
            continue
        done.add(name)
        if key in seen and seen[key] == len(groups) - 1:
            groups[-1].append(name)
        else:
            seen[key] = len(groups)
            groups.append([name])
    return groups


def _capture(block: nn.Module, names: Iterable[str], x: torch.Tensor, kw: dict) -> dict:
    """Run ``block`` on ``x``; return inputs of the named submodules (first call each).

    The forward stops as soon as every named input is captured (the rest of the block is not
    needed), which halves the cost of the quantized-path captures on average.
    """
    mods = dict(block.named_modules())
    wanted = {name for name in names if name in mods}
    got: dict[str, torch.Tensor] = {}
    handles = []

    def hook(m, args, name):
        got.setdefault(name, args[0].detach())
        if wanted <= got.keys():
            raise _Stop

    for name in wanted:
        handles.append(
            mods[name].register_forward_pre_hook(lambda m, args, name=name: hook(m, args, name))
        )
    try:
        with torch.no_grad(), contextlib.suppress(_Stop):
            _call_block(block, x, kw)
    finally:
        for h in handles:
            h.remove()
    return got


def check_artifact_target(out: str | Path) -> None:
    """Refuse a target folder that a :meth:`QuantizedArtifact.save` would clobber.

    ``out`` may be missing, an empty folder or a previous artifact (a folder with
    ``manifest.json``); anything else raises ``ValueError`` naming it. The CLI calls this
    before a long quantization, ``save`` calls it again before writing.
    """
    out = Path(out)
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").exists())
    ):
        raise ValueError(f"{out} exists and is not an empty folder or a watersic artifact")


@dataclass
class QuantizedArtifact:
    """A quantized model: per-layer results, the achieved rate and what is needed to save it.

    ``layers`` maps module names (``model.layers.0.self_attn.q_proj``) to
    :class:`~watersic.quantized_matrix.QuantizedMatrix` (entropy-coded methods) or
    :class:`~watersic.rtn.FixedRateMatrix` (GPTQ, RTN).
    """

    method: str
    target_rate: float
    layers: dict[str, QuantizedMatrix | FixedRateMatrix] = field(default_factory=dict)
    model: nn.Module | None = None
    #: Where the full-precision model came from (hub id, local folder or ``tiny-llama``) and
    #: how (``seed``/``quick`` of the tiny model), so ``watersic evaluate`` can reload it.
    source: dict | None = None

    @property
    def rate(self) -> float:
        """Average bits per quantized weight (side information included)."""
        bits = sum(_numel(q) * q.rate for q in self.layers.values())
        return bits / max(sum(_numel(q) for q in self.layers.values()), 1)

    def coded_rate(self) -> float:
        """Bits per quantized weight of the real files (bitstreams; fixed-rate: packed bits)."""
        bits = 0.0
        for q in self.layers.values():
            bits += 8 * len(q.to_bytes()) if isinstance(q, QuantizedMatrix) else _numel(q) * q.rate
        return bits / max(sum(_numel(q) for q in self.layers.values()), 1)

    def summary(self) -> list[dict]:
        """One JSON-serialisable row per layer."""
        return [{"layer": name, **q.summary()} for name, q in self.layers.items()]

    def save(self, out: str | Path, tokenizer=None) -> Path:
        """Write ``quantized.safetensors``, ``full_precision.safetensors`` and ``manifest.json``
        (plus the model's tokenizer files when ``tokenizer`` is given) into the folder ``out``.

        The files are written into a temporary sibling folder that replaces ``out`` only when
        complete, so an interrupted save leaves no half-written artifact. An existing ``out``
        is replaced only if it is empty or a previous artifact.
        """
        import os
        import shutil
        import tempfile

        from safetensors.torch import save_file

        if self.model is None:
            raise ValueError("this artifact has no model attached; nothing to save")
        out = Path(out)
        check_artifact_target(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        final, out = out, Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(out, 0o777 & ~umask)  # mkdtemp's 0700 would otherwise stay on the artifact
        try:
            self._write(out, save_file, tokenizer)
            if final.exists():
                shutil.rmtree(final)
            os.replace(out, final)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
        return final

    def _write(self, out: Path, save_file, tokenizer) -> None:
        tensors: dict[str, torch.Tensor] = {}
        coded_bits: dict[str, float] = {}  # real stored bits per layer, next to its entropy
        for name, q in self.layers.items():
            if isinstance(q, QuantizedMatrix):
                blob = q.to_bytes()
                coded_bits[name] = 8.0 * len(blob)
                tensors[f"{name}.bitstream"] = torch.frombuffer(bytearray(blob), dtype=torch.uint8)
            elif q.method in ANCHOR_METHODS:
                # external anchors: their packed formats are private; store what they decode to
                tensors[f"{name}.dequantized"] = q.weight.to(torch.float32).contiguous()
            else:
                coded_bits[name] = _numel(q) * q.rate
                tensors[f"{name}.codes"] = q.codes.to(torch.int16).contiguous()
                tensors[f"{name}.scales"] = q.scales.to(torch.float16).contiguous()
                tensors[f"{name}.zeros"] = q.zeros.to(torch.int16).contiguous()
                if "perm" in q.info:
                    tensors[f"{name}.perm"] = q.info["perm"].to(torch.int32).contiguous()
        save_file(tensors, str(out / "quantized.safetensors"))
        quantized = {f"{n}.weight" for n in self.layers}
        fp = {
            k: v.detach().contiguous()
            for k, v in self.model.state_dict().items()
            if k not in quantized
        }
        save_file(_untie(fp), str(out / "full_precision.safetensors"))
        manifest = {
            "format": FORMAT,
            "method": self.method,
            "target_rate": self.target_rate,
            "rate": self.rate,
            "coded_rate": sum(coded_bits.values())
            / max(sum(_numel(q) for n, q in self.layers.items() if n in coded_bits), 1),
            "model_class": type(self.model).__name__,
            "source": self.source,
            "config": self.model.config.to_dict() if hasattr(self.model, "config") else None,
            "layers": [
                {**row, **({"coded_rate": coded_bits[row["layer"]] / _numel(self.layers[row["layer"]])}
                           if row["layer"] in coded_bits else {})}
                for row in self.summary()
            ],
        }  # fmt: skip
        (out / "manifest.json").write_text(json.dumps(_plain(manifest), indent=2) + "\n")
        if tokenizer is not None:
            tokenizer.save_pretrained(str(out))


def _untie(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    seen: dict[int, str] = {}
    out = {}
    for k, v in tensors.items():
        ptr = v.data_ptr()
        out[k] = v.clone() if ptr in seen else v
        seen[ptr] = k
    return out


def _plain(obj):
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if isinstance(obj, torch.dtype):
        return str(obj)
    return obj


def _numel(q) -> int:
    shape = q.shape if isinstance(q, QuantizedMatrix) else tuple(q.weight.shape)
    return int(shape[0] * shape[1])


def load_quantized(path: str | Path) -> nn.Module:
    """Rebuild a ``transformers`` model from a saved artifact (dequantized float32 weights)."""
    import transformers
    from safetensors.torch import load_file

    path = Path(path)
    manifest_path = path / "manifest.json"
    if not manifest_path.exists():
        raise FileNotFoundError(f"{manifest_path} not found: not a saved watersic artifact")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{manifest_path}: unknown artifact format {manifest.get('format')!r}")
    cls = getattr(transformers, manifest["model_class"])
    config_dict = dict(manifest["config"])
    config_cls = transformers.AutoConfig.for_model(config_dict.pop("model_type")).__class__
    model = cls(config_cls(**config_dict))
    state = load_file(str(path / "full_precision.safetensors"))
    qt = load_file(str(path / "quantized.safetensors"))
    for row in manifest["layers"]:
        name = row["layer"]
        if f"{name}.bitstream" in qt:
            W = QuantizedMatrix.from_bytes(qt[f"{name}.bitstream"].numpy().tobytes()).dequantize()
        elif f"{name}.dequantized" in qt:
            W = qt[f"{name}.dequantized"]
        else:
            W = _dequantize_fixed(qt, name, row)
        state[f"{name}.weight"] = W
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if "rotary" not in k]
    if missing or unexpected:
        raise ValueError(
            f"artifact does not match the model: missing {missing}, unexpected {unexpected}"
        )
    model.eval()
    return model


def _dequantize_fixed(qt: dict, name: str, row: dict) -> torch.Tensor:
    codes = qt[f"{name}.codes"].to(torch.float64)
    scales = qt[f"{name}.scales"].to(torch.float64)
    zeros = qt[f"{name}.zeros"].to(torch.float64)
    gs = int(row["group_size"])
    perm = qt.get(f"{name}.perm")
    a, n = codes.shape
    if perm is not None:
        codes = codes[:, perm.long()]
    groups = torch.arange(n) // gs
    W = scales[:, groups] * (codes - zeros[:, groups])
    if perm is not None:
        out = torch.empty_like(W)
        out[:, perm.long()] = W
        W = out
    return W.to(torch.float32)


def quantize_model(
    model: nn.Module,
    calibration: torch.Tensor | Sequence[torch.Tensor],
    rate: float,
    method: str = "watersic",
    *,
    batch_size: int = 8,
    drift_correction: bool = True,
    residual_compensation: bool = True,
    rate_control: bool = True,
    multipliers: dict[str, float] | None = None,
    accounting: str = "coded",
    group_size: int | None = None,
    rescalers: bool = True,
    damping: float | None = None,
    blocks: int | None = None,
    inplace: bool = False,
    progress: bool = False,
    attention_weighted: bool = False,
    attention_eps: float = ATTENTION_EPS,
    adaptive_blend: bool = False,
    blend_mlp: bool = False,
    blend_steps: int = BLEND_STEPS,
    zero_rows: dict[str, Sequence[int]] | None = None,
) -> QuantizedArtifact:
    """Quantize every linear layer of the model's repeated blocks, block by block.

    Parameters
    ----------
    model:
        A ``transformers`` model (causal LM or encoder) taking ``input_ids``.
    calibration:
        Token ids ``(N, T)`` or a sequence of such batches.
    rate:
        Target average bits per quantized weight (entropy methods) or bits of the grid
        (``gptq``/``rtn``: rounded to an integer; their rate adds scale overhead).
    method:
        ``watersic``, ``huffman-gptq``, ``gptq`` or ``rtn``.
    drift_correction:
        WaterSIC: minimise E||W x - What xhat||^2 with x from the FP model (Qronos-style target).
    residual_compensation:
        WaterSIC: o_proj/down_proj also cancel the error already in the residual stream.
    rate_control:
        Global controller (remaining bits / remaining parameters) instead of one fixed rate
        (entropy-coded methods only; fixed-grid methods always use ``round(rate)`` bits).
    multipliers:
        Per-weight-type rate multipliers for the controller, e.g. ``{"k_proj": 1.5}``.
    accounting:
        WaterSIC entropy accounting: ``coded`` (the default: the real file size, per-column
        models and scales included), ``pooled`` (the paper's) or ``per_column``.
    group_size:
        GPTQ/RTN/HQQ group size (None: per row for GPTQ/RTN, 64 for HQQ); a layer whose input
        count it does not divide uses one group per row (its ``group_size`` is in the summary).
    rescalers:
        WaterSIC row/column rescalers.
    damping:
        Damping (fraction of the mean diagonal) for WaterSIC / GPTQ / Huffman-GPTQ; None uses
        each method's default: WaterSIC :data:`MODEL_DAMPING` (3e-2; the single-layer
        ``quantize_matrix`` keeps the authors' 1e-4), GPTQ / Huffman-GPTQ 1e-2.
    blocks:
        Quantize only the first ``blocks`` repeated blocks (None: all); the later blocks stay in
        full precision and the rate is the average over the quantized layers. Used by the
        quick benchmarks.
    inplace:
        Quantize ``model`` itself instead of a copy.
    progress:
        Show a bar over the layers (elapsed time, current layer, peak memory) on a terminal,
        and one line per finished block on standard error otherwise.
    attention_weighted:
        WaterSIC: q/k/v moments weighted by the full-precision model's attention importance,
        mixed with the plain moments with weight ``attention_eps``
        (:mod:`watersic.attention_importance`; Llama-style blocks only). On in the authors'
        paper-reproduction commands; off by default here: it did not lower the tiny Llama's KL
        enough to pay for itself (``docs/recipe_defaults.md``, the ``ablation`` section).
    adaptive_blend:
        WaterSIC with drift correction: q/k/v quantized with the blend of the standard and
        drift-corrected moments whose o_proj input is closest to the full-precision one
        (golden-section search over ``blend_steps`` steps, :mod:`watersic.target_blend`). On in
        the authors' commands; off by default here (3x the quantization time for a few percent
        of KL on the tiny Llama, ``docs/recipe_defaults.md``).
    blend_mlp:
        The same blend for gate/up, scored at the down_proj input.
    zero_rows:
        Outlier rows to zero, ``{"<block>.<linear>": [rows]}`` (e.g. ``{"0.mlp.gate_proj":
        [5]}``); the down_proj columns they feed become dead features.

    Returns
    -------
    QuantizedArtifact
        Per-layer results; ``artifact.model`` is the quantized (dequantized-weight) model.
    """
    method = check_method(method)
    rate = check_rate(rate)
    if isinstance(calibration, torch.Tensor):
        if calibration.dim() != 2:
            raise ValueError(
                f"calibration must be token ids (N, T), got shape {tuple(calibration.shape)}"
            )
        batches = list(calibration.split(batch_size))
    else:
        batches = list(calibration)
    if not batches:
        raise ValueError("no calibration data")
    if blocks is not None and blocks < 1:
        raise ValueError(f"blocks must be at least 1, got {blocks}")
    fp_model = model
    q_model = model if inplace else copy.deepcopy(model)
    fp_model.eval()
    q_model.eval()
    prefix, fp_blocks = find_blocks(fp_model)
    _, q_blocks = find_blocks(q_model)
    n_blocks = len(fp_blocks) if blocks is None else min(blocks, len(fp_blocks))
    # Only the drift-corrected WaterSIC target needs the full-precision path (Sigma_x and the
    # cross moment); every other method (and WaterSIC without drift correction) uses only the
    # quantized-path second moment, so the full-precision path is neither captured nor
    # propagated for them.
    use_fp = method == "watersic" and drift_correction
    tokens = sum(b.numel() for b in batches)
    fp_in, kwargs = _block_inputs(fp_model, fp_blocks, batches)
    q_in = [x.clone() for x in fp_in]

    linears = [
        (f"{prefix}.{i}.{n}", m)
        for i, blk in enumerate(fp_blocks)
        if i < n_blocks
        for n, m in blk.named_modules()
        if isinstance(m, nn.Linear)
    ]
    total = sum(m.weight.numel() for _, m in linears)
    for key, rows in (zero_rows or {}).items():
        mod = dict(linears).get(f"{prefix}.{key}")
        if mod is None:
            raise ValueError(f"zero_rows: no linear layer {key!r} (write BLOCK.LINEAR, e.g. "
                             f"0.mlp.gate_proj)")  # fmt: skip
        if any(not 0 <= int(r) < mod.out_features for r in rows):
            raise ValueError(f"zero_rows: {key} has {mod.out_features} rows; got {list(rows)}")
    controller = RateController(rate, total, multipliers or {})
    artifact = QuantizedArtifact(method=method, target_rate=rate, model=q_model)
    fp_snapshot = copy.deepcopy(fp_blocks) if inplace else fp_blocks
    bar = LayerProgress(len(linears), n_blocks, enabled=progress)
    for b in range(n_blocks):
        fblk, qblk = fp_snapshot[b], q_blocks[b]
        groups = _linear_groups(fblk, fp_in[0], kwargs[0])
        # The full-precision path does not change while the block is quantized: capture the
        # inputs of every group (and of the residual norms) in one forward per batch.
        fp_names = [g[0] for g in groups] + list(RESIDUAL_SOURCES.values())
        fp_caps = (
            [_capture(fblk, fp_names, x, kw) for x, kw in zip(fp_in, kwargs, strict=True)]
            if use_fp
            else [None] * len(q_in)
        )
        for group in groups:
            mods = dict(fblk.named_modules())
            n_in = mods[group[0]].in_features
            if tokens < n_in:
                warnings.warn(
                    f"{tokens} calibration tokens for {n_in} input features: rank-deficient "
                    "second moment (use more calibration data)",
                    stacklevel=2,
                )
            res_names = {
                name: RESIDUAL_SOURCES[name.rsplit(".", 1)[-1]]
                for name in group
                if name.rsplit(".", 1)[-1] in RESIDUAL_SOURCES
                and RESIDUAL_SOURCES[name.rsplit(".", 1)[-1]] in mods
            }
            use_res = use_fp and residual_compensation and bool(res_names)
            out_dim = mods[group[0]].out_features
            # attention-weighted q/k/v moments (WaterSIC; Llama-style blocks only)
            use_attn = (
                method == "watersic" and attention_weighted and _is_qkv(group)
                and supports_attention(fblk)
            )  # fmt: skip
            acc = SecondMoment(n_in, cross=use_fp, residual_dim=out_dim if use_res else None)
            acc_w = SecondMoment(n_in, cross=use_fp) if use_attn else None
            probe = [group[0], *set(res_names.values())] if use_res else [group[0]]
            for got_fp, x_fp, x_q, kw in zip(fp_caps, fp_in, q_in, kwargs, strict=True):
                got_q = _capture(qblk, probe, x_q, kw)
                p = block_attention_importance(fblk, x_fp, kw) if use_attn else None
                if not use_fp:  # quantized-path moment only (tracked as "x")
                    acc.update(got_q[group[0]])
                    if use_attn:
                        acc_w.update(got_q[group[0]], weights=p)
                    continue
                res = None
                if use_res:
                    src = next(iter(res_names.values()))
                    res = got_fp[src] - got_q[src]
                acc.update(got_fp[group[0]], got_q[group[0]], res)
                if use_attn:
                    acc_w.update(got_fp[group[0]], got_q[group[0]], weights=p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the rank-deficiency warning was issued above
                if use_fp:
                    S, Sh, Sx, Rx = acc.sigma, acc.sigma_hat, acc.sigma_cross, acc.residual_cross
                    if use_attn:
                        S, Sh, Sx = (mix(w, u, attention_eps) for w, u in
                                     ((acc_w.sigma, S), (acc_w.sigma_hat, Sh), (acc_w.sigma_cross, Sx)))  # fmt: skip
                else:
                    Sh = acc.sigma if not use_attn else mix(acc_w.sigma, acc.sigma, attention_eps)
                    S, Sx, Rx = Sh, Sh, None
            qmods = dict(qblk.named_modules())
            weights = {}
            for name in group:
                W = mods[name].weight.detach().to(torch.float64)
                rows = zero_rows.get(f"{b}.{name}") if zero_rows else None
                if rows:
                    W = W.clone()
                    W[list(rows)] = 0.0  # outlier rows zeroed: the codes of a zero row are zero
                weights[name] = W
            next_input = _blend_next(group) if method == "watersic" and use_fp else None
            blended = None
            if next_input is not None and (
                (adaptive_blend and _is_qkv(group)) or (blend_mlp and not _is_qkv(group))
            ):
                blended = _blend_search(
                    fblk, qblk, group, next_input, weights, fp_in, q_in, kwargs,
                    {n: controller.next_rate(f"{prefix}.{b}.{n}", weights[n].numel())
                     if rate_control else rate for n in group},
                    S, Sh, Sx, accounting, rescalers, damping, blend_steps,
                )  # fmt: skip
            for name in group:
                full = f"{prefix}.{b}.{name}"
                W = weights[name]
                if blended is not None:
                    q = blended.results[name]
                else:
                    layer_rate = (
                        controller.next_rate(full, W.numel())
                        if rate_control and method in ENTROPY_METHODS
                        else rate
                    )
                    q = _quantize_layer(
                        method, W, S, Sh, Sx, Rx if (use_res and name in res_names) else None,
                        layer_rate, drift_correction, accounting, group_size, rescalers, damping,
                    )  # fmt: skip
                if blended is not None:
                    q.info = {**getattr(q, "info", {}), "blend_eps": blended.eps}
                controller.spend(W.numel(), q.rate)
                artifact.layers[full] = q
                bar.layer_done(full, q.rate)
                with torch.no_grad():
                    qmods[name].weight.copy_(q.dequantize(qmods[name].weight.dtype))
        with torch.no_grad():
            if use_fp and b + 1 < n_blocks:
                fp_in = [_call_block(fblk, x, kw) for x, kw in zip(fp_in, kwargs, strict=True)]
            if b + 1 < n_blocks:
                q_in = [_call_block(qblk, x, kw) for x, kw in zip(q_in, kwargs, strict=True)]
            if not use_fp:
                fp_in = q_in  # only fp_in[0] is read (to find the next block's linear groups)
        bar.block_done(b)
    bar.close()
    return artifact


class LayerProgress:
    """Progress of :func:`quantize_model`: a tqdm bar over the layers on a terminal (elapsed
    time, current layer and its rate, peak resident memory), one line per finished block on
    standard error when it is not a terminal (logs), nothing when ``enabled`` is False."""

    def __init__(self, layers: int, blocks: int, enabled: bool = True) -> None:
        import sys
        import time

        from icml26_shared.progress import progress_enabled
        from tqdm.auto import tqdm

        self.enabled, self.blocks, self.layers = enabled, blocks, layers
        self._t0, self._done, self._stderr = time.perf_counter(), 0, sys.stderr
        self._bar = tqdm(
            total=layers, desc="quantize", unit="layer", leave=False,
            disable=not (enabled and progress_enabled()),
        )  # fmt: skip
        self._lines = enabled and self._bar.disable

    @staticmethod
    def peak_mb() -> float:
        """Peak resident memory of this process so far, in MiB."""
        import resource
        import sys

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return kb / (2**20 if sys.platform == "darwin" else 2**10)

    def layer_done(self, name: str, rate: float) -> None:
        self._done += 1
        short = ".".join(name.split(".")[-3:])
        self._bar.set_postfix_str(f"{short} {rate:.2f} b/w, peak {self.peak_mb():.0f} MiB")
        self._bar.update()

    def block_done(self, b: int) -> None:
        import time

        if self._lines:
            print(
                f"quantize: block {b + 1}/{self.blocks} done ({self._done}/{self.layers} layers, "
                f"{time.perf_counter() - self._t0:.1f} s, peak memory {self.peak_mb():.0f} MiB)",
                file=self._stderr,
                flush=True,
            )

    def close(self) -> None:
        self._bar.close()


def _is_qkv(group: Sequence[str]) -> bool:
    return any(name.rsplit(".", 1)[-1] == "q_proj" for name in group)


#: Group leader -> the linear whose input the adaptive blend scores (the next layer's input).
BLEND_NEXT = {"q_proj": "o_proj", "gate_proj": "down_proj"}


def _blend_next(group: Sequence[str]) -> str | None:
    for name in group:
        parent, _, short = name.rpartition(".")
        if short in BLEND_NEXT:
            return f"{parent}.{BLEND_NEXT[short]}" if parent else BLEND_NEXT[short]
    return None


@dataclass
class _Blended:
    eps: float
    results: dict


def _blend_search(fblk, qblk, group, next_input, weights, fp_in, q_in, kwargs, rates, S, Sh, Sx,
                  accounting, rescalers, damping, steps):  # fmt: skip
    """Golden-section search of the blend ``eps`` of :mod:`watersic.target_blend`.

    Each evaluation quantizes the whole group with the blended moments (each layer at its
    fair-share rate), puts it into the quantized-path block and scores the relative MSE of
    ``next_input``'s input against the full-precision block; the best evaluation's layers are
    returned as they are (no second quantization).
    """
    qmods = dict(qblk.named_modules())
    if next_input not in qmods:
        return None
    ref = [
        _capture(fblk, [next_input], x, kw)[next_input] for x, kw in zip(fp_in, kwargs, strict=True)
    ]
    saved = {n: qmods[n].weight.detach().clone() for n in group}
    found: dict[float, dict] = {}

    def score(eps: float) -> float:
        Sh_e, Sx_e = blend_moments(S, Sh, Sx, eps)
        found[eps] = {
            n: _quantize_layer("watersic", weights[n], S, Sh_e, Sx_e, None, rates[n], True,
                               accounting, None, rescalers, damping)
            for n in group
        }  # fmt: skip
        with torch.no_grad():
            for n in group:
                qmods[n].weight.copy_(found[eps][n].dequantize(qmods[n].weight.dtype))
        est = [
            _capture(qblk, [next_input], x, kw)[next_input]
            for x, kw in zip(q_in, kwargs, strict=True)
        ]
        return relative_mse(ref, est)

    try:
        res = golden_section(score, steps)
    finally:
        with torch.no_grad():
            for n in group:
                qmods[n].weight.copy_(saved[n])
    return _Blended(res.eps, found[res.eps])


def _quantize_layer(
    method, W, S, Sh, Sx, Rx, rate, drift, accounting, group_size, rescalers, damping=None
):
    if method == "watersic" and damping is None:
        damping = MODEL_DAMPING
    damp = {} if damping is None else {"damping": float(damping)}
    if method == "watersic":
        if drift:
            return quantize_matrix(
                W, S, rate=rate, sigma_hat=Sh, sigma_cross=Sx, residual_cross=Rx,
                accounting=accounting, rescalers=rescalers, **damp,
            )  # fmt: skip
        return quantize_matrix(W, Sh, rate=rate, accounting=accounting, rescalers=rescalers, **damp)
    if method == "huffman-gptq":
        return huffman_gptq(W, Sh, rate=rate, **damp)
    bits = max(1, min(16, round(rate)))
    if group_size and W.shape[1] % group_size != 0:
        group_size = None  # documented: a layer the group size does not divide uses row groups
    if method == "hqq":
        from watersic.anchors import hqq_quantize

        gs = group_size or _largest_divisor(W.shape[1], 64)
        return hqq_quantize(W, Sh, bits=bits, group_size=gs)
    if method == "quanto":
        from watersic.anchors import quanto_quantize

        return quanto_quantize(W, Sh, bits=bits)
    if method == "gptq":
        return gptq_quantize(W, Sh, bits=bits, group_size=group_size, **damp)
    return rtn_quantize(W, Sh, bits=bits, group_size=group_size)


def _largest_divisor(n: int, at_most: int) -> int:
    """Largest divisor of ``n`` not above ``at_most`` (group size fitting a layer)."""
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)
