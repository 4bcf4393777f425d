"""Reference solvers that anchor the exact delayed optimum in ``delayed-rl reproduce``.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480) measure regret against the optimal
delay-aware policy, V*_1. Every regret number of this package rests on the reveal-form DP of
:func:`delayed_rl.augmented.backward_induction`, so ``reproduce`` checks it in the same run
against solvers that share none of its code:

- :func:`materialised_value` -- plain undelayed backward induction
  (:meth:`~delayed_rl.mdp.FiniteMDP.value_iteration`) on the augmented MDP written out as an
  ordinary stationary finite MDP (:meth:`~delayed_rl.augmented.AugmentedMDP.to_finite_mdp`,
  reward r_bar(x, a) at the step it is earned, not at reveal).
- :func:`mdptoolbox_value` -- ``mdptoolbox.mdp.FiniteHorizon`` of the MDP Toolbox
  (pymdptoolbox, Chadès et al. 2014; the ``bench`` extra) with discount 1 on the same
  materialised MDP; ``None`` when the toolbox is not installed.

:func:`anchor_table` tabulates both against the reveal-form DP over environments and delays.
The D = 0 anchor (delay-aware UCBVI identical to plain UCBVI) needs no solver:
:func:`delayed_rl.regret.reduction_table` compares the two learners' regret sequences directly. rlberry's ``UCBVIAgent`` is not used:
rlberry 0.7.3 pins gymnasium < 1, which conflicts with this package's gymnasium >= 1.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence

import numpy as np
from icml26_shared.results import Table

from .augmented import AugmentedMDP
from .mdp import FiniteMDP


def materialised_value(aug: AugmentedMDP, max_states: int = 3000) -> float:
    """V*_1 by undelayed value iteration on the materialised augmented MDP.

    Examples
    --------
    >>> from delayed_rl.mdp import slippery_corridor
    >>> from delayed_rl.delay import DelayDistribution
    >>> aug = AugmentedMDP(slippery_corridor(S=4, H=5), DelayDistribution.geometric(0.5, 2))
    >>> bool(abs(materialised_value(aug) - aug.solve().value) < 1e-12)
    True
    """
    flat = aug.to_finite_mdp(max_states)
    return float(flat.value_iteration()[0][0] @ flat.mu)


def mdptoolbox_available() -> bool:
    """Whether the MDP Toolbox (``pip install delayed-rl[bench]``) can be imported."""
    try:
        import mdptoolbox.mdp  # noqa: F401
    except ImportError:
        return False
    return True


def mdptoolbox_finite_horizon(mdp: FiniteMDP) -> float | None:
    """V_1 of ``mdp`` by ``mdptoolbox.mdp.FiniteHorizon`` (discount 1), or ``None`` if absent.

    Examples
    --------
    >>> from delayed_rl.mdp import chain
    >>> mdp = chain(S=4, H=6)
    >>> v = mdptoolbox_finite_horizon(mdp)
    >>> v is None or bool(abs(v - mdp.value_iteration()[0][0] @ mdp.mu) < 1e-9)
    True
    """
    if not mdptoolbox_available():
        return None
    import mdptoolbox.mdp

    P = np.ascontiguousarray(np.transpose(mdp.P, (1, 0, 2)))  # the toolbox wants (A, S, S)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints a no-discount warning
        solver = mdptoolbox.mdp.FiniteHorizon(P, np.array(mdp.R), 1.0, mdp.H)
        solver.run()
    return float(mdp.mu @ np.asarray(solver.V)[:, 0])


def mdptoolbox_value(aug: AugmentedMDP, max_states: int = 3000) -> float | None:
    """V*_1 of the delayed problem by the MDP Toolbox on the materialised augmented MDP."""
    if not mdptoolbox_available():
        return None
    return mdptoolbox_finite_horizon(aug.to_finite_mdp(max_states))


def anchor_table(
    cells: Sequence[tuple[str, Sequence[int]]], max_states: int = 3000, seed: int = 0
) -> Table:
    """V*_1 of every (environment, uniform delay D) re-solved by the independent solvers.

    Args:
        cells: ``(environment name, delays D)`` pairs; the delay of a cell is uniform on {0..D}.
        max_states: Cells with a larger augmented state space are left out (dense solvers).
        seed: Seed of the generated MDPs.
    """
    from .agents import make_mdp
    from .delay import DelayDistribution

    table = Table(
        "Anchors: the exact delayed optimum V*_1 re-solved by independent solvers",
        ["env", "D", "states", "V_star_reveal_dp", "V_star_materialised_vi",
         "V_star_mdptoolbox", "max_abs_diff"],
        notes=(
            "reveal_dp: this package's DP (rewards collected when revealed), used for every regret; "
            "materialised_vi: undelayed backward induction on the augmented MDP written out as a "
            "stationary finite MDP (rewards when earned); mdptoolbox: mdptoolbox.mdp.FiniteHorizon "
            f"(discount 1) on the same MDP. Cells with more than {max_states} augmented "
            "states are not materialised."
        ),
    )  # fmt: skip
    have_toolbox = mdptoolbox_available()
    for env, ds in cells:
        mdp = make_mdp(env, None, seed)
        for D in ds:
            aug = AugmentedMDP(mdp, DelayDistribution.uniform(D))
            if aug.n_states > max_states:
                continue
            vstar = aug.solve().value
            v_flat = materialised_value(aug, max_states)
            v_tb = mdptoolbox_value(aug, max_states) if have_toolbox else None
            diffs = [abs(v - vstar) for v in (v_flat, v_tb) if v is not None]
            table.add_row(env=env, D=D, states=aug.n_states, V_star_reveal_dp=vstar,
                          V_star_materialised_vi=v_flat,
                          V_star_mdptoolbox=v_tb if v_tb is not None else "not installed",
                          max_abs_diff=max(diffs))  # fmt: skip
    return table
