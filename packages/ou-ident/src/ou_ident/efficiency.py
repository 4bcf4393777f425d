"""Finite-sample efficiency of the estimators and coverage of the likelihood intervals.

Paper: "One Intervention per Component is Enough" (ICML 2026). The paper's estimators solve
the steady-state moment equations unweighted; issue #36 asks whether the efficient
estimator (:func:`ou_ident.stationary_likelihood.fit_efficient`: weighted moment equations
then Gaussian maximum likelihood under stationarity) recovers the drift better, and whether
its intervals are calibrated:

- :func:`efficiency_table`: relative drift error of the unweighted joint estimator, the
  weighted moment estimator, the efficient estimator and the recursive estimator (paper's
  unweighted form and the weighted + Hurwitz-projected form), with the number of unstable
  (non-Hurwitz) recursive fits, and the checks that separate a bug from weak
  identification: the Cramer-Rao scale of the problem at the planted truth (the floor of the
  scale-aligned relative error of ``A`` implied by the Fisher information there,
  :func:`cramer_rao_scale`; an error far below it can only come from bias), the
  log-likelihood of the estimates above the truth's (a failing optimiser would end below
  it), and the likelihood fit warm-started at the truth.
- :func:`replication_table`: one planted system identified by one intervention per node,
  many independent experiments: root-mean-square drift error of the joint and the
  efficient estimator (where the Fisher information is not degenerate the efficient
  estimator must win on average).
- :func:`cramer_rao_table`: Monte Carlo over independent experiments on each planted
  system: root-mean-square drift error of the joint and the efficient estimator against the
  Cramer-Rao scale (the floor of any locally unbiased estimator), so that the room a better
  estimator has over the joint fit is measured rather than assumed; and the joint fit's
  spread along the least informed Fisher direction against the Cramer-Rao bound there (a
  spread far below the bound is only possible for a biased estimator: the data do not
  determine that direction, the estimator's own geometry does).
- :func:`sparse_efficiency_table`: the same p = 10 systems, joint vs efficient vs the
  efficient estimator with an l1 (lasso) or adaptive-lasso penalty on the off-diagonal drift,
  penalty chosen by the extended BIC (:func:`ou_ident.sparse_drift.fit_sparse_efficient`):
  a structural prior is the one thing that can help where the data leave drift directions
  undetermined; mean error with a 95% t-interval over seeds.
- :func:`coverage_table`: one planted system, ``replications`` independent experiments
  (exact Wishart moments), the fraction of 95% Wald intervals
  (:meth:`ou_ident.steady_state_fit.OUFit.intervals`) that contain the planted value, per
  parameter group, with the binomial standard error.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.stats
from icml26_shared.experiment import SectionResult, seeds
from icml26_shared.results import Table

from ou_ident.joint import fit_joint
from ou_ident.moment_equations import ParameterLayout
from ou_ident.moment_weighting import MomentWeights, fit_weighted
from ou_ident.recovery_metrics import scale_aligned_rel_error
from ou_ident.recursive import fit_recursive
from ou_ident.stationary_likelihood import (
    environment_jacobians,
    fit_efficient,
    fit_stationary_ml,
    log_likelihood,
    score_information,
    tangent_basis,
)
from ou_ident.steady_state_fit import OUFit
from ou_ident.synthetic import make_problem

__all__ = [
    "coverage",
    "coverage_table",
    "cramer_rao_scale",
    "cramer_rao_rows",
    "cramer_rao_table",
    "efficiency_rows",
    "efficiency_table",
    "replication_table",
    "sparse_efficiency_rows",
    "sparse_efficiency_table",
]


def cramer_rao_scale(theta, data, layout, rhos=None) -> float:
    """Cramer-Rao scale of the scale-aligned relative drift error at ``theta``.

    ``sqrt(tr(P Sigma_A P)) / ||A||_F``: ``Sigma_A`` is the drift block of the inverse
    Fisher information in the tangent of ``tr D = p``, and ``P = I - a a^T / ||a||^2``
    (``a = vec A``) removes the direction of ``A`` itself, which the metric
    :func:`ou_ident.recovery_metrics.scale_aligned_rel_error` does not count (to first
    order ``min_c ||c (A + E) - A|| = ||P vec E||``). It is the floor of the root-mean-square
    aligned error of a locally unbiased estimator, attained asymptotically by maximum
    likelihood. ``rhos``: knock-down factors (held fixed, as in the likelihood fit).

    Examples
    --------
    >>> prob = make_problem(4, "degradation", seed=0)
    >>> layout = ParameterLayout(prob.mask, prob.environments)
    >>> truth, _ = layout.pack(prob.params)
    >>> a = cramer_rao_scale(truth, prob.moments(10**4, seed=0), layout)
    >>> b = cramer_rao_scale(truth, prob.moments(10**6, seed=0), layout)
    >>> round(a / b, 6)                  # se ~ n^-1/2
    10.0
    """
    jacs = environment_jacobians(layout, rhos or {})
    N = tangent_basis(layout)
    _, info = score_information(theta, data, jacs)
    cov = N @ np.linalg.pinv(N.T @ info @ N, rcond=1e-15, hermitian=True) @ N.T
    a = np.asarray(theta[: layout.n_a], float)
    u = a / np.linalg.norm(a)
    P = np.eye(layout.n_a) - np.outer(u, u)
    cov_a = P @ cov[: layout.n_a, : layout.n_a] @ P
    return float(np.sqrt(max(float(np.trace(cov_a)), 0.0)) / np.linalg.norm(a))


def efficiency_rows(p: int, n: int, seed: int, family: str = "degradation") -> dict:
    """Errors of every estimator on one synthetic experiment (one intervention per SCC).

    The experiment is the comparison section's: ``make_problem(p, family, seed=seed)``
    with the moments of ``n`` samples per environment (seed ``seed``). Knock-down factors
    (bilinear) are held at each fit's own estimate in its likelihood, at the planted
    values for the truth.

    Examples
    --------
    >>> row = efficiency_rows(4, 10**6, seed=0)
    >>> row["efficient"] < 0.1 and row["crb"] > 0
    True
    """
    prob = make_problem(p, family, seed=seed)
    data = prob.moments(int(n), seed=seed)
    A = prob.params.A
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, truth_rhos = layout.pack(prob.params)

    def ll(fit_theta, rhos):
        return log_likelihood(fit_theta, data, environment_jacobians(layout, rhos))

    ll_truth = ll(truth, truth_rhos)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint = fit_joint(data, prob.mask)
        weighted = fit_weighted(data, prob.mask, first=joint)
        planted = [env.apply(prob.params) for env in prob.environments]
        oracle = fit_weighted(
            data,
            prob.mask,
            weights=MomentWeights.at(
                [q.A for q in planted], [q.stationary_cov() for q in planted], [d.n for d in data]
            ),
        )
        eff = fit_efficient(data, prob.mask)
        rec0 = fit_recursive(data, prob.mask, weighting="none", project=False)
        rec1 = fit_recursive(data, prob.mask)
        warm = fit_stationary_ml(data, OUFit.from_theta(layout, truth, truth_rhos, "truth"))
    return {
        "joint": scale_aligned_rel_error(joint.A, A),
        "weighted": scale_aligned_rel_error(weighted.A, A),
        "oracle weights": scale_aligned_rel_error(oracle.A, A),
        "efficient": scale_aligned_rel_error(eff.A, A),
        "crb": cramer_rao_scale(truth, data, layout, truth_rhos),
        "ll joint": ll(joint.theta, joint.rhos) - ll_truth,
        "ll efficient": ll(eff.theta, eff.rhos) - ll_truth,
        "warm": scale_aligned_rel_error(warm.A, A),
        "ll warm": ll(warm.theta, warm.rhos) - ll_truth,
        "recursive (paper)": scale_aligned_rel_error(rec0.A, A),
        "recursive (paper) unstable": int(not rec0.params.is_hurwitz),
        "recursive (weighted)": scale_aligned_rel_error(rec1.A, A),
        "recursive (weighted) unstable": int(not rec1.params.is_hurwitz),
        "recursive (weighted) projected": int(rec1.diagnostics["projected_to_hurwitz"]),
    }


def _ms(vals) -> str:
    v = np.asarray(vals, float)
    return f"{v.mean():.3g} ± {v.std(ddof=1) if v.size > 1 else 0.0:.2g}"


def efficiency_table(
    p: int, ns: Sequence[int], seeds: Sequence[int], family: str = "degradation"
) -> Table:
    """One row per ``n``: mean ± sd over seeds of every estimator's relative drift error."""
    table = Table(
        f"Efficient vs joint vs recursive estimator, p = {p}, {family} one per SCC",
        [
            "n",
            "seeds",
            "joint",
            "weighted moments",
            "weighted moments, weights at truth",
            "efficient (ML)",
            "ML warm-started at truth",
            "Cramer-Rao scale at truth",
            "logL - logL(truth): joint / efficient / warm",
            "recursive (paper)",
            "unstable (paper)",
            "recursive (weighted)",
            "unstable (weighted)",
            "per-seed joint / efficient",
        ],  # fmt: skip
        notes=(
            "Relative error ||c A_hat - A||_F / ||A||_F after the best scale c, mean ± sd over "
            "seeds (same experiments as the comparison section at equal n and seed). "
            "Cramer-Rao scale at truth: sqrt(tr P Cov(A) P) / ||A||_F from the Fisher "
            "information at the planted parameters, P removing the direction of A (the "
            "floor of the scale-aligned error of a locally unbiased estimator); an estimator far below it is biased in a "
            "favourable direction rather than more efficient. logL - logL(truth): "
            "log-likelihood of each estimate above the planted truth's, mean over seeds (a "
            "failing optimiser would end below 0; under the model twice the gap of the maximum "
            "is about chi-square with dim(theta) degrees of freedom). ML warm-started at truth: "
            "the same likelihood fit started at the planted parameters. weighted moments, "
            "weights at truth: the moment equations weighted by their sampling covariance at "
            "the planted parameters (an oracle: how much the weighting alone can gain). "
            "unstable: recursive fits whose drift is not Hurwitz; "
            "the weighted recursive fit is projected onto Hurwitz drifts (uniform diagonal "
            "shift), the count before projection is shown."
        ),
    )
    for n in ns:
        rows = [efficiency_rows(p, n, s, family) for s in seeds]
        col = {k: [r[k] for r in rows] for k in rows[0]}
        table.add_row(
            n=int(n),
            seeds=len(rows),
            **{
                "joint": _ms(col["joint"]),
                "weighted moments": _ms(col["weighted"]),
                "weighted moments, weights at truth": _ms(col["oracle weights"]),
                "efficient (ML)": _ms(col["efficient"]),
                "ML warm-started at truth": _ms(col["warm"]),
                "Cramer-Rao scale at truth": _ms(col["crb"]),
                "logL - logL(truth): joint / efficient / warm": " / ".join(
                    f"{np.mean(col[k]):.1f}" for k in ("ll joint", "ll efficient", "ll warm")
                ),
                "recursive (paper)": _ms(col["recursive (paper)"]),
                "unstable (paper)": f"{sum(col['recursive (paper) unstable'])}/{len(rows)}",
                "recursive (weighted)": _ms(col["recursive (weighted)"]),
                "unstable (weighted)": (
                    f"{sum(col['recursive (weighted) unstable'])}/{len(rows)} "
                    f"(before projection {sum(col['recursive (weighted) projected'])}/{len(rows)})"
                ),
                "per-seed joint / efficient": "; ".join(
                    f"{a:.3f} / {b:.3f}"
                    for a, b in zip(col["joint"], col["efficient"], strict=True)
                ),
            },
        )
    return table


