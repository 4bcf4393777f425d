"""The N x D x G x scheme grid of paired QAT runs, resumable, written as JSONL.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (268
QAT runs over N, D, G; here a CPU-sized grid).

1. Paired runs: every scheme of one size starts from the same initial weights (seed) and sees
   the same sequence of training batches, so ``delta = L_QAT - L_FP`` is not blurred by seed
   noise -> :func:`train_run`.
2. Several D per run: a warmup-stable-decay schedule; at each budget ``D_i`` a decay branch
   starts at ``(1 - f) D_i`` from a snapshot of the stable phase, is evaluated on the fixed
   validation windows, and the main run resumes from the snapshot (Hagele et al. 2024)
   -> :func:`train_run`.
3. Grid specification and the named grids of ``sweep`` / ``benchmark``: ``smoke`` (tests),
   ``small`` (the grid of ``configs/reproduce/quick.yaml``), ``medium`` (that of
   ``full.yaml``) -> :class:`GridSpec`, :data:`PRESETS`, :func:`run_grid`; one training of a
   grid shared by every report section -> :func:`grid_records`.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch
from icml26_shared.progress import progress

from .activation_outliers import activation_statistics
from .lightning import NonFiniteLossError, QATLanguageModel, TextDataModule
from .tiny_llama import SIZES


@dataclass(frozen=True)
class GridSpec:
    """What to train: sizes x schemes x group sizes, each run yielding every token budget.

    Args:
        sizes: Names in :data:`qat_scaling.tiny_llama.SIZES`.
        budgets: Token budgets D as numbers of optimizer steps (tokens = steps x batch x seq).
        runs: ``(scheme, G)`` pairs trained for every size (``("FP", 0)`` is the baseline).
        batch_size, seq_len, lr, warmup_steps, decay_fraction: Training settings.
        val_batches: Fixed validation batches (``val_batches x batch_size`` windows).
        corpus: ``stdlib`` or ``markov``; ``corpus_kwargs`` go to the corpus.
        seed: Seed of weights and data order, shared by the paired runs.
        noise_seeds: Extra FP seeds per size, to measure seed noise of the loss.
        stats_bits: Bits of the activation-statistics quantiser (FP runs).
        seeds: Paired seeds: every run of ``runs`` is trained once per seed (each seed with
            its own initial weights and data order, shared by the schemes of that seed).
            Empty: ``(seed,)``.
        torchao_runs: ``(scheme, G)`` pairs also trained with torchao's QAT flow
            (:mod:`qat_scaling.torchao_qat`; ``W4A4``, ``W4A16``, ``W16A4``); their records
            carry the scheme ``<scheme>-torchao``.
        torchao_sizes: Sizes the ``torchao_runs`` are trained at (empty: every size).
        scale_rule: Scale convention of our quantisers (``absmax`` or ``torchao``, the one
            torchao's trainer uses).

    Examples:
        >>> spec = PRESETS["smoke"]
        >>> spec.tokens(spec.budgets[-1]) == spec.budgets[-1] * spec.batch_size * spec.seq_len
        True
    """

    sizes: tuple[str, ...]
    budgets: tuple[int, ...]
    runs: tuple[tuple[str, int], ...]
    batch_size: int = 8
    seq_len: int = 128
    lr: float = 3e-3
    warmup_steps: int = 20
    decay_fraction: float = 0.25
    val_batches: int = 8
    corpus: str = "stdlib"
    corpus_kwargs: dict = field(default_factory=dict)
    seed: int = 0
    noise_seeds: tuple[int, ...] = ()
    stats_bits: int = 4
    seeds: tuple[int, ...] = ()
    torchao_runs: tuple[tuple[str, int], ...] = ()
    scale_rule: str = "absmax"
    torchao_sizes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # YAML gives lists: store tuples, so that a spec from a preset equals (and hashes like)
        # the same spec written in Python
        for name in ("sizes", "budgets", "noise_seeds", "seeds", "torchao_sizes"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        for name in ("runs", "torchao_runs"):
            pairs = getattr(self, name)
            if any(len(p) != 2 for p in pairs):
                raise ValueError(f"every entry of {name} is a [scheme, G] pair, got {pairs}")
            object.__setattr__(self, name, tuple((str(s), int(g)) for s, g in pairs))
        object.__setattr__(self, "corpus_kwargs", dict(self.corpus_kwargs))
        unknown = [s for s in self.sizes + self.torchao_sizes if s not in SIZES]
        if unknown:
            raise ValueError(f"unknown size(s) {unknown}; choose from {', '.join(SIZES)}")
        if sorted(self.budgets) != list(self.budgets) or not self.budgets or self.budgets[0] <= 0:
            raise ValueError(f"budgets must be increasing positive step counts, got {self.budgets}")
        if not any(s == "FP" for s, _ in self.runs):
            raise ValueError("the grid needs an FP run to pair the QAT runs with")
        from .quant_linear import SCHEMES

        for scheme, g in self.runs + self.torchao_runs:
            if scheme not in SCHEMES:
                raise ValueError(f"unknown scheme {scheme!r}; choose from {', '.join(SCHEMES)}")
            if scheme != "FP" and g < 2:
                raise ValueError(f"{scheme}: the group size G must be >= 2, got {g}")
        if self.scale_rule not in ("absmax", "torchao"):
            raise ValueError(f"scale_rule must be absmax or torchao, got {self.scale_rule!r}")
        bad = [s for s, _ in self.torchao_runs if s not in TORCHAO_SCHEMES]
        if bad:
            raise ValueError(f"torchao_runs: {bad} not supported; choose from {TORCHAO_SCHEMES}")

    @property
    def paired_seeds(self) -> tuple[int, ...]:
        """The seeds every run is trained at (``seeds``, or ``(seed,)``)."""
        return self.seeds or (self.seed,)

    def tokens(self, steps: int) -> int:
        """Training tokens D after ``steps`` optimizer steps."""
        return steps * self.batch_size * self.seq_len

    def jobs(self) -> list[dict]:
        """Every run of the grid as ``{size, scheme, G, seed}``."""
        out = []
        for seed in self.paired_seeds:
            for size in self.sizes:
                for scheme, g in self.runs:
                    out.append({"size": size, "scheme": scheme, "G": g, "seed": seed})
        # the torchao anchor after every run of our trainer
        for seed in self.paired_seeds:
            for size in self.torchao_sizes or self.sizes:
                for scheme, g in self.torchao_runs:
                    out.append(
                        {"size": size, "scheme": scheme, "G": g, "seed": seed, "trainer": "torchao"}
                    )
        for size in self.sizes:
            for s in self.noise_seeds:
                out.append({"size": size, "scheme": "FP", "G": 0, "seed": s})
        return out

    def fingerprint(self) -> str:
        """Hash of the training settings that make two records comparable.

        Sizes, runs and seeds are left out: a grid grown by more of them resumes from the
        same file; a change of budgets, batch, lr, schedule or corpus starts afresh.
        """
        import hashlib

        keep = {k: v for k, v in asdict(self).items() if k not in _CELL_KEYS}
        return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:12]


#: GridSpec fields that only choose cells (left out of :meth:`GridSpec.fingerprint`).
_CELL_KEYS = frozenset(
    {"sizes", "runs", "seed", "seeds", "noise_seeds", "torchao_runs", "torchao_sizes"}
)
#: Schemes torchao's QAT flow trains here (4-bit integer weights and/or activations).
TORCHAO_SCHEMES = ("W4A4", "W4A16", "W16A4")


_G3 = (8, 16, 32)
PRESETS: dict[str, GridSpec] = {
    "smoke": GridSpec(
        sizes=("s32",),
        budgets=(6, 12),
        runs=(("FP", 0), ("W4A4", 8), ("W4A4", 32)),
        batch_size=4,
        seq_len=32,
        warmup_steps=2,
        val_batches=2,
        corpus="markov",
        corpus_kwargs={"vocab": 32, "train_tokens": 20_000, "val_tokens": 4_000},
    ),
    "small": GridSpec(
        sizes=("s32", "s32x3"),
        budgets=(25, 50),
        runs=(
            ("FP", 0),
            ("W4A4", 8),
            ("W4A4", 32),
            ("W4A16", 32),
            ("W16A4", 32),
            ("W16A4-FC2A8", 32),
        ),
        seq_len=64,
        warmup_steps=5,
        val_batches=4,
        corpus_kwargs={"max_bytes": 2_000_000},
    ),
    "medium": GridSpec(
        sizes=("s32", "s32x3", "s64"),
        budgets=(50, 100, 200),
        runs=(("FP", 0),)
        + tuple(("W4A4", g) for g in _G3)
        + tuple((s, g) for s in ("W4A16", "W16A4") for g in (8, 32))
        + (("W4A4-FC2A8", 32), ("W16A4-FC2A8", 32), ("W16A4-FC2had", 32)),
        val_batches=12,
        noise_seeds=(1,),
    ),
}


def run_id(job: dict) -> str:
    """A stable name of one run."""
    suffix = "-torchao" if job.get("trainer") == "torchao" else ""
    return f"{job['size']}-{job['scheme']}{suffix}-G{job['G']}-seed{job['seed']}"


@torch.no_grad()
def evaluate(module: QATLanguageModel, batches: list[torch.Tensor]) -> float:
    """Token-weighted mean validation loss (nats)."""
    module.eval()
    total, count = 0.0, 0
    for b in batches:
        total += float(module.loss(b)) * b.shape[0]
        count += b.shape[0]
    module.train()
    return total / count


def train_run(
    spec: GridSpec,
    job: dict,
    data: TextDataModule,
    on_trained: Callable[[QATLanguageModel], None] | None = None,
) -> list[dict]:
    """Train one run with WSD decay branches; one record per token budget.

    Each record: ``run, size, N, scheme, G, seed, steps, D, val_loss, train_loss, seconds``
    (FP runs also carry ``act_stats`` at the largest budget). ``on_trained`` is called with
    the trained module at the largest budget (to measure it; the grid keeps no weights).
    """
    size = SIZES[job["size"]]
    top = spec.budgets[-1]
    # an FP run quantises nothing; its group size (read only by the activation statistics)
    # is the grid's largest G, which divides every width the QAT runs use; an FP-only grid
    # (a convergence pilot) takes 16, which divides every width of SIZES
    fp_g = max((g for _, g in spec.runs if g), default=16)
    torchao = job.get("trainer") == "torchao"
    module = QATLanguageModel(
        size.hidden,
        size.layers,
        size.ffn,
        size.heads,
        data.corpus.vocab_size,
        spec.seq_len,
        scheme="FP" if torchao else job["scheme"],
        group_size=job["G"] or fp_g,
        lr=spec.lr,
        max_steps=top,
        warmup_steps=spec.warmup_steps,
        decay_fraction=spec.decay_fraction,
        seed=job["seed"],
        scale_rule=spec.scale_rule,
    )
    if torchao:
        from .torchao_qat import prepare

        prepare(module.model, job["scheme"], job["G"])
    opt_cfg = module.configure_optimizers()
    opt = opt_cfg["optimizer"]
    base_lrs = [g["lr"] for g in opt.param_groups]
    val = data.val_batches()
    branch_at = {int(round(b * (1 - spec.decay_fraction))): b for b in spec.budgets}
    records: list[dict] = []
    start = time.perf_counter()
    recent: list[float] = []

    def step(i: int, factor: float) -> None:
        for g, lr in zip(opt.param_groups, base_lrs, strict=True):
            g["lr"] = lr * factor
        loss = module.loss(data.train_batch(i))
        if not torch.isfinite(loss):
            raise NonFiniteLossError(f"{run_id(job)}: training loss is {loss.item()} at step {i}")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        recent.append(float(loss.detach()))

    def stable(i: int) -> float:
        return min(1.0, (i + 1) / spec.warmup_steps)

    i = 0
    while i < top:
        if i in branch_at and branch_at[i] != top:
            budget = branch_at[i]
            snap = (copy.deepcopy(module.state_dict()), copy.deepcopy(opt.state_dict()))
            for j in range(i, budget):
                step(j, max(0.0, (budget - j) / (budget - i)) * stable(j))
            records.append(_record(spec, job, module, budget, evaluate(module, val), recent, start))
            module.load_state_dict(snap[0])
            opt.load_state_dict(snap[1])
        decay_start = min(k for k, b in branch_at.items() if b == top)
        factor = stable(i) if i < decay_start else (top - i) / (top - decay_start) * stable(i)
        step(i, factor)
        i += 1
    last = _record(spec, job, module, top, evaluate(module, val), recent, start)
    if job["scheme"] == "FP":
        last["act_stats"] = activation_statistics(
            module.model, val[0][:, :-1], spec.stats_bits, fp_g
        )
    records.append(last)
    if on_trained is not None:
        on_trained(module)
    if torchao:
        from .torchao_qat import convert

        convert(module.model)
    return records


def _record(spec, job, module, steps, val_loss, recent, start) -> dict:
    torchao = job.get("trainer") == "torchao"
    return {
        "run": run_id(job),
        "size": job["size"],
        "N": module.n_params,
        "scheme": job["scheme"] + ("-torchao" if torchao else ""),
        "trainer": "torchao" if torchao else "ours",
        "G": job["G"],
        "seed": job["seed"],
        "grid": spec.fingerprint(),
        "steps": steps,
        "D": spec.tokens(steps),
        "val_loss": val_loss,
        "train_loss": sum(recent[-10:]) / max(1, len(recent[-10:])),
        "seconds": time.perf_counter() - start,
    }


def load_records(path: str | Path, tolerate_partial: bool = False) -> list[dict]:
    """Read a JSONL file of run records (one JSON object per line).

    ``tolerate_partial``: drop an unfinished last line (a write cut short by an interrupt)
    instead of failing on it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"records file {str(path)!r} does not exist")
    out = []
    text = path.read_text()
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as err:
                if tolerate_partial and n == len(lines) and not text.endswith("\n"):
                    break
                raise ValueError(f"{path}:{n}: not a JSON line ({err.msg})") from None
    return out


