"""Memory accounting: optimiser state, saved activations, peak memory, analytic large models.

* :func:`optimizer_state_bytes`: exact bytes of every tensor in an optimiser's state.
  For AdamW: sum_p 2 numel(p) itemsize + 4 bytes per ``step`` scalar.
* :class:`SavedTensorMeter`: bytes autograd saves for backward (``saved_tensors_hooks``),
  excluding parameters and buffers that are resident anyway, or (``count_resident=True``)
  everything the backward holds, the stored base weight included (POET-X_mem holds W~0,
  POET-XQ only its uint8 codes).
* :func:`peak_memory`: CUDA max allocated on GPU, process peak RSS on CPU;
  :func:`current_rss`: the process's RSS now (the baseline a run's peak is compared to).
* :func:`analytic_memory`: AdamW vs GaLore vs POET-X bytes for Llama-shaped 1B-13B models.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

import torch
from torch import nn


def optimizer_state_bytes(optimizers) -> int:
    """Bytes of every tensor held in the optimiser state(s).

    Tensors held by projector objects in the state (GaLore's / APOLLO's ``ortho_matrix``)
    are counted too.
    """
    if isinstance(optimizers, torch.optim.Optimizer):
        optimizers = [optimizers]
    total = 0
    for opt in optimizers:
        for state in opt.state.values():
            for v in state.values():
                if isinstance(v, torch.Tensor):
                    total += v.numel() * v.element_size()
                else:
                    proj = getattr(v, "ortho_matrix", None)
                    for t in proj if isinstance(proj, (list, tuple)) else [proj]:
                        if isinstance(t, torch.Tensor):
                            total += t.numel() * t.element_size()
    return total


class SavedTensorMeter:
    """Context manager summing the bytes autograd saves for backward.

    Examples
    --------
    >>> lin = nn.Linear(4, 3)
    >>> x = torch.randn(2, 4, requires_grad=True)
    >>> with SavedTensorMeter(lin) as meter:
    ...     y = lin(x)
    >>> meter.bytes   # x is saved (2 x 4 floats); the weight is a parameter, not counted
    32
    >>> with SavedTensorMeter(lin, count_resident=True) as meter:
    ...     y = lin(x)
    >>> meter.bytes   # x and the 3 x 4 weight
    80

    Parameters
    ----------
    modules:
        Modules whose parameters and buffers are not counted (unless ``count_resident``).
    count_resident:
        Count saved parameters and buffers too (each storage once).
    """

    def __init__(self, *modules: nn.Module, count_resident: bool = False) -> None:
        self.resident = set()
        for mod in modules:
            for t in list(mod.parameters()) + list(mod.buffers()):
                self.resident.add(t.untyped_storage().data_ptr())
        self.count_resident = count_resident
        self.bytes = 0
        self.resident_bytes = 0  # saved parameters / buffers of ``modules`` (always recorded)
        self._seen: set[tuple[int, int]] = set()
        self._ctx = None

    def _pack(self, t: torch.Tensor):
        try:
            storage = t.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            if key not in self._seen:
                self._seen.add(key)
                if key[0] in self.resident:
                    self.resident_bytes += key[1]
                    if self.count_resident:
                        self.bytes += key[1]
                else:
                    self.bytes += key[1]
        except (RuntimeError, NotImplementedError):
            self.bytes += t.numel() * t.element_size()
        return t

    def __enter__(self) -> SavedTensorMeter:
        self._ctx = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._ctx.__exit__(*exc)


def peak_memory(device: torch.device | str | None = None) -> int:
    """Peak bytes: ``torch.cuda.max_memory_allocated`` on CUDA, else the process's peak RSS."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def current_rss() -> int:
    """Resident set size of this process now, in bytes (``/proc/self/statm``; else peak RSS).

    Examples
    --------
    >>> current_rss() > 0
    True
    """
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return peak_memory()


def model_state_bytes(model: nn.Module) -> tuple[int, int]:
    """(bytes of parameters + buffers, bytes of the gradients of trainable parameters)."""
    weights = sum(t.numel() * t.element_size() for t in model.parameters())
    weights += sum(t.numel() * t.element_size() for t in model.buffers())
    grads = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)
    return weights, grads


@dataclass(frozen=True)
class LlamaShape:
    """Sizes of a Llama-style decoder (for the analytic memory table)."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    vocab: int = 32000
    kv_hidden: int | None = None  # k/v projection width (grouped-query attention); None: hidden

    def matrices(self) -> list[tuple[int, int]]:
        """(out, in) of every hidden Linear (q, k, v, o, gate, up, down) over all layers."""
        h, f = self.hidden, self.intermediate
        kv = self.kv_hidden or h
        return ([(h, h), (kv, h), (kv, h), (h, h)] + [(f, h), (f, h), (h, f)]) * self.layers

    def other_params(self) -> int:
        """Embedding + lm_head + norms."""
        return 2 * self.vocab * self.hidden + (2 * self.layers + 1) * self.hidden


LLAMA_SHAPES = {
    "llama_1b": LlamaShape("llama_1b", 2048, 5504, 24),
    "llama_3b": LlamaShape("llama_3b", 2560, 6848, 32),
    "llama_8b": LlamaShape("llama_8b", 4096, 14336, 32, 128256, kv_hidden=1024),  # Llama-3 8B
    "llama_13b": LlamaShape("llama_13b", 5120, 13824, 40),
}


def analytic_memory(
    shape: LlamaShape, block_size: int = 256, galore_rank: int = 512, quant_group_size: int = 256
) -> dict:
    """Weight + gradient + optimiser-state GB (no activations) under bf16 mixed precision.

    AdamW: bf16 weights and grads (4 B) + fp32 m, v (8 B) = 12 B per parameter.
    GaLore: bf16 weights and grads + fp32 m, v on the rank-r projection (8 r min(m, n) per
    matrix) + the fp32 projector (4 r min(m, n)).
    POET-X: bf16 W0 without gradient (2 B) + fp32 Q, grad, m, v (16 B) on (m+n)(b-1)/2 per
    matrix; non-matrix parameters (embeddings, norms) with AdamW (12 B).
    POET-XQ: as POET-X with the base in uint8 (1 B) plus an fp32 scale and zero per group of
    ``quant_group_size``.

    >>> r = analytic_memory(LLAMA_SHAPES["llama_8b"])
    >>> round(r["params (B)"], 2), r["POET-XQ GB"] < r["POET-X GB"] < r["AdamW GB"]
    (8.03, True)
    """
    mats = shape.matrices()
    n_mat = sum(m * n for m, n in mats)
    other = shape.other_params()
    total = n_mat + other
    adamw = 12 * total
    galore = 4 * total + sum(12 * galore_rank * min(m, n) for m, n in mats) + 8 * other
    q = sum((m + n) * (block_size - 1) // 2 for m, n in mats)
    poet = 2 * n_mat + 16 * q + 12 * other
    poet_xq = n_mat + 8 * n_mat / quant_group_size + 16 * q + 12 * other
    gb = 1024**3
    return {
        "model": shape.name,
        "params (B)": total / 1e9,
        "AdamW GB": adamw / gb,
        "GaLore GB": galore / gb,
        "POET-X GB": poet / gb,
        "POET-XQ GB": poet_xq / gb,
        "POET-X trainable (M)": (q + other) / 1e6,
    }
