"""Command line of sigreg: ``sigreg --help``.

``fit/validate/test/predict`` (LightningCLI in subclass mode over
:class:`~sigreg.lightning.ShuffledLabelClassifier`, :class:`~sigreg.lightning.PQNModule`,
:class:`~sigreg.lightning.PPOModule` with their data modules; see ``configs/``),
``reproduce``, and the package commands ``stat`` (SIGReg and diagnostics of your own
embeddings), ``benchmark`` (one suite) and ``diagnose`` (representation diagnostics of a
checkpoint). Nothing heavy is imported until a command runs: ``sigreg --help`` imports
neither torch nor lightning.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def stat(
    embeddings: Path,
    preset: Literal["isogaussian-drl", "lejepa"] = "isogaussian-drl",
    num_slices: int | None = None,
    seed: int = 0,
    out: Path | None = None,
) -> None:
    """SIGReg statistic and representation diagnostics of an (N, D) ``.npy`` array.

    Args:
        embeddings: ``.npy`` file holding an (N, D) floating-point array (integer, bool
            and complex arrays are refused).
        preset: ``isogaussian-drl`` (released code) or ``lejepa``.
        num_slices: Override the preset's slice count.
        seed: Seed of the slices.
        out: Folder to write ``result.json`` into (the printed numbers; written atomically).
    """
    import numpy as np
    import torch
    from icml26_shared.results import atomic_write_text, ensure_writable_dir

    from sigreg.plasticity_metrics import (
        entropy_rank,
        isotropy_gap,
        isotropy_gap_top_share,
        srank,
    )
    from sigreg.sigreg_loss import gaussian_expectation, sigreg

    if not Path(embeddings).is_file():
        raise UsageError(f"embeddings file {str(embeddings)!r} does not exist")
    try:
        arr = np.load(embeddings, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise UsageError(f"cannot read {str(embeddings)!r} as .npy: {err}") from err
    if not np.issubdtype(arr.dtype, np.floating):
        # integer / bool / complex arrays are not embeddings: token ids or a mask passed by
        # mistake would otherwise be scored silently (and complex would drop its imaginary part)
        raise UsageError(
            f"embeddings must be a floating-point (N, D) array, got dtype {arr.dtype} "
            "(cast it first, e.g. arr.astype('float32'), if it really holds features)"
        )
    x = torch.from_numpy(np.asarray(arr, dtype=np.float64)).float()
    if out is not None:  # before any work: an unwritable folder is one line, not a late crash
        try:
            folder = ensure_writable_dir(out)
        except OSError as err:
            raise UsageError(f"cannot write to --out {str(out)!r}: {err}") from err
    g = torch.Generator().manual_seed(seed)
    value = float(sigreg(x, preset=preset, num_slices=num_slices, generator=g))
    print(f"N={x.shape[0]} D={x.shape[1]} preset={preset}")
    print(
        f"SIGReg = {value:.6g} (expected for N(0, I) rows: {gaussian_expectation(x.shape[0], preset=preset):.6g})"
    )
    result = {
        "embeddings": Path(embeddings).name,
        "n": int(x.shape[0]),
        "d": int(x.shape[1]),
        "preset": preset,
        "seed": seed,
        "sigreg": value,
        "sigreg_expected_gaussian": gaussian_expectation(x.shape[0], preset=preset),
        "srank": int(srank(x)),
        "entropy_rank": entropy_rank(x),
        "isotropy_gap": isotropy_gap(x),
        "gap_top_share": isotropy_gap_top_share(x),
    }
    print(
        f"srank(0.01) = {result['srank']}  entropy rank = {result['entropy_rank']:.4g}  "
        f"isotropy gap = {result['isotropy_gap']:.4g} (top eigenvalue's share of gap^2: "
        f"{result['gap_top_share']:.3g})"
    )
    if out is not None:
        import json

        path = atomic_write_text(folder / "result.json", json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")


def benchmark(
    suite: Literal["drift", "digits-shuffle", "cartpole-ns", "minatar-ns"] = "drift",
    method: str = "sigreg",
    sigreg_lambda: float = 1.0,
    agent: Literal["pqn", "ppo"] = "pqn",
    iterations: int = 60,
    phases: int = 4,
    epochs_per_phase: int = 20,
    seed: int = 0,
) -> None:
    """Run one benchmark suite once and print its numbers.

    Args:
        suite: ``drift``, ``digits-shuffle``, ``cartpole-ns`` or ``minatar-ns``.
        method: digits-shuffle method (none, layernorm, redo, shrink-perturb, l2-init,
            sigreg, sigreg-lejepa, lightly-sigreg).
        sigreg_lambda: SIGReg weight (digits and RL suites; 0 = baseline).
        agent: RL agent for the ``*-ns`` suites.
        iterations: Rollouts for the RL suites.
        phases: Label phases for digits-shuffle.
        epochs_per_phase: Epochs per phase for digits-shuffle.
        seed: Seed.
    """
    from icml26_shared.progress import quiet_lightning

    if sigreg_lambda < 0:
        raise UsageError(f"--sigreg_lambda must be >= 0, got {sigreg_lambda}")
    with quiet_lightning():
        if suite == "drift":
            from sigreg.drifting_target import DriftingRegression

            for r in DriftingRegression(eta=0.4).compare(steps=1500, chains=128, seed=seed):
                print(
                    f"kappa={r['kappa']:>4}: closed {r['closed_param']:.5g}  simulated {r['sim_param']:.5g}  "
                    f"ratio vs isotropic {r['ratio_vs_iso']:.4g}"
                )
        elif suite == "digits-shuffle":
            from sigreg.shuffled_labels import METHODS
            from sigreg.shuffled_labels_benchmark import run_shuffled_labels

            if method not in METHODS:
                raise UsageError(f"unknown method {method!r}; choose one of {list(METHODS)}")
            res = run_shuffled_labels(
                method,
                phases=phases,
                epochs_per_phase=epochs_per_phase,
                sigreg_lambda=sigreg_lambda,
                seed=seed,
            )
            for p in res["phases"]:
                print(
                    f"phase {p['phase'] + 1}: acc {p['accuracy']:.4f}  dormant {100 * p['dormant_tau0']:.1f}%  "
                    f"srank {p['srank']:.0f}  isotropy gap {p['isotropy_gap']:.3g}"
                )
        else:
            from sigreg.rl_benchmark import run_agent

            env_id = "CartPole-v1" if suite == "cartpole-ns" else "MinAtar/Breakout-v1"
            kw = dict(lr=1e-3, num_envs=8, num_steps=32) if agent == "pqn" else dict(lr=2.5e-3)
            res = run_agent(
                agent,
                env_id=env_id,
                sigreg_lambda=sigreg_lambda,
                iterations=iterations,
                ns_period=20 * kw.get("num_steps", 128),
                seed=seed,
                **kw,
            )
            print(
                f"{agent} on {env_id} (non-stationary), lambda={sigreg_lambda}: return AUC {res['auc']:.2f}  "
                f"final {res['final']:.2f}  episodes {len(res['episodes'])}  wall {res['wall_s']:.1f} s"
            )


def diagnose(checkpoint: Path, n: int = 512, seed: int = 0) -> None:
    """Representation diagnostics (dormancy, srank, isotropy, SIGReg) of a checkpoint.

    Args:
        checkpoint: Checkpoint of a ShuffledLabelClassifier, PQNModule or PPOModule written
            by ``fit``.
        n: Number of inputs to score.
        seed: Seed of the inputs (agents: uniform observations in [-1, 1]).
    """
    import torch
    from icml26_shared.cli import load_checkpoint

    from sigreg.lightning import PPOModule, PQNModule, ShuffledLabelClassifier
    from sigreg.shuffled_labels import load_digits_tensors

    errors = []
    for module_class in (ShuffledLabelClassifier, PQNModule, PPOModule):
        try:
            module = load_checkpoint(module_class, checkpoint)
            break
        except UsageError as err:  # not this class (or not a checkpoint at all)
            errors.append(err)
    else:
        raise errors[0]
    if isinstance(module, ShuffledLabelClassifier):
        x, y = load_digits_tensors()
        out = module.diagnose(x[:n], y[:n])
    else:
        g = torch.Generator().manual_seed(seed)
        out = module.diagnose(2 * torch.rand(n, module.obs_dim, generator=g) - 1)
    for k, v in out.items():
        print(f"{k}: {v:.6g}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "stat": "sigreg.cli:stat",
            "benchmark": "sigreg.cli:benchmark",
            "diagnose": "sigreg.cli:diagnose",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``sigreg`` console script."""
    return build_cli().main(args)