def coverage(
    p: int, n: int, replications: int, level: float = 0.95, problem_seed: int = 0, seed: int = 0
) -> dict[str, np.ndarray]:
    """Hits ``(replications, k)`` of the Wald intervals per group ``A``, ``b``, ``d``, ``gamma``.

    The planted system is ``make_problem(p, "degradation", seed=problem_seed)``; replication
    ``r`` draws exact Wishart moments with seed ``seed + r``.

    Examples
    --------
    >>> hits = coverage(3, 10**5, 3)
    >>> sorted(hits), hits["A"].shape[0]
    (['A', 'b', 'd', 'gamma'], 3)
    """
    prob = make_problem(p, "degradation", seed=problem_seed)
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, _ = layout.pack(prob.params)
    groups = {
        "A": np.arange(layout.n_a),
        "b": np.arange(layout.n_a, layout.n_a + p),
        "d": np.arange(layout.dim)[layout.d_slice],
        "gamma": np.arange(layout.n_a + 2 * p, layout.dim),
    }
    z = float(scipy.stats.norm.ppf(0.5 + level / 2))
    hits: dict[str, list] = {k: [] for k in groups}
    for r in range(replications):
        data = prob.moments(int(n), seed=seed + r, method="wishart")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_efficient(data, prob.mask)
        se = fit.standard_errors()
        inside = np.abs(fit.theta - truth) <= z * se
        for k, idx in groups.items():
            hits[k].append(inside[idx])
    return {k: np.asarray(v) for k, v in hits.items()}


