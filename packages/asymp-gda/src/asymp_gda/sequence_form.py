"""Sequence-form extensive-form games built from OpenSpiel, with treeplex operations.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (extensive-form experiments: Kuhn, Leduc, ...).

A two-player zero-sum imperfect-information game in sequence form (von Stengel
1996) is ``min_{x in X} max_{y in Y} x^T A y`` where ``X = {x >= 0 : E x = e}`` and
``Y = {y >= 0 : F y = f}`` are *treeplexes*. Player 0 of the OpenSpiel game is x
(``A`` = minus its chance-weighted sequence-form payoff), player 1 is y.

- :class:`Treeplex` -- one player's decision structure, stored level by level so
  every recursion below is vectorised over the infosets of a level and over a
  batch ``(B, n_seq)``. Strategies are kept as *behavioural* vectors ``b`` (local
  action probabilities, one simplex per infoset, ``b[0] = 1`` for the empty
  sequence), which stay defined at unreached infosets (OpenSpiel issue #1215:
  converting realisation plans leaves those arbitrary).

  * :meth:`Treeplex.realization` -- ``x_s = b_s x_{parent}``, top-down;
  * :meth:`Treeplex.best_response` -- ``min_{x in X} <c, x>`` bottom-up;
  * :meth:`Treeplex.dilated_gradient` / :meth:`Treeplex.dilated_prox` -- the
    dilated Euclidean regulariser ``psi(x) = sum_h x_{p(h)} (1/2)||x_h / x_{p(h)}||^2``
    (Hoda et al. 2010) and ``argmin_x <c, x> + psi(x)``, solved by one simplex
    projection per infoset, bottom-up (the recursion AsymP-DGDA needs);
  * :meth:`Treeplex.dilated_value` -- ``psi`` itself (the perturbed duality gap needs it);
  * :meth:`Treeplex.entropy_gradient` / :meth:`Treeplex.entropy_prox` -- the same for the
    dilated entropy ``sum_h x_{p(h)} sum_a b_{ha} log b_{ha}`` (Kroer et al. 2020), one
    softmax per infoset (dilated MWU / OMWU, Lee, Kroer & Luo 2021).

- :class:`SequenceFormGame` -- ``A``, both treeplexes, the LP value, NashConv,
  and conversion back to an OpenSpiel ``TabularPolicy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .projection import project_simplex

__all__ = ["Treeplex", "SequenceFormGame"]

_BIG = 1e30


@dataclass
class _Level:
    seqs: torch.Tensor  # (H, K) child sequence ids, padded with n_seq (a scratch slot)
    mask: torch.Tensor  # (H, K) True where a real action
    parent: torch.Tensor  # (H,) parent sequence id
    keys: list[str]  # (H,) OpenSpiel information-state strings
    actions: list[list[int]]  # (H, k_h) OpenSpiel action ids


@dataclass
class Treeplex:
    """One player's treeplex; sequences ``0..n_seq-1`` (0 = the empty sequence).

    Built by :meth:`SequenceFormGame.from_openspiel`, or directly from
    ``infosets = [(parent_seq, [child_seq, ...]), ...]`` with :meth:`from_infosets`.

    Examples
    --------
    >>> import torch
    >>> t = Treeplex.from_infosets(5, [(0, [1, 2]), (1, [3, 4])])  # a decision, then one more
    >>> b = t.uniform()
    >>> t.realization(b).tolist()
    [[1.0, 0.5, 0.5, 0.25, 0.25]]
    >>> float(t.best_response(torch.tensor([[0.0, 1.0, 2.0, -1.0, 3.0]], dtype=torch.float64))[0])
    0.0
    """

    n_seq: int
    levels: list[_Level] = field(default_factory=list)

    @classmethod
    def from_infosets(cls, n_seq, infosets, keys=None, actions=None) -> Treeplex:
        """Build from ``[(parent_seq, [child_seqs]), ...]`` listed parents-first."""
        depth_of_seq = {0: -1}
        by_depth: dict[int, list[int]] = {}
        for h, (parent, children) in enumerate(infosets):
            if parent not in depth_of_seq:
                raise ValueError(
                    f"infoset {h}: parent sequence {parent} appears before its own infoset"
                )
            d = depth_of_seq[parent] + 1
            for c in children:
                depth_of_seq[c] = d
            by_depth.setdefault(d, []).append(h)
        levels = []
        for d in sorted(by_depth):
            hs = by_depth[d]
            K = max(len(infosets[h][1]) for h in hs)
            seqs = torch.full((len(hs), K), n_seq, dtype=torch.long)
            mask = torch.zeros((len(hs), K), dtype=torch.bool)
            for i, h in enumerate(hs):
                ch = infosets[h][1]
                seqs[i, : len(ch)] = torch.tensor(ch)
                mask[i, : len(ch)] = True
            parent = torch.tensor([infosets[h][0] for h in hs], dtype=torch.long)
            levels.append(
                _Level(
                    seqs,
                    mask,
                    parent,
                    [keys[h] for h in hs] if keys else [str(h) for h in hs],
                    [actions[h] for h in hs]
                    if actions
                    else [list(range(len(infosets[h][1]))) for h in hs],
                )
            )
        return cls(n_seq, levels)

    @property
    def n_infosets(self) -> int:
        return sum(len(lv.parent) for lv in self.levels)

    def constraints(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(E, e)`` with ``E x = e``: ``x_0 = 1`` and ``sum_a x_{h,a} = x_{p(h)}`` per infoset."""
        rows = [torch.zeros(self.n_seq, dtype=torch.float64)]
        rows[0][0] = 1.0
        for lv in self.levels:
            for i in range(len(lv.parent)):
                r = torch.zeros(self.n_seq, dtype=torch.float64)
                r[lv.seqs[i][lv.mask[i]]] = 1.0
                r[lv.parent[i]] = -1.0
                rows.append(r)
        e = torch.zeros(len(rows), dtype=torch.float64)
        e[0] = 1.0
        return torch.stack(rows), e

    def _pad(self, v: torch.Tensor) -> torch.Tensor:
        return torch.cat([v, torch.zeros(v.shape[0], 1, dtype=v.dtype)], dim=1)  # (B, n_seq + 1)

    def uniform(self, batch: int = 1) -> torch.Tensor:
        """Uniform behavioural strategy, ``(batch, n_seq)``."""
        b = torch.zeros(batch, self.n_seq + 1, dtype=torch.float64)
        b[:, 0] = 1.0
        for lv in self.levels:
            k = lv.mask.sum(-1, keepdim=True).to(torch.float64)  # (H, 1)
            b[:, lv.seqs] = torch.where(lv.mask, 1.0 / k, 0.0).expand(batch, -1, -1)
        return b[:, : self.n_seq]

    def realization(self, b: torch.Tensor) -> torch.Tensor:
        """Realisation plan ``x`` ``(B, n_seq)`` of behavioural ``b`` ``(B, n_seq)``, top-down."""
        x = torch.zeros(b.shape[0], self.n_seq + 1, dtype=b.dtype)
        x[:, 0] = 1.0
        bp = self._pad(b)
        for lv in self.levels:
            x[:, lv.seqs] = bp[:, lv.seqs] * x[:, lv.parent].unsqueeze(-1) * lv.mask
        return x[:, : self.n_seq]

    def best_response(self, c: torch.Tensor) -> torch.Tensor:
        """``min_{x in X} <c, x>`` for costs ``c`` ``(B, n_seq)``; returns ``(B,)``."""
        cc = self._pad(c.clone())
        for lv in reversed(self.levels):
            vals = torch.where(lv.mask, cc[:, lv.seqs], _BIG).amin(-1)  # (B, H)
            cc.index_add_(1, lv.parent, vals)
        return cc[:, 0]

    def dilated_gradient(self, b: torch.Tensor) -> torch.Tensor:
        """``grad psi(x)`` at the realisation of ``b``: ``b_s - (1/2) sum_{h' below s} ||b_{h'}||^2``."""
        bp = self._pad(b)
        g = bp.clone()
        g[:, 0] = 0.0
        for lv in self.levels:
            sq = (torch.where(lv.mask, bp[:, lv.seqs], 0.0) ** 2).sum(-1)  # (B, H)
            g.index_add_(1, lv.parent, -0.5 * sq)
        return g[:, : self.n_seq]

    def dilated_prox(self, c: torch.Tensor) -> torch.Tensor:
        """Behavioural ``b`` of ``argmin_{x in X} <c, x> + psi(x)`` (``c``: ``(B, n_seq)``), bottom-up."""
        cc = self._pad(c.clone())
        b = torch.zeros_like(cc)
        b[:, 0] = 1.0
        for lv in reversed(self.levels):
            loc = torch.where(lv.mask, cc[:, lv.seqs], _BIG)  # (B, H, K)
            bh = project_simplex(-loc)  # argmin_b <loc, b> + ||b||^2 / 2, one simplex per infoset
            val = (torch.where(lv.mask, loc, 0.0) * bh).sum(-1) + 0.5 * (bh * bh).sum(-1)  # (B, H)
            cc.index_add_(1, lv.parent, val)
            b[:, lv.seqs] = torch.where(lv.mask, bh, 0.0)
        return b[:, : self.n_seq]

    def dilated_value(self, b: torch.Tensor) -> torch.Tensor:
        """``psi(x)`` at the realisation of ``b``: ``sum_h x_{p(h)} (1/2)||b_h||^2``, ``(B,)``."""
        x = self._pad(self.realization(b))
        bp = self._pad(b)
        val = torch.zeros(b.shape[0], dtype=b.dtype)
        for lv in self.levels:
            sq = (torch.where(lv.mask, bp[:, lv.seqs], 0.0) ** 2).sum(-1)  # (B, H)
            val = val + 0.5 * (x[:, lv.parent] * sq).sum(-1)
        return val

    def entropy_gradient(self, b: torch.Tensor) -> torch.Tensor:
        """Gradient of the dilated entropy at the realisation of ``b``: ``log b_s + 1 - #children(s)``."""
        bp = self._pad(b)
        g = torch.log(bp.clamp_min(1e-300)) + 1.0
        g[:, 0] = 0.0
        for lv in self.levels:
            g.index_add_(1, lv.parent, -torch.ones(bp.shape[0], len(lv.parent), dtype=b.dtype))
        return g[:, : self.n_seq]

    def entropy_prox(self, c: torch.Tensor) -> torch.Tensor:
        """Behavioural ``b`` of ``argmin_{x in X} <c, x> + dilated entropy``, bottom-up softmaxes."""
        cc = self._pad(c.clone())
        b = torch.zeros_like(cc)
        b[:, 0] = 1.0
        for lv in reversed(self.levels):
            loc = torch.where(lv.mask, -cc[:, lv.seqs], -_BIG)  # (B, H, K)
            val = -torch.logsumexp(loc, dim=-1)  # min_b <c_h, b> + sum b log b
            cc.index_add_(1, lv.parent, val)
            b[:, lv.seqs] = torch.where(lv.mask, torch.softmax(loc, dim=-1), 0.0)
        return b[:, : self.n_seq]


