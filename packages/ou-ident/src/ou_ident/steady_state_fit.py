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
    """

    params: OUParams
    strengths: dict[str, tuple[float, ...]]
    method: str
    layout: ParameterLayout
    theta: np.ndarray
    rhos: dict
    diagnostics: dict = field(default_factory=dict)

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

    def predict(self, interventions: Environment | Intervention | list[Intervention]):
        """Stationary ``(mean, cov)`` under an intervention with a given strength."""
        return predict_intervention(self.params, interventions)