def coverage_table(
    p: int, n: int, replications: int, level: float = 0.95, problem_seed: int = 0, seed: int = 0
) -> Table:
    """Coverage of the efficient estimator's Wald intervals per parameter group."""
    hits = coverage(p, n, replications, level, problem_seed, seed)
    table = Table(
        f"Coverage of nominal {level:.0%} Wald intervals, p = {p}, n = {n}, "
        f"{replications} replications",
        ["parameters", "count", "coverage", "binomial se", "lowest per-parameter coverage"],
        notes=(
            "One planted system (make_problem(p, 'degradation', seed=0): random single-root SCC "
            "graph, one degradation per SCC), independent exact Wishart moments per replication; "
            "intervals theta_hat ± 1.96 se from the inverse Fisher information in the tangent of "
            "tr D = p (the planted values follow the same scale convention). gamma: the "
            "degradation strengths. Target band: [0.90, 0.98]."
        ),
    )
    allhits = np.concatenate([h for h in hits.values() if h.size], axis=1)
    for name, h in [*hits.items(), ("all", allhits)]:
        if h.size == 0:
            continue
        cov = float(h.mean())
        table.add_row(
            parameters=name,
            count=int(h.shape[1]),
            coverage=cov,
            **{
                "binomial se": float(np.sqrt(cov * (1 - cov) / h.size)),
                "lowest per-parameter coverage": float(h.mean(axis=0).min()),
            },
        )
    return table


