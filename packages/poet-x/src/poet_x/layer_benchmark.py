"""Memory and throughput of one layer at the paper's shapes (``poet-x benchmark``).

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500): the single-layer memory / latency comparison of
POET, POET-X_fast, POET-X_mem and POET-XQ at Llama-8B layer shapes (hidden 4096, MLP 14336,
sequence 2048, b = 256 / 512), next to AdamW and GaLore on a plain ``nn.Linear``.

For each method, one layer of shape (out, in) is built, ``tokens`` rows go through forward
and backward, and one optimiser step follows (:func:`measure_layer`):

* **held for backward**: every tensor autograd keeps from the forward for the backward,
  counted once per storage with :class:`~poet_x.memory_accounting.SavedTensorMeter`
  (``count_resident=True``), so the frozen base weight the backward reads counts too
  (POET-X_mem holds W~0; POET-XQ only its uint8 codes, dequantised inside the recompute);
* **activations**: the same without the layer's own parameters and buffers;
* **optimiser state**: :func:`~poet_x.memory_accounting.optimizer_state_bytes` after one step
  of the recipe's optimiser (:func:`~poet_x.optimizer_recipe.build_optimizer`: AdamW on the
  rotations for POET, AdamW / ``galore_torch.GaLoreAdamW`` on the weight for the anchors);
* **fwd+bwd time**: median over ``repeats`` timed passes (the first is also the measured
  one; on a GPU it includes the first-call overheads, so use ``repeats >= 3`` there);
* **peak CUDA memory** of a pass (``torch.cuda.max_memory_allocated`` after a reset) when
  the layer runs on a GPU.

:func:`benchmark_tables` runs every (shape, b, method) in one process and returns the layer
table and the analytic whole-model table (:func:`~poet_x.memory_accounting.analytic_memory`).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from .config import POETConfig
from .memory_accounting import (
    LLAMA_SHAPES,
    SavedTensorMeter,
    analytic_memory,
    optimizer_state_bytes,
)
from .optimizer_recipe import build_optimizer
from .poet_linear import POETLinear

#: Methods of the layer benchmark: POET (naive), POET-X fast / mem, POET-XQ, AdamW, GaLore.
METHODS = ("naive", "fast", "mem", "xq", "adamw", "galore")
LABELS = {
    "naive": "POET (naive: dense R W0 P)",
    "fast": "POET-X_fast",
    "mem": "POET-X_mem",
    "xq": "POET-XQ (uint8 base, mem)",
    "adamw": "AdamW (nn.Linear)",
    "galore": "GaLore (nn.Linear)",
}
POET_METHODS = ("naive", "fast", "mem", "xq")
MIB = 2**20


@dataclass
class LayerBenchmarkSetting:
    """Settings of the layer benchmark (the ``memory`` section of ``poet-x reproduce``).

    Parameters
    ----------
    shapes:
        Layer shapes ``[out, in]``; Llama-8B: ``[14336, 4096]`` (gate/up) and ``[4096, 4096]``.
    tokens:
        Rows per forward (batch x sequence; the paper's 2048-token sequence).
    block_sizes:
        POET block sizes b (the paper: 256 and 512).
    layer_methods:
        Subset of :data:`METHODS`.
    repeats:
        Timed forward+backward passes per method (the first also measures the bytes).
    dtype:
        ``float32`` or ``bfloat16`` (the paper trains in bf16 on GPUs).
    device:
        ``cpu`` or ``cuda``.
    galore_rank:
        GaLore projection rank.
    models:
        Llama sizes of the analytic whole-model table (keys of ``LLAMA_SHAPES``).
    analytic_block_size:
        b of the analytic table.
    """

    shapes: list[list[int]] = field(default_factory=lambda: [[14336, 4096], [4096, 4096]])
    tokens: int = 2048
    block_sizes: list[int] = field(default_factory=lambda: [256, 512])
    layer_methods: list[str] = field(default_factory=lambda: list(METHODS))
    repeats: int = 1
    dtype: str = "float32"
    device: str = "cpu"
    galore_rank: int = 512
    models: list[str] = field(default_factory=lambda: ["llama_1b", "llama_3b", "llama_8b"])
    analytic_block_size: int = 256

    def __post_init__(self) -> None:
        bad = [m for m in self.layer_methods if m not in METHODS]
        if bad or not self.layer_methods:
            raise ValueError(f"unknown method(s) {bad}; choose from {', '.join(METHODS)}")
        for shape in self.shapes:
            if len(shape) != 2 or min(shape) < 1:
                raise ValueError(f"a shape is [out, in] with positive sizes, got {shape}")
        if self.tokens < 1 or self.repeats < 1:
            raise ValueError("tokens and repeats must be >= 1")
        if any(b < 2 for b in self.block_sizes):
            raise ValueError(f"block sizes must be >= 2, got {self.block_sizes}")
        if self.dtype not in ("float32", "bfloat16", "float64"):
            raise ValueError(f"dtype must be float32, bfloat16 or float64, got {self.dtype!r}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        unknown = [m for m in self.models if m not in LLAMA_SHAPES]
        if unknown:
            raise ValueError(f"unknown model(s) {unknown}; choose from {', '.join(LLAMA_SHAPES)}")


def build_layer(method: str, out_features: int, in_features: int, block_size: int,
                dtype: torch.dtype, device: str, seed: int = 0) -> nn.Module:  # fmt: skip
    """The layer a method trains: a :class:`POETLinear` (POET methods) or an ``nn.Linear``.

    >>> build_layer("xq", 8, 16, 4, torch.float32, "cpu").cfg.base_quant
    'int8'
    """
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(out_features, in_features, generator=gen, dtype=torch.float32)
    weight = (weight / in_features**0.5).to(dtype)
    if method not in POET_METHODS:
        lin = nn.Linear(in_features, out_features, bias=False, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(weight)
        return lin.to(device)
    cfg = POETConfig(
        block_size=block_size,
        mode={"naive": "naive", "fast": "fast"}.get(method, "mem"),
        path="input",
        base_quant="int8" if method == "xq" else "none",
    )
    return POETLinear(weight, None, cfg, gen).to(device)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measure_layer(method: str, out_features: int, in_features: int, block_size: int,
                  setting: LayerBenchmarkSetting, seed: int = 0) -> dict:  # fmt: skip
    """Bytes held for backward, optimiser-state bytes and fwd+bwd time of one method.

    >>> s = LayerBenchmarkSetting(shapes=[[8, 16]], tokens=4, block_sizes=[4], models=[])
    >>> row = measure_layer("mem", 8, 16, 4, s)
    >>> row["activations"] < row["held"]   # mem holds x, q and the permutations ... and W~0
    True
    """
    dtype = getattr(torch, setting.dtype)
    dev = setting.device
    layer = build_layer(method, out_features, in_features, block_size, dtype, dev, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(setting.tokens, in_features, generator=gen).to(dtype=dtype, device=dev)
    x.requires_grad_(True)
    opt = build_optimizer(
        layer, POETConfig(block_size=block_size),
        baseline="poet" if method in POET_METHODS else method,
        lr=1e-4, rank=min(setting.galore_rank, out_features, in_features), proj_gap=200,
    )  # fmt: skip
    times = []
    for i in range(setting.repeats):
        x.grad = None
        if dev == "cuda":
            torch.cuda.reset_peak_memory_stats()
        _sync(dev)
        t0 = time.perf_counter()
        if i == 0:  # the first pass is also the measured one (hooks cost no arithmetic)
            with SavedTensorMeter(layer) as meter:
                y = layer(x)
        else:
            y = layer(x)
        y.float().pow(2).mean().backward()
        _sync(dev)
        times.append(time.perf_counter() - t0)
        del y
        if i == 0:
            peak = int(torch.cuda.max_memory_allocated()) if dev == "cuda" else None
            opt.step()
            state = optimizer_state_bytes(opt)
        opt.zero_grad(set_to_none=True)
    return {
        "method": method,
        "held": meter.bytes + meter.resident_bytes,
        "activations": meter.bytes,
        "optimizer_state": state,
        "trainable": sum(p.numel() for p in layer.parameters() if p.requires_grad),
        "times_s": times,
        "peak_cuda": peak,
    }


def _ms(times: list[float]) -> str:
    med = statistics.median(times) * 1e3
    if len(times) < 2:
        return f"{med:.0f}"
    return f"{med:.0f} [{min(times) * 1e3:.0f}, {max(times) * 1e3:.0f}]"


def benchmark_rows(setting: LayerBenchmarkSetting, seed: int = 0, progress=None) -> list[dict]:
    """Measure every (shape, b, method); the anchors (no b) once per shape."""
    if setting.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but torch sees no CUDA device")
    rows = []
    jobs = []
    for out_f, in_f in setting.shapes:
        for b in setting.block_sizes:
            if out_f % b or in_f % b:
                raise ValueError(f"block size {b} does not divide the shape {out_f} x {in_f}")
            jobs += [(out_f, in_f, b, m) for m in setting.layer_methods if m in POET_METHODS]
        jobs += [(out_f, in_f, None, m) for m in setting.layer_methods if m not in POET_METHODS]
    for i, (out_f, in_f, b, method) in enumerate(jobs):
        if progress is not None:
            progress(f"[{i + 1}/{len(jobs)}] {LABELS[method]} {out_f}x{in_f} b={b or '-'}")
        row = measure_layer(method, out_f, in_f, b or setting.block_sizes[0], setting, seed)
        row.update(shape=f"{out_f} x {in_f}", out_features=out_f, in_features=in_f, b=b)
        rows.append(row)
        torch.cuda.empty_cache() if setting.device == "cuda" else None
    return rows


def layer_table(rows: list[dict], setting: LayerBenchmarkSetting):
    """The layer table (one row per shape, b and method)."""
    from icml26_shared.results import Table

    cuda = setting.device == "cuda"
    cols = ["shape (out x in)", "b", "method", "held for backward (MiB)", "activations (MiB)",
            "held / naive", "activations / naive", "optimiser state (MiB)", "trainable (M)",
            f"fwd+bwd ms (median{' [min, max]' if setting.repeats > 1 else ''})"]  # fmt: skip
    if cuda:
        cols.append("peak CUDA (MiB)")
    table = Table(
        f"One layer, {setting.tokens} tokens, {setting.dtype} on {setting.device}: memory held "
        "for backward (the frozen base included), optimiser state, forward+backward time",
        cols,
    )
    naive = {(r["shape"], r["b"]): r for r in rows if r["method"] == "naive"}
    for r in rows:
        ref = naive.get((r["shape"], r["b"]))
        cells = {
            "shape (out x in)": r["shape"],
            "b": r["b"] if r["b"] is not None else "-",
            "method": LABELS[r["method"]],
            "held for backward (MiB)": f"{r['held'] / MIB:.1f}",
            "activations (MiB)": f"{r['activations'] / MIB:.1f}",
            "held / naive": f"{r['held'] / ref['held']:.3f}" if ref else "-",
            "activations / naive": f"{r['activations'] / ref['activations']:.3f}" if ref else "-",
            "optimiser state (MiB)": f"{r['optimizer_state'] / MIB:.1f}",
            "trainable (M)": f"{r['trainable'] / 1e6:.2f}",
            cols[9]: _ms(r["times_s"]),
        }
        if cuda:
            cells["peak CUDA (MiB)"] = f"{r['peak_cuda'] / MIB:.0f}"
        table.add_row(**cells)
    return table


def analytic_table(setting: LayerBenchmarkSetting):
    """Whole-model weight + gradient + optimiser-state GB (bf16 mixed precision, no activations)."""
    from icml26_shared.results import Table

    cols = ["model", "params (B)", "AdamW GB", "GaLore GB", "POET-X GB", "POET-XQ GB",
            "POET-X trainable (M)"]  # fmt: skip
    table = Table(
        f"Whole Llama models, analytic (b = {setting.analytic_block_size}, GaLore rank "
        f"{setting.galore_rank}): weights + gradients + optimiser state, before activations",
        cols,
    )
    for name in setting.models:
        r = analytic_memory(LLAMA_SHAPES[name], setting.analytic_block_size, setting.galore_rank)
        table.add_row(**{c: r[c] if isinstance(r[c], str) else f"{r[c]:.2f}" for c in cols})
    return table


def ordering_note(rows: list[dict]) -> str:
    """Per (shape, b): does mem < fast < naive hold (held and activations), naive / mem, XQ / mem."""
    out = []
    by: dict = {}
    for r in rows:
        by.setdefault((r["shape"], r["b"]), {})[r["method"]] = r
    for (shape, b), h in by.items():
        if not {"naive", "fast", "mem"} <= set(h):
            continue
        parts = []
        for key in ("held", "activations"):
            mem, fast, naive = (h[k][key] for k in ("mem", "fast", "naive"))
            ok = "holds" if mem < fast < naive else "FAILS"
            parts.append(f"{key}: mem < fast < naive {ok}, naive/mem = {naive / mem:.1f}x")
        if "xq" in h:
            parts.append(f"held XQ/mem = {h['xq']['held'] / h['mem']['held']:.2f}")
        out.append(f"{shape}, b={b}: " + "; ".join(parts))
    return ". ".join(out)


@dataclass
class BenchmarkResult:
    """Rows, the two tables and the one-line summary of a benchmark run."""

    rows: list[dict]
    tables: list = field(default_factory=list)
    summary: str = ""


def benchmark_tables(setting: LayerBenchmarkSetting, seed: int = 0, progress=None):
    """Run the layer benchmark and build the layer and analytic tables."""
    rows = benchmark_rows(setting, seed, progress)
    tables = [layer_table(rows, setting)]
    if setting.models:
        tables.append(analytic_table(setting))
    return BenchmarkResult(rows, tables, ordering_note(rows))
