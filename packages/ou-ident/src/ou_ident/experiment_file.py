"""Experiments on disk: per-environment moments in one ``.npz`` file.

Paper: "One Intervention per Component is Enough" (ICML 2026). An experiment
is what the estimators consume: for every environment its label, its
interventions (family and target), its sample mean and covariance and its
number of cells. ``ou-ident simulate`` writes one, ``ou-ident solve`` reads
one (or a cells CSV, :func:`ou_ident.perturbseq.read_cells_csv`). Reading
validates everything (finite, symmetric PSD covariances, targets in range,
unique labels) and fails with one line naming the problem.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ou_ident.interventions import environment_specs, environments_from_specs
from ou_ident.moment_equations import EnvironmentMoments, check_environments

__all__ = ["load_experiment", "save_experiment"]


def save_experiment(
    path: str | Path,
    data: Sequence[EnvironmentMoments],
    mask=None,
    truth: dict | None = None,
) -> Path:
    """Write moments (and optionally the support and true parameters) to ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(4, seed=0)
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "exp.npz"
    >>> _ = save_experiment(f, prob.moments(n=100), prob.mask)
    >>> data, mask, truth = load_experiment(f)
    >>> [d.name for d in data], mask.shape, truth
    (['obs', 'degradation-2'], (4, 4), {})
    """
    check_environments(data)
    path = Path(path)
    arrays = {
        "specs": np.array(json.dumps(environment_specs([d.environment for d in data]))),
        "means": np.stack([d.mean for d in data]),
        "covs": np.stack([d.cov for d in data]),
        "n": np.array([-1 if d.n is None else d.n for d in data]),
    }
    if mask is not None:
        arrays["mask"] = np.asarray(mask, dtype=bool)
    for key, value in (truth or {}).items():
        arrays[f"true_{key}"] = np.asarray(value, dtype=float)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def load_experiment(path: str | Path) -> tuple[list[EnvironmentMoments], np.ndarray | None, dict]:
    """``(moments, mask or None, truth)`` from a file written by :func:`save_experiment`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"experiment file {str(path)!r} does not exist")
    try:
        z = np.load(path, allow_pickle=False)
        specs = json.loads(str(z["specs"]))
        means, covs, ns = z["means"], z["covs"], z["n"]
    except (KeyError, ValueError, OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not an ou-ident experiment file ({exc})") from exc
    if not (len(specs) == len(means) == len(covs) == len(ns)):
        raise ValueError(f"{str(path)!r}: environment counts of labels and moments differ")
    envs = environments_from_specs(specs)
    data = [
        EnvironmentMoments(env, m, S, None if int(k) < 0 else int(k))
        for env, m, S, k in zip(envs, means, covs, ns, strict=True)
    ]
    check_environments(data)
    mask = z.get("mask", None)
    truth = {k[5:]: z[k] for k in z.files if k.startswith("true_")}
    return data, mask, truth