def replication_table(
    p: int, n: int, replications: int, problem_seed: int = 1, seed: int = 100
) -> Table:
    """Joint vs efficient estimator on one system identified by one degradation per node.

    ``make_problem(p, "degradation", per_component=p, seed=problem_seed)``; replication ``r``
    draws exact Wishart moments with seed ``seed + r``. Reports the root-mean-square relative
    drift error of both estimators, its relative reduction and the fraction of replications
    where the efficient estimator is closer.
    """
    prob = make_problem(p, "degradation", per_component=p, seed=problem_seed)
    errs = []
    for r in range(replications):
        data = prob.moments(int(n), seed=seed + r, method="wishart")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            joint = fit_joint(data, prob.mask)
            eff = fit_efficient(data, prob.mask)
        errs.append(
            (scale_aligned_rel_error(joint.A, prob.params.A),
             scale_aligned_rel_error(eff.A, prob.params.A))
        )  # fmt: skip
    e = np.asarray(errs)
    rms = np.sqrt((e**2).mean(axis=0))
    table = Table(
        f"Well-identified control: one degradation per node, p = {p}, n = {n}, "
        f"{replications} replications",
        ["estimator", "rms rel. error A", "reduction vs joint", "closer than joint"],
        notes=(
            "One planted system (make_problem(p, 'degradation', per_component=p, seed=1)), "
            "independent exact Wishart moments per replication. Here the Fisher information is "
            "well conditioned, and maximum likelihood must beat the unweighted joint fit on "
            "average; on the one-per-SCC systems of the table above it is not."
        ),
    )
    table.add_row(estimator="ours: joint", **{"rms rel. error A": float(rms[0])})
    table.add_row(
        estimator="ours: efficient (ML)",
        **{
            "rms rel. error A": float(rms[1]),
            "reduction vs joint": f"{1 - rms[1] / rms[0]:.0%}",
            "closer than joint": f"{int((e[:, 1] < e[:, 0]).sum())}/{len(e)}",
        },
    )
    return table


