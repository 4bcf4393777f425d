"""Equal-token comparison of POET-X, POET and the anchors on one tiny Llama, CPU scale.

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500). The same randomly initialised Llama is trained on
the same byte-level CPython stdlib windows with the same seed, for the same number of
optimiser steps (equal tokens), by every method of :data:`METHODS`: AdamW, Muon (+AdamW),
POET (naive dense R W0 P), POET-X fast / mem, POET-XQ (int8 base, mem), and GaLore
(``galore-torch``), APOLLO (``apollo-torch``), LoRA and OFT (``peft``) when the ``bench``
extra is installed (:func:`available`).

1. One method, one run: trainable parameters, exact optimiser-state bytes, saved-activation
   bytes of one forward (:class:`~poet_x.memory_accounting.SavedTensorMeter`), tokens/s, the
   validation-loss curve, the max relative singular-value drift of the hidden matrices and
   the rotations' orthogonality error (:class:`~poet_x.spectral_metrics.SpectralDrift`,
   :class:`~poet_x.spectral_metrics.OrthogonalityError`) -> :func:`train_method`. Training
   steps go through :meth:`~poet_x.lightning.CausalLMModule.optimizer_step_on` (the module's
   manual-optimisation step, the same code path a Trainer runs) and
   :meth:`~poet_x.lightning.CausalLMModule.merge`.
2. Each method in a fresh process (``isolate``), so that its measured peak RSS is its own,
   then the same method on the order-2 Markov chain, whose exact entropy rate H gives the
   *excess loss* = val loss - H -> :func:`run_method`, :func:`run_methods`.
3. Loss at equal wall-clock: the last evaluation within the median method's training time
   -> :func:`equal_time`.
4. The two tables, the summary line and the curves figure -> :func:`text_table`,
   :func:`markov_table`, :func:`summary_line`, :func:`curves_figure`.
"""

from __future__ import annotations

import copy
import importlib.util
import multiprocessing
import sys
import time
from dataclasses import dataclass

import torch
from icml26_shared.results import Table

from .lightning import CausalLMModule, TextDataModule
from .memory_accounting import (
    SavedTensorMeter,
    current_rss,
    model_state_bytes,
    optimizer_state_bytes,
    peak_memory,
)
from .model_surgery import poet_layers
from .poet_linear import POETLinear
from .spectral_metrics import OrthogonalityError, SpectralDrift

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
TEXT_COLUMNS = [
    "method", "trainable params", "optimizer state (KB)", "saved activations (KB)",
    "accounted memory (MB)", "peak RSS (MB)", "RSS growth (MB)", "tokens/s", "val loss",
    "val loss - AdamW", "val loss @ equal time", "max rel sigma drift", "orth error",
]  # fmt: skip
MARKOV_COLUMNS = ["method", "tokens/s", "val loss", "excess loss", "excess loss @ equal time",
                  "max rel sigma drift"]  # fmt: skip


