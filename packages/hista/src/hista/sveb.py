"""SVEB: the State Value Estimation Benchmark (research notes C1), at ArithChain scale.

Protocol per problem (``build_cases``):

1. Sample ``G`` responses (the *pool*) and verify them; their mean reward is the GRPO baseline.
2. Sample ``cases_per_problem`` further *source* responses, disjoint from the pool, and cut
   each at a uniformly random space character.
3. Sample ``M`` continuations of each prefix and verify them; their mean is the target
   ``V_MC``. ``K`` more continuations feed the VinePPO-style Monte-Carlo estimator.

``evaluate``: MAE against ``V_MC`` (and against the exact value when the sampler has one),
Spearman correlation, and the mean within-problem std of the predictions (the collapse
diagnostic: a group-average baseline has zero spread inside a problem). ``noise_floor``: MAE
of a ``V_MC`` from ``m < M`` samples; ``binomial_noise_floor``: its exact expectation
``E|Bin(m, v)/m - v|`` for a Bernoulli target of mean ``v``. ``sveb_table``: the benchmark's
table (one row per estimator, then the noise floors), ``mae_figure`` its bar chart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from .arith_chain import Problem, reward

#: ``sampler(problem, response_prefix, n) -> n continuations`` of the response
Sampler = Callable[[Problem, str, int], list[str]]


@dataclass
class SvebCase:
    """One SVEB state: a cut prefix of a source response and its Monte-Carlo value."""

    problem_id: int
    terms: tuple[int, ...]
    pool: list[str]
    pool_rewards: list[float]
    source: str
    source_reward: float
    prefix: str
    mc_rewards: list[float]
    vine_rewards: list[float]
    exact: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def problem(self) -> Problem:
        return Problem(tuple(self.terms))

    @property
    def target(self) -> float:
        return float(np.mean(self.mc_rewards))


def build_cases(
    sampler: Sampler,
    problems: list[Problem],
    group_size: int,
    n_mc: int,
    n_vine: int = 4,
    cases_per_problem: int = 2,
    seed: int = 0,
    exact: Callable[[Problem, str], float] | None = None,
) -> list[SvebCase]:
    """SVEB cases for ``problems``; sources with no space character are skipped."""
    if group_size < 2:
        raise ValueError(f"group size must be >= 2, got {group_size}")
    if n_mc < 1 or cases_per_problem < 1 or n_vine < 0:
        raise ValueError("need n_mc >= 1, cases_per_problem >= 1 and n_vine >= 0")
    rng = np.random.default_rng(seed)
    cases = []
    for pid, p in enumerate(problems):
        pool = sampler(p, "", group_size)
        pool_rewards = [reward(p, o) for o in pool]
        for source in sampler(p, "", cases_per_problem):
            spaces = [i for i, c in enumerate(source) if c == " "]
            if not spaces:
                continue
            cut = int(rng.choice(spaces)) + 1
            prefix = source[:cut]
            conts = sampler(p, prefix, n_mc + n_vine)
            rs = [reward(p, prefix + c) for c in conts]
            cases.append(
                SvebCase(
                    pid,
                    p.terms,
                    pool,
                    pool_rewards,
                    source,
                    reward(p, source),
                    prefix,
                    rs[:n_mc],
                    rs[n_mc:],
                    None if exact is None else float(exact(p, prefix)),
                )
            )
    return cases


def save_cases(cases: list[SvebCase]) -> str:
    """JSON text of the cases (reusable with ``load_cases``)."""
    return json.dumps([asdict(c) for c in cases])


def load_cases(text: str) -> list[SvebCase]:
    return [SvebCase(**{**d, "terms": tuple(d["terms"])}) for d in json.loads(text)]


#: Fields of one line of a user's SVEB JSONL file (``load_jsonl_cases``).
JSONL_REQUIRED = ("problem", "prefix", "pool", "pool_rewards", "mc_rewards")


def load_jsonl_cases(text: str) -> list[SvebCase]:
    """SVEB states of any task from JSON Lines, one state per line.

    Each line: ``problem`` (an id or the problem text: states of one problem share it),
    ``prefix`` (the cut response), ``pool`` (the G rollouts of the problem) with
    ``pool_rewards``, and ``mc_rewards`` (rewards of continuations of the prefix: the target
    ``V_MC`` is their mean); optional ``vine_rewards`` (extra continuations for VinePPO) and
    ``exact`` (a known value). Rewards lie in [0, 1]. A malformed line raises ``ValueError``
    naming it.

    Examples
    --------
    >>> line = ('{"problem": "q1", "prefix": "x = 4, ", "pool": ["x = 4, y = 6", "x = 5, y = 7"],'
    ...         ' "pool_rewards": [1, 0], "mc_rewards": [1, 1, 0]}')
    >>> c = load_jsonl_cases(line)[0]
    >>> c.problem_id, round(c.target, 3), c.pool_rewards
    ('q1', 0.667, [1.0, 0.0])
    """
    cases = []
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            d = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ValueError(f"line {no} is not JSON ({err.msg})") from None
        if not isinstance(d, dict):
            raise ValueError(f"line {no} is not a JSON object")
        missing = [k for k in JSONL_REQUIRED if k not in d]
        if missing:
            raise ValueError(f"line {no} lacks {', '.join(missing)}")

        def rewards(key, need=True, d=d, no=no):
            v = d.get(key, [])
            if not isinstance(v, list) or (need and not v):
                raise ValueError(f"line {no}: {key} must be a non-empty list of numbers")
            try:
                out = [float(x) for x in v]
            except (TypeError, ValueError):
                raise ValueError(f"line {no}: {key} must hold numbers") from None
            if any(not 0.0 <= x <= 1.0 for x in out):  # also rejects NaN
                raise ValueError(f"line {no}: {key} must lie in [0, 1]")
            return out

        pool = d["pool"]
        if not isinstance(pool, list) or not all(isinstance(x, str) for x in pool):
            raise ValueError(f"line {no}: pool must be a list of strings")
        pool_r = rewards("pool_rewards")
        if len(pool) != len(pool_r) or len(pool) < 2:
            raise ValueError(
                f"line {no}: {len(pool)} pool rollouts for {len(pool_r)} rewards (need equal, >= 2)"
            )
        if not isinstance(d["prefix"], str) or not isinstance(d["problem"], (str, int)):
            raise ValueError(f"line {no}: prefix must be a string, problem a string or integer")
        exact = d.get("exact")
        if exact is not None and not (isinstance(exact, (int, float)) and 0 <= exact <= 1):
            raise ValueError(f"line {no}: exact must be a number in [0, 1]")
        cases.append(
            SvebCase(
                str(d["problem"]), (), list(pool), pool_r, d["prefix"], float("nan"),
                d["prefix"], rewards("mc_rewards"), rewards("vine_rewards", need=False),
                None if exact is None else float(exact),
            )
        )  # fmt: skip
    if not cases:
        raise ValueError("no SVEB states in the file")
    return cases


def spearman(x, y) -> float:
    """Spearman rank correlation (average ranks for ties); nan if either side is constant."""

    def ranks(v):
        v = np.asarray(v, dtype=float)
        order = np.argsort(v, kind="mergesort")
        r = np.empty(len(v))
        r[order] = np.arange(len(v))
        for val in np.unique(v):
            m = v == val
            r[m] = r[m].mean()
        return r

    rx, ry = ranks(x), ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def evaluate(predictions, cases: list[SvebCase]) -> dict[str, float]:
    """Error metrics of one estimator's predictions (one per case)."""
    pred = np.asarray(predictions, dtype=float)
    if pred.shape != (len(cases),):
        raise ValueError(f"{pred.shape} predictions for {len(cases)} cases")
    target = np.array([c.target for c in cases])
    out = {
        "mae_mc": float(np.abs(pred - target).mean()),
        "spearman": spearman(pred, target),
    }
    if all(c.exact is not None for c in cases):
        out["mae_exact"] = float(np.abs(pred - np.array([c.exact for c in cases])).mean())
    groups: dict[int, list[float]] = {}
    for p, c in zip(pred, cases, strict=True):
        groups.setdefault(c.problem_id, []).append(p)
    spreads = [np.std(v) for v in groups.values() if len(v) > 1]
    # undefined with one case per problem (None: a blank cell, "n/a" on the command line)
    out["within_std"] = float(np.mean(spreads)) if spreads else None
    return out


