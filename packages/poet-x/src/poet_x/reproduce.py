"""``poet-x reproduce``: POET-X vs POET vs AdamW / Muon on a tiny Llama, CPU scale.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500). One run trains the same randomly initialised
Llama on the same byte-level CPython stdlib windows with the same seed, for the same number
of optimiser steps (equal tokens), with: AdamW, Muon (+AdamW), POET (naive dense R W0 P),
POET-X fast, POET-X mem and POET-XQ (int8 base, mem), plus GaLore (``galore-torch``),
APOLLO (``apollo-torch``), LoRA and OFT (``peft``) when the ``bench`` extra is installed
(a missing anchor is listed in the notes as skipped). It reports trainable parameters,
exact optimiser-state bytes, saved-activation bytes of one forward (autograd hooks),
accounted memory (weights + grads + state + saved activations), tokens/s, validation loss
at equal tokens and at equal wall-clock (the last evaluation within the median method's
training time),
max relative singular-value drift of the hidden matrices and the rotations' orthogonality
error; plus the loss curves and sigma_max of one matrix over training.
"""

from __future__ import annotations

import copy
import importlib.util
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.results import Report, Table

from .lm_module import CausalLMModule
from .memory_accounting import SavedTensorMeter, model_state_bytes, optimizer_state_bytes
from .model_surgery import poet_layers
from .poet_linear import POETLinear
from .text_data import TextDataModule


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    seq_len: int
    batch_size: int
    steps: int
    merge_interval: int
    block_size: int
    max_bytes: int
    val_windows: int
    eval_every: int
    lr: float = 3e-3
    poet_lr: float = 4e-3


QUICK = Setting(64, 128, 2, 4, 32, 8, 40, 20, 16, 300_000, 32, 10)
FULL = Setting(64, 192, 2, 4, 64, 8, 200, 50, 16, 1_000_000, 64, 25)

METHODS = {
    "AdamW": {"optimizer": "adamw"},
    "Muon+AdamW": {"optimizer": "muon"},
    "POET (naive, dense R W0 P)": {"optimizer": "poet", "mode": "naive"},
    "POET-X fast": {"optimizer": "poet", "mode": "fast"},
    "POET-X mem": {"optimizer": "poet", "mode": "mem"},
    "POET-XQ (int8 base, mem)": {"optimizer": "poet", "mode": "mem", "base_quant": "int8"},
    "GaLore (galore-torch)": {"optimizer": "galore"},
    "APOLLO (apollo-torch)": {"optimizer": "apollo"},
    "LoRA (peft)": {"optimizer": "lora"},
    "OFT (peft)": {"optimizer": "oft"},
}
NEEDS = {"galore": "galore_torch", "apollo": "apollo_torch", "lora": "peft", "oft": "peft"}


def available(spec: dict) -> bool:
    """Whether the package an anchor needs (``bench`` extra) is importable."""
    mod = NEEDS.get(spec["optimizer"])
    return mod is None or importlib.util.find_spec(mod) is not None


def _hidden_weights(module: CausalLMModule) -> dict[str, torch.Tensor]:
    out = {}
    model = module.model
    if hasattr(model, "merge_and_unload"):  # peft adapters: the merged effective weights
        model = copy.deepcopy(model).merge_and_unload()
    for name, mod in model.named_modules():
        if isinstance(mod, POETLinear):
            out[name] = mod.effective_weight().detach().clone()
        elif isinstance(mod, torch.nn.Linear) and not name.endswith("lm_head"):
            out[name] = mod.weight.detach().clone()
    return out


def _svals(ws: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: torch.linalg.svdvals(w.double()) for k, w in ws.items()}


@torch.no_grad()
def _val_loss(module: CausalLMModule, loader) -> float:
    module.eval()
    losses = [module.loss(b).item() for b in loader]
    module.train()
    return sum(losses) / len(losses)