def cramer_rao_rows(
    p: int, n: int, replications: int, problem_seed: int, family: str = "degradation"
) -> dict:
    """Monte Carlo errors of the joint and efficient estimators on one planted system.

    ``make_problem(p, family, seed=problem_seed)``; replication ``r`` draws exact Wishart
    moments with seed ``10_000 * (problem_seed + 1) + r``. Returns the root-mean-square
    scale-aligned relative drift errors ``joint`` and ``efficient``, the Cramer-Rao scale
    ``crb`` (:func:`cramer_rao_scale`), the fraction of replications where the efficient fit
    is closer, and ``weak_sd`` / ``weak_crb``: the joint fit's standard deviation along the
    least informed direction of the Fisher information (in the tangent of ``tr D = p``) and
    the Cramer-Rao standard deviation there.

    Examples
    --------
    >>> row = cramer_rao_rows(4, 10**8, 5, problem_seed=0)
    >>> bool(row["efficient"] < 2 * row["crb"]), bool(row["joint"] < 2 * row["crb"])
    (True, True)
    """
    prob = make_problem(p, family, seed=problem_seed)
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, truth_rhos = layout.pack(prob.params)
    A = prob.params.A
    N = tangent_basis(layout)
    dcols = np.arange(layout.dim)[layout.d_slice]
    errs, weak, crb, v, w0 = [], [], None, None, None
    for r in range(replications):
        data = prob.moments(int(n), seed=10_000 * (problem_seed + 1) + r, method="wishart")
        if crb is None:
            crb = cramer_rao_scale(truth, data, layout, truth_rhos)
            _, info = score_information(truth, data, environment_jacobians(layout, truth_rhos))
            w, V = np.linalg.eigh(N.T @ info @ N)
            v, w0 = V[:, 0], float(w[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            joint = fit_joint(data, prob.mask)
            eff = fit_efficient(data, prob.mask)
        errs.append((scale_aligned_rel_error(joint.A, A), scale_aligned_rel_error(eff.A, A)))
        theta = joint.theta * (p / float(np.sum(joint.theta[dcols])))  # tr D = p, as the truth
        weak.append(float(np.linalg.lstsq(N, theta - truth, rcond=None)[0] @ v))
    e = np.asarray(errs)
    rms = np.sqrt((e**2).mean(axis=0))
    return {
        "joint": float(rms[0]),
        "efficient": float(rms[1]),
        "crb": float(crb),
        "closer": float(np.mean(e[:, 1] < e[:, 0])),
        "weak_sd": float(np.std(weak, ddof=1)) if len(weak) > 1 else float("nan"),
        "weak_crb": float(1.0 / np.sqrt(max(w0, 1e-300))),
    }


def cramer_rao_table(
    p: int,
    ns: Sequence[int],
    problem_seeds: Sequence[int],
    replications: int,
    family: str = "degradation",
) -> Table:
    """Joint and efficient estimators against the Cramer-Rao scale, per system and ``n``."""
    table = Table(
        f"Monte Carlo error against the Cramer-Rao scale, p = {p}, {family} one per SCC, "
        f"{replications} replications per row",
        [
            "system seed",
            "n",
            "joint (rms)",
            "efficient (rms)",
            "Cramer-Rao scale",
            "largest gain over joint (1 - CRB / joint)",
            "efficient closer",
            "weakest direction: joint sd / CRB sd",
        ],
        notes=(
            "Each row: one planted system of the efficiency table (make_problem(p, family, "
            "seed=system seed), the same systems as its seeds), independent exact Wishart "
            "moments per replication. rms: root-mean-square over replications of the "
            "scale-aligned relative drift error. Cramer-Rao scale: sqrt(tr P Cov(A) P) / "
            "||A||_F (P removes the direction of A, which the aligned error ignores) from the "
            "Fisher information at the planted parameters, the floor of a "
            "locally unbiased estimator's rms error (asymptotically attained by maximum "
            "likelihood); 1 - CRB / joint is therefore the largest reduction of the joint "
            "fit's error that such an estimator can achieve (negative: the joint fit is below "
            "the bound, which only bias allows). weakest direction: the joint fit's standard "
            "deviation along the least informed eigenvector of the Fisher information against "
            "the Cramer-Rao standard deviation there; far below 1 means the data do not "
            "determine that direction and the joint fit's own geometry (a bias) does."
        ),
    )
    for s in problem_seeds:
        for n in ns:
            r = cramer_rao_rows(p, int(n), replications, int(s), family)
            table.add_row(
                **{
                    "system seed": int(s),
                    "n": int(n),
                    "joint (rms)": r["joint"],
                    "efficient (rms)": r["efficient"],
                    "Cramer-Rao scale": r["crb"],
                    "largest gain over joint (1 - CRB / joint)": f"{1 - r['crb'] / r['joint']:.0%}",
                    "efficient closer": f"{r['closer']:.0%}",
                    "weakest direction: joint sd / CRB sd": f"{r['weak_sd'] / r['weak_crb']:.3g}",
                }
            )
    return table


# Settings and bodies of the reproduce sections `efficiency`, `cramer_rao` and `coverage`
# (declared in ou_ident.reproduce; sizes in configs/reproduce/*.yaml).


@dataclass
class EfficiencySetting:
    p: int
    ns: list[int]  # samples per environment
    seeds: int
    control: dict | None = None  # {p, n, replications}: well-identified control (per node)
    families: list[str] = field(default_factory=lambda: ["degradation"])  # one table each


def efficiency_section(s: EfficiencySetting, seed: int) -> SectionResult:
    tables = [efficiency_table(s.p, s.ns, seeds(s, seed), f) for f in s.families]
    return SectionResult(tables + ([replication_table(**s.control)] if s.control else []))


@dataclass
class CramerRaoSetting:
    p: int
    ns: list[int]  # samples per environment
    seeds: int  # planted systems (the efficiency table's seeds)
    replications: int  # independent experiments per system and n


def cramer_rao_section(s: CramerRaoSetting, seed: int) -> SectionResult:
    return SectionResult([cramer_rao_table(s.p, s.ns, seeds(s, seed), s.replications)])


@dataclass
class CoverageSetting:
    p: int
    n: int
    replications: int


def coverage_section(s: CoverageSetting, seed: int) -> SectionResult:
    return SectionResult([coverage_table(s.p, s.n, s.replications, seed=seed)])


def sparse_efficiency_rows(p: int, n: int, seed: int, family: str = "degradation") -> dict:
    """Joint, efficient and penalised efficient fits on the efficiency table's experiment.

    ``make_problem(p, family, seed=seed)``, moments of ``n`` samples per environment (seed
    ``seed``), support known (as every column of the efficiency table). The penalised fits are
    :func:`ou_ident.sparse_drift.fit_sparse_efficient` with ``penalty="auto"`` (extended BIC),
    lasso and adaptive lasso.
    """
    from ou_ident.sparse_drift import fit_sparse_efficient

    prob = make_problem(p, family, seed=seed)
    data = prob.moments(int(n), seed=seed)
    A = prob.params.A
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        joint = fit_joint(data, prob.mask)
        eff = fit_efficient(data, prob.mask)
        lasso = fit_sparse_efficient(data, prob.mask, "auto", start=eff)
        ada = fit_sparse_efficient(data, prob.mask, "auto", adaptive=True, start=eff)
    return {
        "joint": scale_aligned_rel_error(joint.A, A),
        "efficient": scale_aligned_rel_error(eff.A, A),
        "lasso": scale_aligned_rel_error(lasso.A, A),
        "adaptive": scale_aligned_rel_error(ada.A, A),
        "lasso penalty": lasso.diagnostics["penalty"],
        "adaptive penalty": ada.diagnostics["penalty"],
        "lasso edges": lasso.diagnostics["nonzero_offdiag"],
        "adaptive edges": ada.diagnostics["nonzero_offdiag"],
        "candidate edges": lasso.diagnostics["candidate_offdiag"],
    }


def _mean_ci(vals) -> str:
    v = np.asarray(vals, float)
    half = float(scipy.stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return f"{v.mean():.3f} [{v.mean() - half:.3f}, {v.mean() + half:.3f}]"


def sparse_efficiency_table(
    p: int, n: int, seed_counts: Sequence[int], family: str = "degradation", base_seed: int = 0
) -> Table:
    """Joint vs efficient vs penalised efficient, one row per number of seeds (nested)."""
    table = Table(
        f"Sparsity-penalised efficient estimator, p = {p}, n = {n}, {family} one per SCC",
        [
            "seeds",
            "estimator",
            "rel. error A: mean [95% CI]",
            "sd",
            "reduction of the mean vs joint",
            "closer than joint",
            "penalty chosen (median)",
            "off-diagonal edges kept / candidates (mean)",
            "per seed",
        ],
        notes=(
            "Same experiments as the efficiency table (make_problem(p, family, seed=s), moments "
            "of n samples per environment with seed s, support known), seeds "
            f"{base_seed}, {base_seed + 1}, ...: the first rows use the first 3 seeds (the "
            "issue's measurement), the others all of them. penalised efficient: the "
            "stationary Gaussian likelihood per sample minus lambda times the l1 norm of the "
            "off-diagonal drift (adaptive: weights 1/|A_ij| of the unpenalised fit), "
            "lambda chosen from 0 and 1e-6 ... 1 (two per decade) by the extended BIC "
            "(gamma = 0.5) of the penalised fit - the planted truth is never used. 95% CI: "
            "t-interval of the mean over seeds. A penalised estimator is biased towards sparse "
            "drifts; it has no Wald intervals and no coverage is claimed for it."
        ),
    )
    rows = [sparse_efficiency_rows(p, n, base_seed + s, family) for s in range(max(seed_counts))]
    for k in seed_counts:
        col = {key: [r[key] for r in rows[:k]] for key in rows[0]}
        joint_mean = float(np.mean(col["joint"]))
        for name, key in [
            ("ours: joint", "joint"),
            ("ours: efficient (ML)", "efficient"),
            ("penalised efficient (lasso, EBIC)", "lasso"),
            ("penalised efficient (adaptive lasso, EBIC)", "adaptive"),
        ]:
            extra = {}
            if key in ("lasso", "adaptive"):
                extra = {
                    "penalty chosen (median)": f"{np.median(col[key + ' penalty']):.2g}",
                    "off-diagonal edges kept / candidates (mean)": (
                        f"{np.mean(col[key + ' edges']):.1f} / {np.mean(col['candidate edges']):.1f}"
                    ),
                }
            table.add_row(
                seeds=k,
                estimator=name,
                **{
                    "rel. error A: mean [95% CI]": _mean_ci(col[key]),
                    "sd": float(np.std(col[key], ddof=1)),
                    "reduction of the mean vs joint": (
                        f"{1 - np.mean(col[key]) / joint_mean:.0%}" if key != "joint" else ""
                    ),
                    "closer than joint": (
                        f"{sum(a < b for a, b in zip(col[key], col['joint'], strict=True))}/{k}"
                        if key != "joint"
                        else ""
                    ),
                    "per seed": " ".join(f"{v:.3f}" for v in col[key]),
                    **extra,
                },
            )
    return table


@dataclass
class SparseEfficiencySetting:
    p: int
    n: int  # samples per environment
    seeds: list[int]  # numbers of seeds, one block of rows each (nested: the first k seeds)
    families: list[str] = field(default_factory=lambda: ["degradation"])  # one table each


def sparse_efficiency_section(s: SparseEfficiencySetting, seed: int) -> SectionResult:
    return SectionResult(
        [sparse_efficiency_table(s.p, s.n, s.seeds, f, base_seed=seed) for f in s.families]
    )