class SequenceFormGame:
    """A two-player zero-sum extensive-form game in sequence form.

    Parameters
    ----------
    A:
        ``(n_x, n_y)`` sequence-form loss of the x player (player 0).
    tx, ty:
        The players' :class:`Treeplex`.
    name:
        Label; ``openspiel`` holds the pyspiel game when built from OpenSpiel.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspiel")
    >>> g = SequenceFormGame.from_openspiel("kuhn_poker")
    >>> g.A.shape, round(g.value, 6)  # Kuhn's value for player 0 is -1/18
    (torch.Size([13, 13]), 0.055556)
    """

    def __init__(
        self, A: torch.Tensor, tx: Treeplex, ty: Treeplex, name: str = "efg", openspiel=None
    ) -> None:
        A = torch.as_tensor(A, dtype=torch.float64)
        if A.shape != (tx.n_seq, ty.n_seq):
            raise ValueError(
                f"A has shape {tuple(A.shape)} but the treeplexes have {tx.n_seq} and {ty.n_seq} sequences"
            )
        self.A, self.tx, self.ty, self.name, self.openspiel = A, tx, ty, name, openspiel
        self._value: float | None = None

    @classmethod
    def from_openspiel(cls, name: str, **params) -> SequenceFormGame:
        """Build from an OpenSpiel game name (``"kuhn_poker"``, ``"leduc_poker"``, ...).

        Requires the ``bench`` extra (``open-spiel``). Raises ``ValueError`` for an
        unknown name, a game that is not two-player zero-sum, or one with simultaneous moves.
        """
        try:
            import pyspiel
            from open_spiel.python.algorithms import sequence_form_utils as sfu
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "extensive-form games need OpenSpiel: pip install 'asymp-gda[bench]' (open-spiel)"
            ) from exc
        if name.split("(")[0] not in pyspiel.registered_names():
            raise ValueError(
                f"unknown OpenSpiel game {name!r}; e.g. kuhn_poker, leduc_poker, liars_dice"
            )
        try:
            game = pyspiel.load_game(name, params) if params else pyspiel.load_game(name)
        except pyspiel.SpielError as err:
            raise ValueError(f"OpenSpiel cannot load {name!r}: {err}") from err
        gt = game.get_type()
        if game.num_players() != 2 or gt.utility != pyspiel.GameType.Utility.ZERO_SUM:
            raise ValueError(
                f"OpenSpiel game {name!r} is not two-player zero-sum (zero-sum games only)"
            )
        if gt.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
            raise ValueError(
                f"OpenSpiel game {name!r} has simultaneous moves; load its turn-based version"
            )
        infosets, isa_to_seq, isa_maps, parent_map, payoff, _ = sfu.construct_vars(game)
        tps = []
        for p in range(2):
            rows, keys, acts = [], [], []
            for info in sorted(infosets[p], key=infosets[p].get):
                if sfu.is_root(info, p):
                    continue
                children = [isa_to_seq[p][k] for k in isa_maps[p][info]]
                rows.append((isa_to_seq[p][parent_map[p][info]], children))
                keys.append(info)
                acts.append([sfu.get_action_from_key(k) for k in isa_maps[p][info]])
            tps.append(Treeplex.from_infosets(len(isa_to_seq[p]), rows, keys, acts))
        A = -torch.from_numpy(np.asarray(payoff[0], dtype=np.float64))
        return cls(A, tps[0], tps[1], name=name, openspiel=game)

    @property
    def value(self) -> float:
        """Game value ``min_x max_y x^T A y`` by the sequence-form LP (scipy HiGHS)."""
        if self._value is None:
            from scipy.optimize import linprog

            E, e = (t.numpy() for t in self.tx.constraints())
            F, f = (t.numpy() for t in self.ty.constraints())
            A = self.A.numpy()
            nx, ny = A.shape
            # min_{x, q} f^T q  s.t.  A^T x - F^T q <= 0,  E x = e,  x >= 0  (LP duality in y)
            c = np.concatenate([np.zeros(nx), f])
            A_ub = np.hstack([A.T, -F.T])
            A_eq = np.hstack([E, np.zeros((E.shape[0], F.shape[0]))])
            bounds = [(0, None)] * nx + [(None, None)] * F.shape[0]
            res = linprog(
                c, A_ub=A_ub, b_ub=np.zeros(ny), A_eq=A_eq, b_eq=e, bounds=bounds, method="highs"
            )
            if res.status != 0:  # pragma: no cover
                raise RuntimeError(f"sequence-form LP failed: {res.message}")
            self._value = float(res.fun)
        return self._value

    def nash_conv(self, bx: torch.Tensor, by: torch.Tensor) -> torch.Tensor:
        """``max_{y'} x^T A y' - min_{x'} x'^T A y`` from behavioural ``bx``, ``by``; returns ``(B,)``."""
        x, y = self.tx.realization(bx), self.ty.realization(by)
        return -self.ty.best_response(-(x @ self.A)) - self.tx.best_response(y @ self.A.T)

    def exploitability_x(self, bx: torch.Tensor) -> torch.Tensor:
        """``max_{y'} x^T A y' - v*``, ``(B,)``."""
        return -self.ty.best_response(-(self.tx.realization(bx) @ self.A)) - self.value

    def exploitability_y(self, by: torch.Tensor) -> torch.Tensor:
        """``v* - min_{x'} x'^T A y``, ``(B,)``."""
        return self.value - self.tx.best_response(self.ty.realization(by) @ self.A.T)

    def to_policy(self, bx: torch.Tensor, by: torch.Tensor):
        """OpenSpiel ``TabularPolicy`` of behavioural strategies (first batch row), every infoset set."""
        if self.openspiel is None:
            raise ValueError("to_policy needs a game built with SequenceFormGame.from_openspiel")
        from open_spiel.python import policy as os_policy

        pol = os_policy.TabularPolicy(self.openspiel)
        for b, tp in ((bx, self.tx), (by, self.ty)):
            row = b.reshape(-1, tp.n_seq)[0]
            for lv in tp.levels:
                for i, key in enumerate(lv.keys):
                    probs = pol.policy_for_key(key)
                    probs[:] = 0.0
                    for s, a in zip(lv.seqs[i][lv.mask[i]].tolist(), lv.actions[i], strict=True):
                        probs[a] = float(row[s])
        return pol
