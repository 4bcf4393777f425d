"""The result of a steady-state fit: identified parameters and diagnostics.

Paper: "One Intervention per Component is Enough" (ICML 2026). Both
estimators (:func:`ou_ident.recursive.fit_recursive`,
:func:`ou_ident.joint.fit_joint`) return an :class:`OUFit` whose parameters
follow the scale convention ``tr D = p`` (the global scale is not identified).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ou_ident.interventions import Environment, Intervention
from ou_ident.moment_equations import ParameterLayout
from ou_ident.ou_process import OUParams
from ou_ident.prediction import predict_intervention

__all__ = ["OUFit"]


@dataclass(eq=False)
class OUFit:
    """Fitted OU parameters (``tr D = p``), estimated strengths and diagnostics.

    Parameters
    ----------
    params:
        Base (observational) parameters.
    strengths:
        Estimated strength of every intervention, keyed by environment label.
    method:
        Name of the estimator.
    layout, theta, rhos:
        Parameter vector, its layout and the knock-down factors.
    diagnostics:
        Estimator-specific numbers (objective, conditioning, ...).
    theta_cov:
        Asymptotic covariance of ``theta`` (:func:`ou_ident.stationary_likelihood.fit_efficient`
        sets it; ``None`` for the moment estimators).

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> from ou_ident.joint import fit_joint
    >>> prob = make_problem(4, "degradation", seed=0)
    >>> fit = fit_joint(prob.moments(), prob.mask)
    >>> again = OUFit.from_json(fit.to_json())
    >>> bool(np.allclose(again.A, fit.A)), again.method
    (True, 'joint')
    """

    params: OUParams
    strengths: dict[str, tuple[float, ...]]
    method: str
    layout: ParameterLayout
    theta: np.ndarray
    rhos: dict
    diagnostics: dict = field(default_factory=dict)
    theta_cov: np.ndarray | None = None

    @classmethod
    def from_theta(cls, layout, theta, rhos, method, diagnostics=None) -> OUFit:
        """Normalise ``theta`` to ``tr D = p`` and unpack it."""
        total = float(np.sum(theta[layout.d_slice]))
        if not total > 0:
            raise ValueError(f"{method}: the estimated noise has non-positive trace {total:.3g}")
        theta = theta * (layout.p / total)
        return cls(
            params=layout.params(theta),
            strengths=layout.strengths(theta, rhos),
            method=method,
            layout=layout,
            theta=theta,
            rhos=dict(rhos),
            diagnostics=dict(diagnostics or {}),
        )

    @property
    def A(self) -> np.ndarray:
        """Estimated drift ``(p, p)``."""
        return self.params.A

    def environment_params(self, name: str) -> OUParams:
        """Parameters of a training environment with its estimated strengths."""
        for e, env in enumerate(self.layout.environments):
            if env.name == name:
                A, b, d = self.layout.environment_parameters(self.theta[None, :], e, self.rhos)
                return OUParams(A[0], b[0], np.clip(d[0], 0.0, None))
        raise ValueError(f"unknown environment {name!r}")

    def standard_errors(self) -> np.ndarray | None:
        """Standard error of every coordinate of ``theta`` (``None`` without ``theta_cov``)."""
        if self.theta_cov is None:
            return None
        return np.sqrt(np.clip(np.diag(self.theta_cov), 0.0, None))

    def intervals(self, level: float = 0.95) -> dict:
        """Wald intervals ``theta +- z se`` unpacked: ``{"A": (lo, hi), "b": ..., "d": ...,
        "free": {env: (lo, hi)}}`` (entries outside the support are exactly 0).

        The free number of an intervention is its strength for the shift, degradation and
        (clamped input of the) hard families, and ``s D_kk`` for the noise family.
        """
        import scipy.stats

        se = self.standard_errors()
        if se is None:
            raise ValueError(f"the {self.method} fit has no standard errors (use fit_efficient)")
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1), got {level}")
        z = float(scipy.stats.norm.ppf(0.5 + level / 2))
        lo, hi = self.theta - z * se, self.theta + z * se
        out: dict = {}
        for vec in (lo, hi):
            A, b, d = self.layout.unpack(vec[None, :])
            out.setdefault("A", []).append(A[0])
            out.setdefault("b", []).append(b[0])
            out.setdefault("d", []).append(d[0])
        out = {k: tuple(v) for k, v in out.items()}
        out["free"] = {
            env.name: [(float(lo[sl][0]), float(hi[sl][0])) for sl in slices if sl.stop > sl.start]
            for env, slices in zip(self.layout.environments, self.layout.free_slices, strict=True)
        }
        return out

    def to_json(self, genes: list[str] | None = None) -> dict:
        """JSON-able content of ``fit.json`` (parameters, support, environments, intervals)."""
        from ou_ident.interventions import environment_specs

        se = self.standard_errors()
        return {
            "format": "ou-ident fit 1",
            "method": self.method,
            "genes": list(genes) if genes is not None else [str(i) for i in range(self.params.p)],
            "scale": "tr D = p",
            "A": self.A.tolist(),
            "b": self.params.b.tolist(),
            "d": self.params.d.tolist(),
            "mask": self.layout.mask.astype(int).tolist(),
            "environments": environment_specs(self.layout.environments),
            "theta": self.theta.tolist(),
            "rhos": [[e, j, float(r)] for (e, j), r in sorted(self.rhos.items())],
            "strengths": {k: list(v) for k, v in self.strengths.items()},
            "theta_se": None if se is None else se.tolist(),
            "theta_cov": None if self.theta_cov is None else self.theta_cov.tolist(),
            "diagnostics": {
                k: v for k, v in self.diagnostics.items() if isinstance(v, int | float | str | bool)
            },
        }

    @classmethod
    def from_json(cls, payload: dict) -> OUFit:
        """Inverse of :meth:`to_json` (raises ``ValueError`` on a malformed file)."""
        from ou_ident.interventions import environments_from_specs

        try:
            if payload.get("format") != "ou-ident fit 1":
                raise ValueError("not an ou-ident fit file (missing 'format: ou-ident fit 1')")
            envs = environments_from_specs(payload["environments"])
            layout = ParameterLayout(np.asarray(payload["mask"], dtype=bool), envs)
            theta = np.asarray(payload["theta"], dtype=float)
            if theta.shape != (layout.dim,):
                raise ValueError(f"theta has {theta.size} entries, the layout needs {layout.dim}")
            rhos = {(int(e), int(j)): float(r) for e, j, r in payload.get("rhos", [])}
            cov = payload.get("theta_cov")
            fit = cls(
                params=layout.params(theta),
                strengths={k: tuple(v) for k, v in payload.get("strengths", {}).items()},
                method=str(payload.get("method", "unknown")),
                layout=layout,
                theta=theta,
                rhos=rhos,
                diagnostics=dict(payload.get("diagnostics", {})),
                theta_cov=None if cov is None else np.asarray(cov, dtype=float),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed fit file: missing or bad field {exc}") from exc
        return fit

    def predict(self, interventions: Environment | Intervention | list[Intervention]):
        """Stationary ``(mean, cov)`` under an intervention with a given strength."""
        return predict_intervention(self.params, interventions)