class GridMismatchError(ValueError):
    """A runs file holds records trained with other settings than the grid asked for."""


def _finished(spec: GridSpec, records: list[dict], path: Path) -> tuple[list[dict], set[str]]:
    """The records of finished runs (every budget present) and their run ids."""
    fp = spec.fingerprint()
    other = {r.get("grid") for r in records} - {fp}
    if other:
        raise GridMismatchError(
            f"{path} holds runs of other grid settings (budgets, batch, lr or corpus differ); "
            "give another --out or delete it"
        )
    counts: dict[str, int] = {}
    for r in records:
        counts[r["run"]] = counts.get(r["run"], 0) + 1
    done = {r for r, c in counts.items() if c >= len(spec.budgets)}
    return [r for r in records if r["run"] in done], done


def finished_records(spec: GridSpec, path: str | Path) -> list[dict]:
    """The records of the finished runs of ``spec`` in ``path`` (nothing is trained)."""
    path = Path(path)
    return _finished(spec, load_records(path, tolerate_partial=True), path)[0]


def run_grid(
    spec: GridSpec,
    out: str | Path | None = None,
    resume: bool = True,
    on_run: Callable[[str], None] | None = None,
) -> list[dict]:
    """Train every run of ``spec``; append records to ``out`` (JSONL); skip finished runs.

    A finished run (all its budgets on file, same :meth:`GridSpec.fingerprint`) is never
    retrained; the records of a run are appended in one write once it has finished, so an
    interrupted sweep leaves only whole runs behind (an unfinished last line is dropped on
    resume). Returns all records (those read back from ``out`` included).
    """
    torch.set_num_threads(1)
    data: dict[int, TextDataModule] = {}
    corpus = None

    def data_for(seed: int) -> TextDataModule:
        nonlocal corpus
        if seed not in data:
            dm = TextDataModule(
                spec.corpus,
                spec.seq_len,
                spec.batch_size,
                train_batches=spec.budgets[-1],
                val_batches=spec.val_batches,
                seed=seed,
                corpus_kwargs=dict(spec.corpus_kwargs),
            )
            dm.corpus = corpus  # one corpus for every seed (the split is fixed)
            dm.setup("fit")
            corpus = dm.corpus
            data[seed] = dm
        return data[seed]

    records: list[dict] = []
    done: set[str] = set()
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        if resume and out.exists():
            records, done = _finished(spec, load_records(out, tolerate_partial=True), out)
            # rewrite without unfinished runs or a cut-off line (atomic replace)
            from icml26_shared.results import atomic_write_text

            atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in records))
        elif out.exists():
            out.unlink()
    # the validation windows (and the corpus) are the same for every seed: build seed 0's
    # data first so that a failing corpus fails before any training
    jobs = [j for j in spec.jobs() if run_id(j) not in done]
    if jobs:
        data_for(jobs[0]["seed"])
    for job in progress(jobs, desc="QAT runs", total=len(jobs)):
        new = train_run(spec, job, data_for(job["seed"]))
        records.extend(new)
        if out is not None:
            with out.open("a") as fh:
                fh.write("".join(json.dumps(r) + "\n" for r in new))
                fh.flush()
                os.fsync(fh.fileno())
        if on_run is not None:
            on_run(run_id(job))
    return records


