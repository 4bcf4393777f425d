"""One Intervention per Component is Enough: Towards Identifiability in Linear Stochastic
Dynamics from Steady State (ICML 2026).

Ornstein-Uhlenbeck drift and diffusion from stationary observational and interventional
snapshots: :class:`~ou_ident.ou_process.OUParams`, intervention families
(:mod:`ou_ident.interventions`), :func:`~ou_ident.recursive.fit_recursive`,
:func:`~ou_ident.joint.fit_joint`, :func:`~ou_ident.identifiability.identifiability_report`,
:func:`~ou_ident.prediction.predict_intervention` and the Lightning refinement
:class:`~ou_ident.lightning.SteadyStateOU`.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ou-ident")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"
