"""The drift graph, its strongly connected components and their condensation.

Paper: "One Intervention per Component is Enough" (ICML 2026). The drift
graph has an edge ``j -> i`` iff ``A_ij != 0`` (``i != j``). Its strongly
connected components (SCCs) form the condensation DAG; the identifiability
theorem asks for one intervention per SCC and a condensation that is
connected with a single root. The recursive estimator
(:func:`ou_ident.recursive.fit_recursive`) walks the SCCs in topological order.
All graph work is done by networkx.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

__all__ = ["DriftGraph"]


@dataclass(eq=False)
class DriftGraph:
    """Drift graph of a support mask (``mask[i, j]`` = edge ``j -> i``).

    Parameters
    ----------
    mask:
        ``(p, p)`` boolean (or numeric: non-zero = edge) support of ``A``.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[-1, 1, 0], [1, -1, 0], [0, 1, -1]])  # {0,1} -> {2}
    >>> g = DriftGraph(A != 0)
    >>> g.components
    [(0, 1), (2,)]
    >>> g.roots
    [(0, 1)]
    >>> g.check_single_root()
    """

    mask: np.ndarray
    graph: nx.DiGraph = field(init=False)
    condensation: nx.DiGraph = field(init=False)

    def __post_init__(self) -> None:
        mask = np.asarray(self.mask)
        if mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
            raise ValueError(f"drift support must be a square matrix, got shape {mask.shape}")
        self.mask = mask != 0
        p = mask.shape[0]
        g = nx.DiGraph()
        g.add_nodes_from(range(p))
        rows, cols = np.nonzero(self.mask)
        g.add_edges_from((int(j), int(i)) for i, j in zip(rows, cols, strict=True) if i != j)
        self.graph = g
        self.condensation = nx.condensation(g)

    @property
    def p(self) -> int:
        """Number of variables."""
        return self.mask.shape[0]

    def _members(self, c: int) -> tuple[int, ...]:
        return tuple(sorted(self.condensation.nodes[c]["members"]))

    def _order(self) -> list[int]:
        return list(
            nx.lexicographical_topological_sort(
                self.condensation, key=lambda c: min(self._members(c))
            )
        )

    @property
    def components(self) -> list[tuple[int, ...]]:
        """SCCs (sorted node tuples) in a deterministic topological order."""
        return [self._members(c) for c in self._order()]

    @property
    def roots(self) -> list[tuple[int, ...]]:
        """SCCs without incoming edges in the condensation."""
        return [self._members(c) for c in self._order() if self.condensation.in_degree(c) == 0]

    def component_of(self) -> np.ndarray:
        """Index (into :attr:`components`) of every node's SCC, ``(p,)``."""
        out = np.empty(self.p, dtype=int)
        for k, comp in enumerate(self.components):
            out[list(comp)] = k
        return out

    def parents(self, nodes) -> set[int]:
        """Nodes outside ``nodes`` with an edge into ``nodes``."""
        nodes = set(nodes)
        return {u for v in nodes for u in self.graph.predecessors(v)} - nodes

    def is_connected(self) -> bool:
        """Whether the condensation (equivalently the graph) is weakly connected."""
        return self.p == 0 or nx.is_weakly_connected(self.graph)

    def check_single_root(self) -> None:
        """Raise ``ValueError`` unless the condensation is connected with a single root."""
        if not self.is_connected():
            parts = [sorted(c) for c in nx.weakly_connected_components(self.graph)]
            raise ValueError(
                f"the SCC condensation is disconnected ({len(parts)} parts: {parts}); "
                "the recursive algorithm needs a connected condensation with a single root"
            )
        roots = self.roots
        if len(roots) != 1:
            raise ValueError(
                f"the SCC condensation has {len(roots)} roots {roots}; the recursive "
                "algorithm needs a single root component (fix the scale once)"
            )