def spec_hash(spec: GridSpec) -> str:
    """Short hash of a spec (names the JSONL file so that runs of other specs are not mixed)."""
    import hashlib

    return hashlib.sha256(json.dumps(asdict(spec), sort_keys=True).encode()).hexdigest()[:10]


def grid_spec(setting: GridSpec, seed: int | None = None) -> GridSpec:
    """The plain :class:`GridSpec` of ``setting`` (a subclass carrying more options), at ``seed``.

    >>> grid_spec(PRESETS["smoke"], seed=3).seed
    3
    """
    spec = GridSpec(**{f.name: getattr(setting, f.name) for f in fields(GridSpec)})
    return spec if seed is None else replace(spec, seed=seed)


_TRAINED: dict[tuple[str, str | None], list[dict]] = {}


def grid_records(spec: GridSpec, runs_file: str | Path | None = None) -> list[dict]:
    """The run records of ``spec``'s grid, trained once per process.

    Several report sections read the same grid: the first call trains it (through
    :func:`run_grid`, resuming from ``runs_file`` when given), later calls with an equal spec
    return the same records.
    """
    spec = grid_spec(spec)
    key = (spec_hash(spec), None if runs_file is None else str(Path(runs_file).resolve()))
    if key not in _TRAINED:
        _TRAINED[key] = run_grid(spec, runs_file)
    return _TRAINED[key]
