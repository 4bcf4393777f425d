"""Command line of hista: ``hista --help``.

``fit/validate/test/predict`` (LightningCLI in subclass mode over :mod:`hista.lightning`:
``SFTModule`` + ``TeacherTracesDataModule`` for the SFT warm start, ``PolicyRLModule`` +
``ArithProblemsDataModule`` for each RL training row, ``CriticModule`` +
``ArithCriticDataModule`` for the PPO-critic baseline; one YAML per row in ``configs/``),
``reproduce``, and the package commands ``sveb-generate``
(write reusable SVEB cases as JSON), ``sveb-evaluate`` (score estimators on such a file) and
``real-advantages`` (the real-model path: a Hub causal LM on a math set, offline-aware) and
``informativeness`` (Hista's SVEB error vs SFT length and planted informative states).

Nothing heavy is imported until a command runs: ``hista --help`` reads the commands' summaries
from this file's source (string targets in :func:`build_cli`); bad input is one line (the
shared :class:`~icml26_shared.cli.PaperCLI` condenses jsonargparse's errors).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def sveb_generate(
    out: Path,
    sampler: Literal["teacher", "policy"] = "teacher",
    problems: int = 50,
    group_size: int = 16,
    n_mc: int = 32,
    n_vine: int = 4,
    cases_per_problem: int = 2,
    sft_steps: int = 400,
    seed: int = 0,
) -> None:
    """Generate SVEB cases on ArithChain and write them as reusable JSON.

    Args:
        out: JSON file to write.
        sampler: ``teacher`` (noisy teacher, exact values known) or ``policy`` (an SFT
            tiny Qwen2 LM trained here for ``sft_steps`` steps).
        problems: Number of problems.
        group_size: Pool rollouts G per problem (>= 2).
        n_mc: Monte-Carlo continuations M per state (the target).
        n_vine: Extra continuations for the VinePPO estimator.
        cases_per_problem: Cut source responses per problem.
        sft_steps: SFT steps of the policy sampler.
        seed: Seed of every generator.
    """
    import numpy as np
    import torch

    from .arith_chain import NoisyTeacher, sample_problems
    from .lightning import sft_warm_start
    from .policy import CausalLMPolicy
    from .sveb import build_cases, save_cases

    if group_size < 2:
        raise UsageError(f"group size must be >= 2, got {group_size}")
    if problems < 1 or n_mc < 1:
        raise UsageError("problems and n_mc must be >= 1")
    teacher = NoisyTeacher()
    rng = np.random.default_rng(seed)
    if sampler == "teacher":

        def sample(p, prefix, n):
            return [teacher.continue_from(p, prefix, rng) for _ in range(n)]

        exact = teacher.exact_value
    else:
        torch.manual_seed(seed)
        policy = CausalLMPolicy()
        sft_warm_start(policy, sample_problems(2000, seed=seed + 7), teacher, sft_steps, seed=seed)
        gen = torch.Generator().manual_seed(seed)

        def sample(p, prefix, n):
            return policy.generate(p.prompt + prefix, n, generator=gen)

        exact = None
    cases = build_cases(
        sample,
        sample_problems(problems, seed=seed + 1),
        group_size,
        n_mc,
        n_vine,
        cases_per_problem,
        seed,
        exact,
    )
    Path(out).write_text(save_cases(cases))
    print(f"wrote {len(cases)} SVEB cases to {out}")


def sveb_evaluate(
    cases: Path,
    method: Literal["group", "numca", "vine", "oracle", "all"] = "all",
    vine_k: int = 4,
    numca_prior: float = 0.0,
    numca_unseen: Literal["table", "parent", "fallback"] = "table",
    out: Path | None = None,
) -> None:
    """Score the rollout-only estimators on SVEB states (MAE, Spearman, spread).

    Hista and the critic need the policy's hidden states; ``hista reproduce`` scores them.

    Args:
        cases: A JSON Lines file of your own states, one per line: ``problem``, ``prefix``,
            ``pool`` (rollouts), ``pool_rewards``, ``mc_rewards`` (optional ``vine_rewards``,
            ``exact``), or a ``.json`` file written by ``hista sveb-generate``.
        method: ``group``, ``numca``, ``vine`` (needs ``vine_rewards``), ``oracle`` (needs
            ``exact``) or ``all`` (those the file supports).
        vine_k: Continuations used by the VinePPO estimator.
        numca_prior: Numca's shrinkage toward the parent state (0: the reference).
        numca_unseen: Numca's value of an unseen state: ``table`` (0, the reference),
            ``parent`` or ``fallback`` (the group mean).
        out: Folder for ``result.json`` and ``results.md`` (optional).
    """
    from icml26_shared.results import Table, atomic_write_text, ensure_writable_dir

    from .estimators import GroupMean, NumcaEstimator, Oracle, VineMC
    from .sveb import SVEB_COLUMNS, evaluate, load_cases, load_jsonl_cases, sveb_row

    path = Path(cases)
    if not path.is_file():
        raise UsageError(f"case file {str(path)!r} does not exist")
    if numca_prior < 0 or vine_k < 1:
        raise UsageError(f"need numca_prior >= 0 and vine_k >= 1, got {numca_prior}, {vine_k}")
    try:
        text = path.read_text(encoding="utf-8")
        loaded = load_cases(text) if text.lstrip().startswith("[") else load_jsonl_cases(text)
    except (UnicodeDecodeError, json.JSONDecodeError, TypeError, KeyError, ValueError) as err:
        raise UsageError(f"{str(path)!r} is not an SVEB case file: {err}") from None
    if not loaded:
        raise UsageError(f"{str(path)!r} holds no cases")
    if out is not None:
        try:
            ensure_writable_dir(out)
        except Exception as err:  # noqa: BLE001 (one line for any unwritable folder)
            raise UsageError(f"cannot write to {str(out)!r}: {err}") from None
    has_exact = all(c.exact is not None for c in loaded)
    has_vine = min(len(c.vine_rewards) for c in loaded) >= vine_k
    if method == "oracle" and not has_exact:
        raise UsageError("the oracle needs an exact value on every line (field 'exact')")
    if method == "vine" and not has_vine:
        raise UsageError(f"vine needs >= {vine_k} vine_rewards on every line")
    numca = NumcaEstimator(numca_prior, numca_unseen)
    table = {"group": [GroupMean()], "numca": [numca], "vine": [VineMC(vine_k)]}
    table["oracle"] = [Oracle()]
    table["all"] = (
        table["group"]
        + (table["vine"] if has_vine else [])
        + table["numca"]
        + (table["oracle"] if has_exact else [])
    )
    problems = len({c.problem_id for c in loaded})
    print(f"{len(loaded)} states of {problems} problems from {path}")
    result = Table(
        "SVEB", SVEB_COLUMNS, notes=f"{len(loaded)} states of {problems} problems from {path.name}"
    )
    for est in table[method]:
        m = evaluate([est.predict(c) for c in loaded], loaded)
        result.add_row(**sveb_row(est.name, m))
        line = f"  {est.name:24s} MAE vs V_MC {m['mae_mc']:.4f}"
        if "mae_exact" in m:
            line += f"  MAE vs exact {m['mae_exact']:.4f}"
        spread = "n/a" if m["within_std"] is None else f"{m['within_std']:.4f}"
        spear = "n/a" if m["spearman"] != m["spearman"] else f"{m['spearman']:.3f}"
        print(line + f"  Spearman {spear}  within-std {spread}")
    if out is not None:
        atomic_write_text(Path(out) / "result.json", json.dumps(result.to_dict(), indent=1))
        atomic_write_text(Path(out) / "results.md", result.to_markdown())
        print(f"wrote {Path(out) / 'result.json'} and results.md")


def real_advantages(
    model: str = "Qwen/Qwen2.5-1.5B-Instruct",
    dataset: str = "gsm8k",
    estimator: str = "numca",
    problems: int = 2,
    group_size: int = 8,
    max_new_tokens: int = 512,
    seed: int = 0,
) -> None:
    """Real-model path: sample groups from a Hub model on a math set, print token advantages.

    Needs the Hub (or a local cache / local model path) and ``math-verify`` (``hista[bench]``).
    Offline without a cache it stops with one line naming the model or dataset.

    Args:
        model: Hub id or local path of a causal LM with a fast tokenizer (Qwen2.5 in the paper).
        dataset: One of ``math``, ``dapo-math``, ``math-500``, ``gsm8k``, ``aime24``, ``aime25``.
        estimator: Token-level advantages: ``group``, ``numca`` or ``hista`` (``vine`` and
            ``critic`` need a sampler / trained value head: Python API only).
        problems: Number of problems (each one group).
        group_size: Completions G per problem (>= 2).
        max_new_tokens: Generation length.
        seed: Sampling seed.
    """
    import torch
    from icml26_shared.hub import HubUnavailableError

    from .advantage_provider import PROVIDERS, make_provider
    from .qwen_math import MATH_DATASETS, load_math_problems, load_policy, sample_group

    if estimator not in PROVIDERS:
        raise UsageError(f"unknown estimator {estimator!r}; use one of {sorted(PROVIDERS)}")
    if estimator in ("vine", "critic"):
        raise UsageError(
            f"the {estimator} estimator needs a "
            + ("continuation sampler" if estimator == "vine" else "trained value head")
            + "; use hista.advantage_provider from Python, or group / numca / hista here"
        )
    if dataset not in MATH_DATASETS:
        raise UsageError(f"unknown dataset {dataset!r}; use one of {sorted(MATH_DATASETS)}")
    if group_size < 2 or problems < 1:
        raise UsageError(f"need group_size >= 2 and problems >= 1, got {group_size}, {problems}")
    try:
        import math_verify  # noqa: F401
    except ImportError:
        raise UsageError("real math rewards need math-verify: pip install 'hista[bench]'") from None
    try:
        rows = load_math_problems(dataset, limit=problems)
        policy, tok = load_policy(model)
    except HubUnavailableError as err:
        raise UsageError(str(err).replace("\n", " ")) from None
    torch.manual_seed(seed)
    provider = make_provider(estimator)
    for row in rows:
        group = sample_group(policy, tok, row, group_size, max_new_tokens)
        adv = provider(group)
        means = " ".join(f"{float(a.mean()):+.3f}" for a in adv)
        print(f"{row['problem_id']}: rewards {group.rewards}  mean token advantage {means}")


def informativeness(
    out: Path = Path("informativeness"),
    sft_steps: list[int] = [400, 1600],  # noqa: B006 (jsonargparse reads the default)
    problems: int = 40,
    scales: list[float] = [3.0, 10.0, 30.0],  # noqa: B006
    seed: int = 0,
) -> None:
    """Hista's SVEB-mini error vs SFT length and planted informative states (a diagnostic).

    Args:
        out: Folder for results.json / results.md.
        sft_steps: Increasing SFT lengths of the tiny policy (one policy trained further).
        problems: SVEB-mini problems (teacher rollouts, exact values).
        scales: Scales of the planted wrong-partial-sum coordinate.
        seed: Seed of every generator.
    """
    from .informativeness import informativeness_sweep

    try:
        report = informativeness_sweep(out, tuple(sft_steps), problems, tuple(scales), seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    report.write()
    print((Path(out) / "results.md").read_text())


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        # any LightningModule / DataModule, named by class_path in the config (hista.lightning's)
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "sveb-generate": "hista.cli:sveb_generate",
            "sveb-evaluate": "hista.cli:sveb_evaluate",
            "real-advantages": "hista.cli:real_advantages",
            "informativeness": "hista.cli:informativeness",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``hista`` console script."""
    return build_cli().main(args)