@dataclass(frozen=True)
class ComparisonSetting:
    """Sizes of one comparison run (the keys of ``configs/reproduce/*.yaml``).

    ``markov_vocab`` / ``markov_alpha``: the Markov chain (16^2 contexts: learnable in 40-200
    steps); ``isolate``: one fresh process per method (a per-method measured peak RSS);
    ``methods``: names of :data:`METHODS` to run (default: all that are installed).
    """

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
    markov_vocab: int = 16
    markov_alpha: float = 0.1
    isolate: bool = True
    methods: list[str] | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods or ()) - set(METHODS))
        if unknown:
            raise ValueError(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
        if self.steps < 1 or self.eval_every < 1 or self.merge_interval < 1:
            raise ValueError("steps, eval_every and merge_interval must be >= 1")


def available(spec: dict) -> bool:
    """Whether the package an anchor needs (``bench`` extra) is importable."""
    mod = NEEDS.get(spec["optimizer"])
    return mod is None or importlib.util.find_spec(mod) is not None


def hidden_weights(module: CausalLMModule) -> dict[str, torch.Tensor]:
    """The effective weights of the hidden Linears (POET: R W0 P; peft: merged), by name."""
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
def validation_loss(module: CausalLMModule, loader) -> float:
    """Mean validation loss of ``module`` over ``loader`` (nats per token)."""
    module.eval()
    losses = [module.loss(b).item() for b in loader]
    module.train()
    return sum(losses) / len(losses)


def train_method(name: str, spec: dict, s: ComparisonSetting, dm: TextDataModule,
                 seed: int) -> dict:  # fmt: skip
    """Train one method for ``s.steps`` steps on ``dm``; its table row (curves under ``_``)."""
    torch.manual_seed(seed)
    module = CausalLMModule(
        vocab_size=dm.vocab_size, hidden_size=s.hidden, intermediate_size=s.intermediate,
        num_layers=s.layers, num_heads=s.heads, seq_len=s.seq_len, lr=s.lr,
        block_size=s.block_size, merge_interval=s.merge_interval, poet_lr=s.poet_lr,
        grad_clip=1.0, clip_warmup_steps=max(s.merge_interval // 10, 1), seed=seed, **spec,
    )  # fmt: skip
    opts = module.configure_optimizers()
    s0 = _svals(hidden_weights(module))
    first = next(iter(dm.train_dataloader()))
    with SavedTensorMeter(module) as meter:
        loss = module.loss(first)
    del loss
    val_loader = dm.val_dataloader()
    curve, sigma = [], []
    probe = "model.layers.0.mlp.down_proj"
    batches = iter(dm.train_dataloader())
    seconds, orth = 0.0, OrthogonalityError()
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
            orth.update(module.model)  # before each merge (Q is reset by it)
            t0 = time.perf_counter()
            module.merge(opts)
        seconds += time.perf_counter() - t0
        if step % s.eval_every == 0 or step == s.steps:
            curve.append((step, validation_loss(module, val_loader), seconds))
            w = hidden_weights(module)[probe]
            sigma.append((step, float(torch.linalg.svdvals(w.double())[0])))
    s1 = _svals(hidden_weights(module))
    drift = SpectralDrift()
    for k in s0:
        drift.update(s0[k], s1[k])
    layers = poet_layers(module.model)
    if layers:
        orth.update(module.model)
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
        "max rel sigma drift": float(drift.compute()),
        "orth error": float(orth.compute()) if layers else float("nan"),
        "_curve": curve,
        "_sigma": sigma,
    }


def comparison_data(s: ComparisonSetting, seed: int) -> tuple[TextDataModule, TextDataModule]:
    """The stdlib-text and Markov-chain data modules of a run (same windows for every method)."""
    kw = {"seq_len": s.seq_len, "batch_size": s.batch_size,
          "train_windows": s.steps * s.batch_size, "val_windows": s.val_windows, "seed": seed}  # fmt: skip
    text = TextDataModule("stdlib", max_bytes=s.max_bytes, **kw)
    markov = TextDataModule("markov", vocab=s.markov_vocab, alpha=s.markov_alpha, **kw)
    text.setup("fit")
    markov.setup("fit")
    return text, markov


def run_method(name: str, spec: dict, s: ComparisonSetting, seed: int) -> tuple[dict, dict]:
    """Train one method on the stdlib text (with its peak memory), then on the Markov chain.

    Run in a fresh process (``isolate``), the peak RSS is this method's alone: ``peak RSS``
    is the process's ``ru_maxrss`` right after the text run (before the Markov run), and
    ``RSS growth`` is that minus the RSS just before the model was built (the Python,
    torch and transformers runtime, already-used code paths and the data excluded).
    """
    torch.set_num_threads(1)
    text, markov = comparison_data(s, seed)
    warm_up(spec)  # a forked child faults in the inherited code and heap pages here
    rss0 = current_rss()
    row = train_method(name, spec, s, text, seed)
    peak = max(peak_memory(), current_rss())  # the kernel's two counters may differ slightly
    row["peak RSS (MB)"] = peak / 2**20
    row["RSS growth (MB)"] = (peak - rss0) / 2**20
    mrow = train_method(name, spec, s, markov, seed)
    mrow["entropy rate"] = markov.entropy_rate
    return row, mrow


def warm_up(spec: dict) -> None:
    """One step (and a merge) of ``spec`` on a width-16 model: loads lazily imported code.

    Run in the parent before the method's process is forked (the imports are then
    inherited) and again at the start of :func:`run_method`, so that the RSS growth is the
    training's own memory, not the first touch of transformers / peft / torch code pages.
    """
    torch.manual_seed(0)
    module = CausalLMModule(vocab_size=16, hidden_size=16, intermediate_size=32, num_layers=1,
                            num_heads=2, seq_len=8, block_size=4, merge_interval=1, **spec)  # fmt: skip
    opts = module.configure_optimizers()
    batch = torch.randint(0, 16, (2, 9))
    with SavedTensorMeter(module):
        module.loss(batch)
    module.optimizer_step_on(batch, opts)
    if spec["optimizer"] == "poet":
        module.merge(opts)
    hidden_weights(module)


def _child(conn, name: str, spec: dict, s: ComparisonSetting, seed: int) -> None:
    try:
        conn.send(("ok", run_method(name, spec, s, seed)))
    except BaseException as err:  # noqa: BLE001 - reported by the parent
        conn.send(("error", f"{name}: {type(err).__name__}: {err}"))
    finally:
        conn.close()


def run_in_own_process(name: str, spec: dict, s: ComparisonSetting,
                       seed: int) -> tuple[dict, dict]:  # fmt: skip
    """:func:`run_method` in a fresh process: forked on Linux (the imports are inherited, and
    the child's peak RSS starts from its RSS at the fork), spawned elsewhere."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" and "fork" in methods
                                      else "spawn")  # fmt: skip
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, name, spec, s, seed))
    proc.start()
    send.close()
    try:
        status, payload = recv.recv()
    except EOFError:
        status, payload = "error", f"{name}: the training process died (exit {proc.exitcode})"
    proc.join()
    if status != "ok":
        raise RuntimeError(payload)
    return payload


def run_methods(s: ComparisonSetting, seed: int) -> tuple[list[dict], list[dict], list[str]]:
    """Every installed method of ``s``: text rows, Markov rows, and the skipped methods.

    One method at a time (timings are not shared); with ``s.isolate`` each in its own process.
    Equal-time columns and ``val loss - AdamW`` / ``excess loss`` are filled in.
    """
    torch.set_num_threads(1)
    chosen = {n: METHODS[n] for n in (s.methods or METHODS)}
    methods = {n: spec for n, spec in chosen.items() if available(spec)}
    skipped = [n for n in chosen if n not in methods]
    results = []
    for name, spec in methods.items():
        if s.isolate:
            print(f"[poet-x reproduce] training {name} (own process) ...", flush=True)
            warm_up(spec)
            results.append(run_in_own_process(name, spec, s, seed))
        else:
            results.append(run_method(name, spec, s, seed))
    rows = [r for r, _ in results]
    mrows = [m for _, m in results]
    if not s.isolate:
        for r in rows:
            r["peak RSS (MB)"] = r["RSS growth (MB)"] = float("nan")
    equal_time(rows)
    adam_loss = next((r["val loss"] for r in rows if r["method"] == "AdamW"), float("nan"))
    for r in rows:
        r["val loss - AdamW"] = r["val loss"] - adam_loss
    h = mrows[0]["entropy rate"] if mrows else float("nan")
    for m in mrows:
        m["_curve"] = [(step, loss - h, sec) for step, loss, sec in m["_curve"]]
        m["excess loss"] = m["_curve"][-1][1]
    equal_time(mrows, "excess loss")
    for m in mrows:
        m["val loss"] = m["excess loss"] + h
    return rows, mrows, skipped


def equal_time(rows: list[dict], key: str = "val loss") -> None:
    """Fill ``<key> @ equal time``: the last evaluation within the median method's time."""
    times = sorted(r["_curve"][-1][2] for r in rows)
    if not times:
        return
    budget = times[(len(times) - 1) // 2]  # the median method's training time
    for r in rows:
        within = [c[1] for c in r["_curve"] if c[2] <= budget * 1.0001]
        r[f"{key} @ equal time"] = within[-1] if within else float("nan")


def text_table(rows: list[dict], s: ComparisonSetting) -> Table:
    """The first table: memory, speed, loss at equal tokens and time, spectrum, orthogonality."""
    table = Table(
        "POET-X vs POET vs AdamW / Muon: tiny Llama on byte-level CPython stdlib",
        TEXT_COLUMNS,
        notes=(
            f"Llama hidden {s.hidden}, MLP {s.intermediate}, {s.layers} layers, {s.heads} heads, "
            f"vocab 256 (bytes); {s.steps} optimiser steps of {s.batch_size}x{s.seq_len} tokens "
            f"(equal tokens for every row), same init and data order. POET: b={s.block_size}, "
            f"Cayley-Neumann 4 terms, merge every {s.merge_interval} steps, rotation lr "
            f"{s.poet_lr}x0.5, AdamW lr {s.lr} for the rest and for the AdamW row. "
            "saved activations: bytes autograd keeps for backward of one training batch "
            "(parameters/buffers excluded). accounted memory = weights+buffers + grads + "
            "optimizer state + saved activations (exact bytes, not RSS). peak RSS: measured "
            "ru_maxrss of the method's own process (forked from the parent, one at a time) at "
            "the end of its training, including the Python/torch/transformers runtime of a few "
            "hundred MB; RSS growth: peak RSS minus the process's RSS just before the model was "
            "built (code paths warmed up by one step on a width-16 model in the parent first; "
            "allocator and page granularity make it coarse at this size; nan: not run in its "
            "own process). "
            "val loss - AdamW: the excess over the full-rank AdamW row at equal tokens. max "
            "rel sigma drift: max_k |sigma_k(end) - sigma_k(start)| / sigma_max(start) over "
            "the hidden matrices (POET rows start from the row-normalised W0; LoRA/OFT rows use "
            "the merged weights). orth error: max ||G^T G - I||_F/sqrt(b) over blocks, taken "
            "before each merge. val loss @ equal time: the last evaluation (every eval_every "
            "steps) reached within the median method's training time (nan: the method's first "
            "evaluation came later). GaLore/APOLLO: rank min-dim/4 on the hidden matrices, "
            "projection refreshed every merge interval; LoRA rank 16 and OFT block b on the "
            "hidden Linears, embeddings/norms/lm_head trainable. tokens/s on the shared CPU."
        ),
    )
    for r in rows:
        table.add_row(**{k: r[k] for k in TEXT_COLUMNS})
    return table


def markov_table(mrows: list[dict], s: ComparisonSetting, seed: int = 0) -> Table:
    """The second table: excess loss over the Markov chain's exact entropy rate."""
    h = mrows[0]["entropy rate"] if mrows else float("nan")
    table = Table(
        f"Excess loss on an order-2 Markov chain (exact entropy rate H = {h:.4f} nats/token)",
        MARKOV_COLUMNS,
        notes=(
            f"Same model sizes, optimisers and steps as the first table, vocabulary "
            f"{s.markov_vocab}; transitions Dirichlet({s.markov_alpha}) (seed {seed}); excess "
            "loss = validation loss - H (nats/token; the Bayes floor is 0, up to the sampling "
            f"noise of {s.val_windows} validation windows). Trained in the same process as the "
            "method's first-table row, after its memory was read."
        ),
    )
    for m in mrows:
        table.add_row(**{k: m[k] for k in MARKOV_COLUMNS})
    return table


def summary_line(rows: list[dict], mrows: list[dict]) -> str | None:
    """POET-X fast against AdamW in one line (``None`` if either did not run)."""
    by = {r["method"]: r for r in rows}
    mby = {m["method"]: m for m in mrows}
    if not {"AdamW", "POET-X fast", "POET-X mem"} <= set(by):
        return None
    adam, px, pm = by["AdamW"], by["POET-X fast"], by["POET-X mem"]
    verdict = "POET-X lags" if px["val loss"] > adam["val loss"] else "POET-X ahead"
    return (
        f"Summary (from this run): val loss AdamW {adam['val loss']:.3f} vs POET-X "
        f"{px['val loss']:.3f} ({verdict} at this tiny scale); Markov excess loss AdamW "
        f"{mby['AdamW']['excess loss']:.3f} vs POET-X {mby['POET-X fast']['excess loss']:.3f}; "
        f"sigma drift AdamW {adam['max rel sigma drift']:.3g} vs POET-X "
        f"{px['max rel sigma drift']:.3g}; optimizer state POET-X / AdamW = "
        f"{px['optimizer state (KB)'] / adam['optimizer state (KB)']:.3f}; saved activations "
        f"mem / fast = {pm['saved activations (KB)'] / px['saved activations (KB)']:.3f}; "
        f"peak RSS AdamW {adam['peak RSS (MB)']:.1f} MB vs POET-X mem "
        f"{pm['peak RSS (MB)']:.1f} MB."
    )


def curves_figure(rows: list[dict], mrows: list[dict]):
    """Loss curves (text), sigma_max of one matrix, and Markov excess-loss curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(15, 4))
    for r, m in zip(rows, mrows, strict=True):
        xs, ys, _ = zip(*r["_curve"], strict=True)
        a.plot(xs, ys, marker="o", label=r["method"])
        xs, ys = zip(*r["_sigma"], strict=True)
        b.plot(xs, ys, marker="o", label=r["method"])
        xs, ys, _ = zip(*m["_curve"], strict=True)
        c.plot(xs, ys, marker="o", label=m["method"])
    a.set(xlabel="optimiser step", ylabel="validation loss (nats/byte)",
          title="loss curves (stdlib text)")  # fmt: skip
    b.set(xlabel="optimiser step", ylabel="sigma_max", title="sigma_max of layers.0.mlp.down_proj")
    c.set(xlabel="optimiser step", ylabel="val loss - H (nats/token)",
          title="excess loss (Markov chain)")  # fmt: skip
    a.legend(fontsize=7)
    fig.tight_layout()
    return fig


@dataclass
class ComparisonResult:
    """What one comparison run measured (:func:`comparison`)."""

    rows: list[dict]
    markov_rows: list[dict]
    skipped: list[str]
    process_cpu_s: float  # CPU seconds of this process and the method processes


_DONE: dict[str, ComparisonResult] = {}


def comparison(s: ComparisonSetting, seed: int = 0) -> ComparisonResult:
    """:func:`run_methods` once per process and setting (both report sections read it)."""
    import resource

    key = f"{s!r}/{seed}"
    if key not in _DONE:

        def cpu() -> float:
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            return time.process_time() + kids.ru_utime + kids.ru_stime

        start = cpu()
        rows, mrows, skipped = run_methods(s, seed)
        _DONE[key] = ComparisonResult(rows, mrows, skipped, cpu() - start)
    return _DONE[key]