def noise_floor(cases: list[SvebCase], m: int) -> dict[str, float]:
    """MAE of a ``V_MC`` built from the first ``m`` continuations (vs the full target / exact)."""
    if not 1 <= m <= min(len(c.mc_rewards) for c in cases):
        raise ValueError(f"m={m} must be in 1..M")
    pred = [float(np.mean(c.mc_rewards[:m])) for c in cases]
    return evaluate(pred, cases)


def binomial_noise_floor(v: float, m: int) -> float:
    """Exact ``E|Bin(m, v)/m - v|``.

    Examples
    --------
    >>> binomial_noise_floor(0.5, 1)
    0.5
    >>> round(binomial_noise_floor(0.3, 4), 4)
    0.1852
    """
    if not 0.0 <= v <= 1.0 or m < 1:
        raise ValueError(f"need v in [0, 1] and m >= 1, got {v}, {m}")
    return float(
        sum(math.comb(m, j) * v**j * (1 - v) ** (m - j) * abs(j / m - v) for j in range(m + 1))
    )


SVEB_COLUMNS = ["estimator", "MAE vs V_MC", "MAE vs exact", "Spearman", "within-problem std"]


def sveb_row(name: str, metrics: dict) -> dict:
    """A row of :func:`sveb_table` from :func:`evaluate`'s metrics (``MAE vs exact`` may be None).

    >>> sveb_row("x", {"mae_mc": 0.1, "spearman": 0.5, "within_std": 0.0})["MAE vs exact"] is None
    True
    """
    return {
        "estimator": name,
        "MAE vs V_MC": metrics["mae_mc"],
        "MAE vs exact": metrics.get("mae_exact"),
        "Spearman": metrics["spearman"],
        "within-problem std": metrics["within_std"],
    }


