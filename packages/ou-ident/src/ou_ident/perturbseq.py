"""Perturb-seq style data: cells x genes with a perturbation label per cell.

Paper: "One Intervention per Component is Enough" (ICML 2026), real-data
setting (gene perturbation screens). Each distinct perturbation label is one
environment whose target is the perturbed gene; control cells form the
observational environment.

1. :func:`environments_from_cells` - validate labels and build the moments
   (works on plain arrays, offline).
2. :func:`load_perturbseq` - read a local ``.h5ad`` (``anndata``, extra ``bio``)
   or a pertpy dataset (``pertpy``, extra ``bio``, needs internet), then (1).
   Offline, a pertpy name fails at once with one line naming the alternative.

Label checks: every perturbation must name one modelled gene (unknown genes
are an error listing them, a known Replogle loader pitfall, scverse/pertpy#916);
duplicate labels after normalisation are an error; environments with fewer
cells than genes warn and suggest shrinkage.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ou_ident.interventions import Environment, make_intervention
from ou_ident.moment_equations import EnvironmentMoments

__all__ = ["PERTPY_DATASETS", "environments_from_cells", "load_perturbseq", "read_cells_csv"]

PERTPY_DATASETS = ("replogle_2022_k562_essential", "replogle_2022_rpe1", "norman_2019")


def environments_from_cells(
    X,
    labels: Sequence[str],
    gene_names: Sequence[str],
    control: str = "control",
    family: str = "knockdown",
    genes: Sequence[str] | None = None,
    shrinkage: float = 0.0,
    min_cells: int = 2,
    top_k: int | None = None,
) -> tuple[list[EnvironmentMoments], list[str]]:
    """Moments per perturbation from a cells x genes matrix.

    Parameters
    ----------
    X:
        ``(cells, genes)`` expression (already normalised, e.g. log1p).
    labels:
        Perturbation label of every cell (the perturbed gene's name, or ``control``).
    gene_names:
        Column names of ``X``.
    genes:
        Genes to model (``None``: every measured gene, or the ``top_k`` most variable).
    min_cells:
        Perturbations with fewer cells are dropped.
    top_k:
        With ``genes=None``: model the ``top_k`` genes of largest variance over all cells
        (in the table's column order). Perturbations of genes that are not modelled are
        dropped (the returned names tell which genes are).

    Returns
    -------
    (moments, genes):
        One :class:`~ou_ident.moment_equations.EnvironmentMoments` per environment
        (control first) and the modelled gene names (the variables' order).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> labels = ["control"] * 20 + ["G1"] * 20 + ["G2"] * 20
    >>> data, genes = environments_from_cells(X, labels, ["G1", "G2", "G3"])
    >>> [d.name for d in data], genes
    (['control', 'G1', 'G2'], ['G1', 'G2', 'G3'])
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray([str(x).strip() for x in labels])
    gene_names = [str(g) for g in gene_names]
    if X.ndim != 2 or X.shape[0] != labels.size or X.shape[1] != len(gene_names):
        raise ValueError(
            f"expression is {X.shape}; need (cells, genes) = ({labels.size}, {len(gene_names)})"
        )
    if len(set(gene_names)) != len(gene_names):
        dup = sorted({g for g in gene_names if gene_names.count(g) > 1})
        raise ValueError(f"duplicate gene names: {dup[:5]}")
    if control not in set(labels):
        raise ValueError(
            f"no control cells labelled {control!r} (labels: {sorted(set(labels))[:5]})"
        )
    perturbed = sorted({str(x) for x in labels} - {control})
    if top_k is not None and genes is not None:
        raise ValueError("give either genes or top_k, not both")
    if genes is None:
        genes = list(gene_names)
        if top_k is not None:
            if top_k < 1:
                raise ValueError(f"top_k must be >= 1, got {top_k}")
            var = X.var(axis=0)
            keep = np.sort(np.argsort(-var, kind="stable")[: min(top_k, len(gene_names))])
            genes = [gene_names[i] for i in keep]
    genes = list(genes)
    unknown = [g for g in genes if g not in gene_names]
    if unknown:
        raise ValueError(f"unknown gene names (not measured): {unknown[:10]}")
    if not genes:
        raise ValueError("no perturbed gene is among the measured genes")
    cols = [gene_names.index(g) for g in genes]
    outside = [g for g in perturbed if g not in genes]
    if outside and len(outside) == len(perturbed):
        raise ValueError(f"no perturbation targets a modelled gene (labels: {outside[:10]})")
    data = [
        EnvironmentMoments.from_samples(
            Environment(control), X[labels == control][:, cols], shrinkage
        )
    ]
    for g in perturbed:
        if g not in genes:
            continue  # perturbation of an unmodelled gene
        rows = X[labels == g][:, cols]
        if rows.shape[0] < min_cells:
            continue
        iv = make_intervention(family, genes.index(g))
        data.append(EnvironmentMoments.from_samples(Environment(g, (iv,)), rows, shrinkage))
    return data, genes


def _online(host: str = "figshare.com", timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def load_perturbseq(
    path: str | Path,
    genes: Sequence[str] | None = None,
    perturbation_key: str = "perturbation",
    control: str = "control",
    family: str = "knockdown",
    shrinkage: float = 0.0,
) -> tuple[list[EnvironmentMoments], list[str]]:
    """Moments per perturbation from a local ``.h5ad`` or a pertpy dataset name."""
    path_str = str(path)
    local = Path(path_str).expanduser()
    if local.exists():
        try:
            import anndata
        except ImportError as exc:
            raise ImportError("reading .h5ad needs anndata: pip install 'ou-ident[bio]'") from exc
        adata = anndata.read_h5ad(local)
    elif path_str in PERTPY_DATASETS:
        try:
            import pertpy
        except ImportError as exc:
            raise ImportError(
                f"dataset {path_str!r} is loaded through pertpy: pip install 'ou-ident[bio]'"
            ) from exc
        if not _online():
            raise OSError(
                f"dataset {path_str!r} must be downloaded and there is no network; offline "
                "alternative: pass a local .h5ad file, or use the synthetic data "
                "(ou-ident simulate / SyntheticOUDataModule)"
            )
        adata = getattr(pertpy.data, path_str)()
    else:
        raise ValueError(
            f"{path_str!r} is neither an existing file nor a known dataset "
            f"({', '.join(PERTPY_DATASETS)})"
        )
    if perturbation_key not in adata.obs:
        raise ValueError(
            f"obs has no column {perturbation_key!r}; columns: {list(adata.obs.columns)[:10]}"
        )
    X = adata.X
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    return environments_from_cells(
        X,
        adata.obs[perturbation_key].astype(str).tolist(),
        list(adata.var_names),
        control,
        family,
        genes,
        shrinkage,
    )


def read_cells_csv(
    path: str | Path,
    perturbation_key: str = "perturbation",
    control: str = "control",
    family: str = "knockdown",
    genes: Sequence[str] | None = None,
    shrinkage: float = 0.0,
    top_k: int | None = None,
) -> tuple[list[EnvironmentMoments], list[str]]:
    """Moments from a CSV with one row per cell: gene columns and a perturbation column.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "cells.csv"
    >>> rows = ["G1,G2,perturbation"] + [f"{i % 3},{i % 5},control" for i in range(10)]
    >>> rows += [f"{i % 2},{i % 7},G1" for i in range(10)]
    >>> _ = f.write_text("\\n".join(rows))
    >>> data, genes = read_cells_csv(f)
    >>> [d.name for d in data], genes
    (['control', 'G1'], ['G1', 'G2'])
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"cells file {str(path)!r} does not exist")
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    if len(lines) < 2:
        raise ValueError(f"{str(path)!r} has no cells")
    header = [h.strip() for h in lines[0].split(",")]
    if perturbation_key not in header:
        raise ValueError(
            f"{str(path)!r} has no column {perturbation_key!r}; columns: {header[:10]}"
        )
    k = header.index(perturbation_key)
    names = [h for i, h in enumerate(header) if i != k]
    rows, labels = [], []
    for lineno, ln in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in ln.split(",")]
        if len(cells) != len(header):
            raise ValueError(
                f"{str(path)!r} line {lineno}: {len(cells)} fields, expected {len(header)}"
            )
        labels.append(cells[k])
        try:
            rows.append([float(c) for i, c in enumerate(cells) if i != k])
        except ValueError as exc:
            raise ValueError(f"{str(path)!r} line {lineno}: {exc}") from exc
    return environments_from_cells(
        np.array(rows), labels, names, control, family, genes, shrinkage, top_k=top_k
    )
