"""SVEB-mini: the paper's value-estimation comparison on ArithChain, with its ppo-1 critics.

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782), SVEB (research notes C1) at CPU scale.
:func:`sveb_mini` builds two case sets from the same problems:

(a) the SFT policy's own rollouts, target = Monte-Carlo mean of ``M`` continuations;
(b) the noisy teacher's rollouts, where the exact value of every prefix is known (the policy
    serves as the hidden-state encoder there),

trains a PPO-style critic (:func:`~hista.lightning.train_critic`, value head on the frozen
policy) on labelled rollouts of problems outside the benchmark for each ("ppo-1"), and scores
group mean, critic, VinePPO MC (K=2, 4), Numca and Hista as the reference runs them, Numca and
Hista with their options chosen on a *validation split* (other problems, same sampler:
:func:`select_on_validation` over :data:`NUMCA_GRID` and :data:`HISTA_GRID`), Hista on
informative states and, on (b), the exact oracle, plus the MC noise floor
(:func:`~hista.sveb.sveb_table`). :func:`seed_summary` condenses the tables of several seeds
into means with 95 % t-intervals.
"""

from __future__ import annotations

import numpy as np
import torch

from .arith_chain import NoisyTeacher, reward, sample_problems
from .estimators import (
    INFORMATIVE_SCALE,
    CriticValue,
    Encoder,
    GroupMean,
    HistaValue,
    InformativeEncoder,
    NumcaEstimator,
    Oracle,
    VineMC,
)
from .hista_knn import ARITH_HISTA, HistaEstimator
from .lightning import CriticModule, train_critic
from .policy import CausalLMPolicy
from .sveb import build_cases, evaluate, problem_errors, sveb_table, value_information

POLICY_ROLLOUTS = "policy rollouts"
TEACHER_ROLLOUTS = "teacher rollouts (exact values)"


#: Numca options tried on the validation split: (prior pseudo-visits, value of unseen states).
NUMCA_GRID = [(p, u) for p in (0.0, 1.0, 4.0, 16.0) for u in ("table", "parent")]
#: Hista options tried on the validation split (the rest of ``ARITH_HISTA`` kept): the prefix
#: Chamfer distance (one-sided as the reference, or symmetric), ``k``, the EMA rate ``alpha``,
#: the length window (``None``: every pool node, the reference) and the weight ``b`` of the
#: group mean as a pseudo-neighbour (0: the reference; at ``min_distance = 0.05`` the group
#: mean weighs as much as ``20 b`` neighbours at distance 1). The reference setting
#: (``ARITH_HISTA``) is one of the 144 candidates.
HISTA_GRID = [
    {"distance": d, "k": k, "alpha": a, "length_window": w, "baseline_weight": b}
    for d in ("longer", "symmetric")
    for k in (4, 16, 64)
    for a in (0.5, 0.7, 0.9)
    for w in (None, 2)
    for b in (0.0, 0.05, 0.5, 8.0)
]  # fmt: skip


def select_on_validation(candidates: list, val_cases: list) -> tuple[object, float]:
    """The candidate estimator with the lowest MAE vs ``V_MC`` on ``val_cases``, and that MAE.

    >>> from hista.sveb import SvebCase
    >>> class Const:
    ...     def __init__(self, v): self.v = v
    ...     def predict(self, case): return self.v
    >>> cases = [SvebCase(0, (1, 2), ["3;"], [1.0], "3;", 1.0, "", [0.2], [])]
    >>> best, mae = select_on_validation([Const(0.9), Const(0.3)], cases)
    >>> best.v, round(mae, 3)
    (0.3, 0.1)
    """
    if not candidates or not val_cases:
        raise ValueError("need candidates and validation cases")
    scored = [(evaluate([c.predict(x) for x in val_cases], val_cases)["mae_mc"], i) for i, c in
              enumerate(candidates)]  # fmt: skip
    mae, best = min(scored)
    return candidates[best], float(mae)


def validated_hista(
    encoder, val_cases: list, grid: list[dict] | None = None, base: dict | None = None
) -> tuple[HistaEstimator, float]:
    """Hista's options chosen on a validation split: the :class:`HistaEstimator` of
    ``{**base, **g}`` for the ``g`` in ``grid`` (default :data:`HISTA_GRID` over
    :data:`~hista.hista_knn.ARITH_HISTA`) with the lowest MAE vs ``V_MC`` on ``val_cases``
    (SVEB cases of *other* problems than those scored), and that MAE. Embeddings are shared
    across the grid (one EMA per text and ``alpha``).
    """
    grid = HISTA_GRID if grid is None else grid
    base = ARITH_HISTA if base is None else base
    cache: dict = {}
    cands = [HistaValue(encoder, HistaEstimator(**{**base, **g}), cache=cache) for g in grid]
    best, mae = select_on_validation(cands, val_cases)
    return best.est, mae