def sveb_table(
    title: str, cases: list[SvebCase], estimators, notes: str = "", predictions: dict | None = None
):
    """Score ``estimators`` (objects with ``name`` and ``predict(case)``) on ``cases``, then the
    Monte-Carlo noise floors ``V_MC`` with ``M = 1, 2, 4, 8``; an ``icml26_shared`` Table.
    ``predictions``, when given, receives each row's predictions (one per case) by row name."""
    from icml26_shared.progress import progress
    from icml26_shared.results import Table

    table = Table(title, SVEB_COLUMNS, notes=notes)
    store = {} if predictions is None else predictions
    for est in progress(estimators, desc=title):
        store[est.name] = [float(est.predict(c)) for c in cases]
        table.add_row(**sveb_row(est.name, evaluate(store[est.name], cases)))
    for m in (m for m in (1, 2, 4, 8) if m <= min(len(c.mc_rewards) for c in cases)):
        name = f"noise floor: V_MC with M={m}"
        store[name] = [float(np.mean(c.mc_rewards[:m])) for c in cases]
        table.add_row(**sveb_row(name, noise_floor(cases, m)))
    return table


def problem_errors(predictions, cases: list[SvebCase], exact: bool = False) -> dict:
    """Mean absolute error of ``predictions`` per problem (vs ``V_MC``, or vs the exact value).

    The states of one problem share its pool, so they are not independent; the problem is the
    unit of the paired comparisons (:func:`hista.sveb_mini.seed_summary`).

    >>> c = SvebCase(0, (1, 2), ["3;"], [1.0], "3;", 1.0, "", [1.0, 0.0], [])
    >>> problem_errors([0.75, 0.25], [c, c])
    {0: 0.25}
    """
    per: dict = {}
    for p, c in zip(predictions, cases, strict=True):
        per.setdefault(c.problem_id, []).append(abs(p - (c.exact if exact else c.target)))
    return {k: float(np.mean(v)) for k, v in per.items()}