def _train(name: str, spec: dict, s: Setting, dm: TextDataModule, seed: int) -> dict:
    torch.manual_seed(seed)
    module = CausalLMModule(
        vocab_size=dm.vocab_size, hidden_size=s.hidden, intermediate_size=s.intermediate,
        num_layers=s.layers, num_heads=s.heads, seq_len=s.seq_len, lr=s.lr,
        block_size=s.block_size, merge_interval=s.merge_interval, poet_lr=s.poet_lr,
        grad_clip=1.0, clip_warmup_steps=max(s.merge_interval // 10, 1), seed=seed, **spec,
    )  # fmt: skip
    opts = module.configure_optimizers()
    s0 = _svals(_hidden_weights(module))
    first = next(iter(dm.train_dataloader()))
    with SavedTensorMeter(module) as meter:
        loss = module.loss(first)
    del loss
    val_loader = dm.val_dataloader()
    curve, sigma = [], []
    probe = "model.layers.0.mlp.down_proj"
    batches = iter(dm.train_dataloader())
    seconds, orth = 0.0, 0.0
    for step in range(1, s.steps + 1):
        try:
            batch = next(batches)
        except StopIteration:
            batches = iter(dm.train_dataloader())
            batch = next(batches)
        t0 = time.perf_counter()
        module.optimizer_step_on(batch, opts)
        if spec["optimizer"] == "poet" and step % s.merge_interval == 0:
            seconds += time.perf_counter() - t0
            orth = max([orth, *(m.orthogonality_error() for m in poet_layers(module.model))])
            t0 = time.perf_counter()
            module.merge(opts)
        seconds += time.perf_counter() - t0
        if step % s.eval_every == 0 or step == s.steps:
            curve.append((step, _val_loss(module, val_loader), seconds))
            w = _hidden_weights(module)[probe]
            sigma.append((step, float(torch.linalg.svdvals(w.double())[0])))
    s1 = _svals(_hidden_weights(module))
    drift = max(float(((s1[k] - s0[k]).abs() / s0[k].abs().max()).max()) for k in s0)
    layers = poet_layers(module.model)
    weights, grads = model_state_bytes(module)
    state = optimizer_state_bytes(opts)
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    tokens = s.steps * s.batch_size * s.seq_len
    return {
        "method": name,
        "trainable params": trainable,
        "optimizer state (KB)": state / 1024,
        "saved activations (KB)": meter.bytes / 1024,
        "accounted memory (MB)": (weights + grads + state + meter.bytes) / 2**20,
        "tokens/s": tokens / seconds,
        "val loss": curve[-1][1],
        "val loss @ equal time": float("nan"),
        "max rel sigma drift": drift,
        "orth error": max([orth, *(m.orthogonality_error() for m in layers)])
        if layers
        else float("nan"),
        "_curve": curve,
        "_sigma": sigma,
    }


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train every method on the same model, data and tokens; return the report."""
    torch.set_num_threads(1)
    start = time.process_time()
    s = QUICK if quick else FULL
    dm = TextDataModule(
        "stdlib", seq_len=s.seq_len, batch_size=s.batch_size,
        train_windows=s.steps * s.batch_size, val_windows=s.val_windows,
        max_bytes=s.max_bytes, seed=seed,
    )  # fmt: skip
    dm.setup("fit")
    report = Report("poet-x", out)
    cols = [
        "method", "trainable params", "optimizer state (KB)", "saved activations (KB)",
        "accounted memory (MB)", "tokens/s", "val loss", "val loss @ equal time",
        "max rel sigma drift", "orth error",
    ]  # fmt: skip
    table = Table(
        "POET-X vs POET vs AdamW / Muon: tiny Llama on byte-level CPython stdlib",
        cols,
        notes=(
            f"Llama hidden {s.hidden}, MLP {s.intermediate}, {s.layers} layers, {s.heads} heads, "
            f"vocab 256 (bytes); {s.steps} optimiser steps of {s.batch_size}x{s.seq_len} tokens "
            f"(equal tokens for every row), same init and data order. POET: b={s.block_size}, "
            f"Cayley-Neumann 4 terms, merge every {s.merge_interval} steps, rotation lr "
            f"{s.poet_lr}x0.5, AdamW lr {s.lr} for the rest and for the AdamW row. "
            "saved activations: bytes autograd keeps for backward of one training batch "
            "(parameters/buffers excluded). accounted memory = weights+buffers + grads + "
            "optimizer state + saved activations (exact bytes, not RSS). max rel sigma drift: "
            "max_k |sigma_k(end) - sigma_k(start)| / sigma_max(start) over the hidden matrices "
            "(POET rows start from the row-normalised W0; LoRA/OFT rows use the merged weights). "
            "orth error: max ||G^T G - I||_F/sqrt(b) over blocks, taken before each merge. "
            "val loss @ equal time: the last evaluation (every eval_every steps) reached within "
            "the median method's training time (nan: the method's first evaluation came later). GaLore/APOLLO: rank "
            "min-dim/4 on the hidden matrices, projection refreshed every merge interval; "
            "LoRA rank 16 and OFT block b on the hidden Linears, embeddings/norms/lm_head "
            "trainable. tokens/s on the shared CPU."
        ),
    )
    rows, skipped = [], []
    for name, spec in METHODS.items():
        if not available(spec):
            skipped.append(name)
            continue
        print(f"[poet-x reproduce] training {name} ...", flush=True)
        rows.append(_train(name, spec, s, dm, seed))
    times = sorted(r["_curve"][-1][2] for r in rows)
    budget = times[(len(times) - 1) // 2]  # the median method's training time
    for r in rows:
        within = [c[1] for c in r["_curve"] if c[2] <= budget * 1.0001]
        r["val loss @ equal time"] = within[-1] if within else float("nan")
    for r in rows:
        table.add_row(**{k: v for k, v in r.items() if not k.startswith("_")})
    report.add_table(table)
    _plots(report, rows)
    by = {r["method"]: r for r in rows}
    adam, px = by["AdamW"], by["POET-X fast"]
    report.note(
        f"Summary (from this run): val loss AdamW {adam['val loss']:.3f} vs POET-X "
        f"{px['val loss']:.3f} ({'POET-X lags' if px['val loss'] > adam['val loss'] else 'POET-X ahead'}"
        f" at this tiny scale); sigma drift AdamW {adam['max rel sigma drift']:.3g} vs POET-X "
        f"{px['max rel sigma drift']:.3g}; optimizer state POET-X / AdamW = "
        f"{px['optimizer state (KB)'] / adam['optimizer state (KB)']:.3f}; saved activations "
        f"mem / fast = {by['POET-X mem']['saved activations (KB)'] / px['saved activations (KB)']:.3f}."
    )
    if skipped:
        report.note(
            "Skipped (bench extra not installed: pip install 'poet-x[bench]'): "
            + ", ".join(skipped)
        )
    report.note(f"CPU time of this run (one thread): {time.process_time() - start:.0f} s.")
    return report


def _plots(report: Report, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for r in rows:
        xs, ys, _ = zip(*r["_curve"], strict=True)
        a.plot(xs, ys, marker="o", label=r["method"])
        xs, ys = zip(*r["_sigma"], strict=True)
        b.plot(xs, ys, marker="o", label=r["method"])
    a.set(xlabel="optimiser step", ylabel="validation loss (nats/byte)", title="loss curves")
    b.set(xlabel="optimiser step", ylabel="sigma_max", title="sigma_max of layers.0.mlp.down_proj")
    a.legend(fontsize=7)
    fig.tight_layout()
    report.save_figure(fig, "poet_x_curves.png")
    plt.close(fig)