def hista_options(est: HistaEstimator) -> str:
    """The options :data:`HISTA_GRID` varies, as ``name value`` pairs."""
    return ", ".join(f"{k} {getattr(est, k)}" for k in HISTA_GRID[0])


def sveb_estimators(
    enc: Encoder, critic: CriticModule, exact: bool, val_cases: list | None = None
) -> tuple[list, list[str]]:
    """The estimators of the SVEB-mini tables (the oracle only where exact values exist).

    With ``val_cases`` (same sampler, other problems) Numca's and Hista's options are chosen
    there; the second return value says what was chosen.
    """
    ests = [
        GroupMean(),
        CriticValue(enc, critic),
        VineMC(2),
        VineMC(4),
        NumcaEstimator(name="Numca (reference: plain means, unseen = 0)"),
        HistaValue(enc, HistaEstimator(**ARITH_HISTA), "Hista (reference distance, fixed k)"),
        HistaValue(
            InformativeEncoder(enc, INFORMATIVE_SCALE),
            HistaEstimator(**ARITH_HISTA),
            "Hista (reference), informative states (+ planted wrong-sum coordinate)",
        ),
    ]
    chosen = []
    if val_cases:
        numca, mae = select_on_validation([NumcaEstimator(p, u) for p, u in NUMCA_GRID], val_cases)
        ests.append(NumcaEstimator(numca.prior, numca.unseen, "Numca (default: validated)"))
        chosen.append(f"Numca: prior {numca.prior:g}, unseen {numca.unseen} (val MAE {mae:.3f})")
        hista, mae = validated_hista(enc, val_cases)
        ests.append(HistaValue(enc, hista, "Hista (default: validated)"))
        chosen.append(f"Hista: {hista_options(hista)} (val MAE {mae:.3f})")
        inf_enc = InformativeEncoder(enc, INFORMATIVE_SCALE)
        inf, mae = validated_hista(inf_enc, val_cases)
        ests.append(
            HistaValue(
                inf_enc,
                inf,
                "Hista (default: validated), informative states (+ planted wrong-sum coordinate)",
            )  # fmt: skip
        )
        chosen.append(f"Hista, informative states: {hista_options(inf)} (val MAE {mae:.3f})")
    return ests + ([Oracle()] if exact else []), chosen