def value_information(cases: list[SvebCase]) -> dict[str, float | None]:
    """Does a case set carry value information beyond its problem?

    Over the problems with >= 2 states: ``within_mc`` is the mean within-problem variance of
    ``V_MC`` (ddof 1); ``noise`` the mean binomial variance of one ``V_MC``, unbiased
    ``v(1 - v) / (M - 1)``; ``excess_sd`` = sqrt(max(0, within_mc - noise)), the within-problem
    spread of the *values* once the target's own sampling noise is taken out (0: every state of a
    problem is worth the same, and no state-value estimator can beat a per-problem constant in
    expectation); ``within_exact_sd`` the same spread of exact values where known. All as
    standard deviations.

    >>> same = [SvebCase(0, (1,), [], [], "", 1.0, "", [1.0, 0.0] * 8, []) for _ in range(2)]
    >>> value_information(same)["excess_sd"]
    0.0
    >>> apart = [SvebCase(0, (1,), [], [], "", 1.0, "", [float(v)] * 16, [], float(v)) for v in (0, 1)]
    >>> round(value_information(apart)["excess_sd"], 3), round(value_information(apart)["within_exact_sd"], 3)
    (0.707, 0.707)
    """
    per: dict = {}
    for c in cases:
        per.setdefault(c.problem_id, []).append(c)
    groups = [g for g in per.values() if len(g) > 1]
    if not groups:
        return {"within_mc_sd": None, "noise_sd": None, "excess_sd": None, "within_exact_sd": None}
    within = float(np.mean([np.var([c.target for c in g], ddof=1) for g in groups]))
    noise = float(
        np.mean(
            [c.target * (1 - c.target) / max(len(c.mc_rewards) - 1, 1) for g in groups for c in g]
        )
    )
    has_exact = all(c.exact is not None for g in groups for c in g)
    ex = np.mean([np.var([c.exact for c in g], ddof=1) for g in groups]) if has_exact else None
    return {
        "within_mc_sd": float(np.sqrt(within)),
        "noise_sd": float(np.sqrt(noise)),
        "excess_sd": float(np.sqrt(max(0.0, within - noise))),
        "within_exact_sd": None if ex is None else float(np.sqrt(ex)),
    }


def mae_figure(tables):
    """Horizontal bars of ``MAE vs V_MC`` per estimator, one panel per SVEB table (stacked),
    with the 95 % t-interval over seeds as error bars where the table has one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_rows = max(len(t.rows) for t in tables)
    fig, axes = plt.subplots(
        len(tables), 1, figsize=(9, (0.32 * n_rows + 1.2) * len(tables)), squeeze=False
    )
    for ax, table in zip(axes[:, 0], tables, strict=True):
        rows = [r for r in table.rows if not r["estimator"].startswith("noise")]
        err = [r.get("± 95% (V_MC)") for r in rows]
        xerr = [e or 0.0 for e in err] if any(e is not None for e in err) else None
        ax.barh([r["estimator"] for r in rows], [r["MAE vs V_MC"] for r in rows], xerr=xerr,
                capsize=2)  # fmt: skip
        ax.set_title(table.title, fontsize=9)
        ax.set_xlabel("MAE vs V_MC" + (" (bars: 95 % t-interval over seeds)" if xerr else ""))
        ax.tick_params(axis="y", labelsize=7)
        ax.invert_yaxis()
    fig.tight_layout()
    return fig