def seed_summary(title: str, per_seed: list, notes: str = "", per_problem: list | None = None):
    """Mean and 95 % t-interval half-width over seeds of each row of per-seed SVEB tables.

    ``Δ vs group`` is the paired difference, per seed, between a row's MAE and the group
    mean's MAE on the same states (negative: better than the group mean), with its 95 %
    t-interval: an interval entirely below 0 means the row beats the group mean.

    ``per_problem`` (one dict per seed, ``{row name: (errors vs V_MC by problem, errors vs
    exact by problem or None)}``, :func:`~hista.sveb.problem_errors`) adds the same paired
    difference with the *problem* as the unit, pooled over all seeds (``Δ/problem``: the mean
    over ``problems x seeds`` problems of the row's minus the group mean's error on that
    problem's states, with its 95 % t-interval): the states of one problem share a pool and are
    not independent, problems are. ``per seed`` lists the row's MAE vs ``V_MC`` of each seed.
    """
    from icml26_shared.results import Table

    from .rl_comparison import t_interval

    cols = ["estimator", "MAE vs V_MC", "± 95% (V_MC)", "per seed (V_MC)", "Δ vs group (V_MC)",
            "± 95% (Δ V_MC)", "Δ/problem (V_MC)", "± 95% (Δ/problem V_MC)", "MAE vs exact",
            "± 95% (exact)", "Δ vs group (exact)", "± 95% (Δ exact)", "Δ/problem (exact)",
            "± 95% (Δ/problem exact)", "Spearman", "within-problem std"]  # fmt: skip
    table = Table(title, cols, notes=notes)
    ci = t_interval
    group = [next(r for r in t.rows if r["estimator"] == GroupMean.name) for t in per_seed]

    def pooled(name: str, which: int):
        if per_problem is None:
            return None, None
        d = []
        for errs in per_problem:
            mine, base = errs[name][which], errs[GroupMean.name][which]
            if mine is None or base is None:
                return None, None
            d += [mine[p] - base[p] for p in sorted(mine, key=str)]
        return float(np.mean(d)), ci(d)

    for i, row in enumerate(per_seed[0].rows):
        rows = [t.rows[i] for t in per_seed]
        mc = [r["MAE vs V_MC"] for r in rows]
        d_mc = [r["MAE vs V_MC"] - g["MAE vs V_MC"] for r, g in zip(rows, group, strict=True)]
        has_ex = all(r["MAE vs exact"] is not None for r in rows)
        ex = [r["MAE vs exact"] for r in rows] if has_ex else []
        d_ex = (
            [r["MAE vs exact"] - g["MAE vs exact"] for r, g in zip(rows, group, strict=True)]
            if has_ex
            else []
        )
        pm, pm_ci = pooled(row["estimator"], 0)
        pe, pe_ci = pooled(row["estimator"], 1)
        table.add_row(
            estimator=row["estimator"],
            **{
                "MAE vs V_MC": float(np.mean(mc)),
                "± 95% (V_MC)": ci(mc),
                "per seed (V_MC)": " / ".join(f"{x:.3f}" for x in mc),
                "Δ vs group (V_MC)": float(np.mean(d_mc)),
                "± 95% (Δ V_MC)": ci(d_mc),
                "Δ/problem (V_MC)": pm,
                "± 95% (Δ/problem V_MC)": pm_ci,
                "MAE vs exact": float(np.mean(ex)) if has_ex else None,
                "± 95% (exact)": ci(ex) if has_ex else None,
                "Δ vs group (exact)": float(np.mean(d_ex)) if has_ex else None,
                "± 95% (Δ exact)": ci(d_ex) if has_ex else None,
                "Δ/problem (exact)": pe,
                "± 95% (Δ/problem exact)": pe_ci,
                "Spearman": float(np.nanmean([r["Spearman"] for r in rows])),
                "within-problem std": (
                    None
                    if any(r["within-problem std"] is None for r in rows)
                    else float(np.mean([r["within-problem std"] for r in rows]))
                ),
            },
        )
    return table


def information_table(per_seed: list[dict]):
    """Per case set, over seeds: does a state carry value information beyond its problem?

    ``per_seed``: one ``{case-set label: value_information(cases)}`` per seed
    (:func:`~hista.sveb.value_information`). Means over seeds with the 95 % t-interval.
    """
    from icml26_shared.results import Table

    from .rl_comparison import t_interval

    keys = [("within_mc_sd", "within-problem sd of V_MC"),
            ("noise_sd", "sd of V_MC's own binomial noise"),
            ("excess_sd", "within-problem sd of the values beyond MC noise"),
            ("within_exact_sd", "within-problem sd of the exact values")]  # fmt: skip
    cols = ["case set"] + [c for _, k in keys for c in (k, f"± 95% ({k.split(' of ')[-1]})")]
    table = Table(
        "Value information in the states: within-problem spread of the target",
        cols,
        notes="Over the problems of each seed (>= 2 states each): the sd of V_MC across one "
        "problem's states (ddof 1), the binomial sd of one V_MC (v(1-v)/(M-1)), and the spread "
        "left once that noise is subtracted (sqrt(max(0, within variance - noise variance))). "
        "Where the last is near 0, a state's value is its problem's value, and no state-value "
        "estimator can beat the group mean beyond the group mean's own sampling noise.",
    )
    for label in per_seed[0]:
        row = {"case set": label}
        for key, name in keys:
            v = [s[label][key] for s in per_seed]
            if any(x is None for x in v):
                continue
            row[name] = float(np.mean(v))
            row[f"± 95% ({name.split(' of ')[-1]})"] = t_interval(v)
        table.add_row(**row)
    return table


def sveb_mini(
    policy: CausalLMPolicy,
    problems: int,
    group_size: int,
    n_mc: int,
    cases_per_problem: int,
    critic_problems: int,
    critic_epochs: int,
    seed: int = 0,
    validation: bool = True,
) -> tuple[list, dict[str, CriticModule], list[str]]:
    """The two SVEB-mini tables (policy rollouts, teacher rollouts), the ppo-1 critics and
    what the validation split chose (``validation``: ``problems`` other problems, same sizes),
    and per case set each row's errors by problem and the case set's
    :func:`~hista.sveb.value_information` (``{"errors": ..., "information": ...}``).

    One torch generator (policy samples) and one numpy generator (teacher samples), both
    seeded with ``seed``, run through both case sets in order, so the critic of the teacher
    rollouts is the same object :func:`~hista.advantage_variance.advantage_error_table` scores.
    """
    teacher = NoisyTeacher()
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    enc = Encoder(policy)

    def policy_sampler(p, prefix, n):
        return policy.generate(p.prompt + prefix, n, generator=gen)

    def teacher_sampler(p, prefix, n):
        return [teacher.continue_from(p, prefix, rng) for _ in range(n)]

    def critic_for(sampler):  # labelled rollouts of problems outside SVEB, per-token regression
        feats, targets = [], []
        for p in sample_problems(critic_problems, seed=seed + 101):
            outs = sampler(p, "", 8)
            for o, h in zip(outs, enc.states([p.prompt + o for o in outs]), strict=True):
                f = h[len(p.prompt) - 1 : -1]
                feats.append(f)
                targets.append(torch.full((f.shape[0],), reward(p, o)))
        return train_critic(torch.cat(feats), torch.cat(targets), critic_epochs, seed)

    chosen = sample_problems(problems, seed=seed + 1)
    val_problems = sample_problems(problems, seed=seed + 2) if validation else []
    tables, critics, picks, extra = [], {}, [], {"errors": {}, "information": {}}
    for label, sampler, exact in (
        (POLICY_ROLLOUTS, policy_sampler, None),
        (TEACHER_ROLLOUTS, teacher_sampler, teacher.exact_value),
    ):
        cases = build_cases(sampler, chosen, group_size, n_mc, 4, cases_per_problem, seed, exact)
        val = []
        if validation:
            val = build_cases(
                sampler, val_problems, group_size, n_mc, 4, cases_per_problem, seed + 50, exact
            )
        critics[label] = critic_for(sampler)
        mean_r = float(np.mean([r for c in cases[::cases_per_problem] for r in c.pool_rewards]))
        notes = (
            f"{len(cases)} states from {problems} problems, G={group_size} pool "
            f"rollouts per problem (disjoint from the cut source), V_MC from M={n_mc} "
            f"continuations; mean pool reward {mean_r:.3f}. Lower MAE is better; "
            "within-problem std = mean std of the predictions over the states of one "
            "problem (0 = collapsed to a per-problem constant)."
        )
        ests, why = sveb_estimators(enc, critics[label], exact is not None, val)
        picks += [f"{label}: {w}" for w in why]
        preds: dict = {}
        tables.append(sveb_table(f"SVEB-mini, {label}", cases, ests, notes, preds))
        extra["errors"][label] = {
            name: (problem_errors(p, cases), problem_errors(p, cases, True) if exact else None)
            for name, p in preds.items()
        }
        extra["information"][label] = value_information(cases)
    return tables, critics, picks, extra


def sveb_over_seeds(
    make_policy,
    seeds: int,
    seed: int,
    problems: int,
    group_size: int,
    n_mc: int,
    cases_per_problem: int,
    critic_problems: int,
    critic_epochs: int,
):
    """:func:`sveb_mini` for seeds ``seed .. seed + seeds - 1`` (``make_policy(seed)`` gives each
    its SFT policy), condensed by :func:`seed_summary`, and the :func:`information_table`.
    Returns these tables, the first seed's policy and critics, and what the validation splits
    chose."""
    from icml26_shared.progress import progress

    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    per_seed, picks, extras = [], [], []
    for k in progress(range(seeds), desc="SVEB seeds"):
        pol = make_policy(seed + k)
        tables, crit, why, extra = sveb_mini(
            pol, problems, group_size, n_mc, cases_per_problem, critic_problems, critic_epochs,
            seed + k,
        )  # fmt: skip
        per_seed.append(tables)
        extras.append(extra)
        picks += [f"seed {seed + k}, {w}" for w in why]
        if k == 0:
            first = (pol, crit)
    summaries = [
        seed_summary(
            per_seed[0][i].title + f" ({seeds} seeds)",
            [t[i] for t in per_seed],
            per_seed[0][i].notes.replace(f"{problems} problems", f"{problems} problems per seed")
            + " Mean over seeds and the half-width of its 95 % t-interval; 'validated' rows "
            "chose their options on a validation split of other problems (same sampler, same "
            "sizes), per seed and case set. Δ/problem pools the paired differences to the "
            f"group mean over the {problems} x {seeds} problems (the problem is the unit).",
            [e["errors"][per_seed[0][i].title.removeprefix("SVEB-mini, ")] for e in extras],
        )
        for i in range(len(per_seed[0]))
    ]
    summaries.append(information_table([e["information"] for e in extras]))
    return summaries, first[0], first[1], picks
