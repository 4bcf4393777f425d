"""RL from the SFT policy: loss type x advantage estimator (+ TRL's GRPOTrainer as an anchor).

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782). :func:`rl_table` trains the same SFT policy with
every loss (GRPO, DAPO, CISPO) x advantage (group mean, Numca, Hista) through
:class:`~hista.lightning.PolicyRLModule` (:func:`~hista.lightning.train_rl`), over seeds, and,
when ``trl`` is installed, TRL's ``GRPOTrainer`` on the same task from the same weights (its own
advantages, and Numca's through :mod:`hista.trl_adapter`). Columns: held-out accuracy, area
under the reward curve, CPU seconds per step and the estimator's overhead.
"""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import torch

from .hista_knn import ARITH_HISTA
from .lightning import ArithProblemsDataModule, PolicyRLModule, train_rl
from .policy import CausalLMPolicy
from .rl_training import held_out_accuracy

#: Advantage estimators of the table's rows.
ADV = ("group", "numca", "hista")
#: RL learning rate of every training row (Adam; 1e-3 degraded the SFT policy within 10 steps).
RL_LR = 1e-4
RL_COLUMNS = [
    "trainer", "loss", "advantage", "held-out acc", "acc sd", "reward AUC", "AUC sd",
    "CPU s / step", "CPU time / group row", "advantage CPU ms / step",
]  # fmt: skip


def rl_table(policy: CausalLMPolicy, steps: int, seeds: int, seed: int = 0):
    """Train a copy of ``policy`` for ``steps`` rollout steps per row and seed; the table."""
    from icml26_shared.progress import progress
    from icml26_shared.results import Table

    data = ArithProblemsDataModule(seed=seed)
    data.setup("fit")
    held_out = data.held_out
    has_trl = importlib.util.find_spec("trl") is not None
    table = Table(
        "RL from the SFT policy: loss type x advantage estimator (+ TRL GRPOTrainer)",
        RL_COLUMNS,
        notes=(
            f"{steps} rollout steps of 8 problems x G=8, 2 policy iterations per batch, "
            f"Adam lr {RL_LR:g}, gradient-norm clip 1.0; {seeds} seed(s): mean, and the "
            "sd over seeds (blank for one seed). held-out acc: 100 unseen "
            "problems x 4 samples after the last step (SFT start: "
            f"{held_out_accuracy(policy, held_out, seed=seed):.3f}); reward AUC: mean training "
            "reward over the steps; CPU s / step: process CPU seconds of one step (rollouts, "
            "advantages, updates; one torch thread), unaffected by other jobs on a shared "
            "machine; CPU time / group row: CPU s / step over that of the same trainer and loss "
            "with group-mean advantages (the estimator's overhead, plus the effect of different "
            "response lengths on generation); advantage CPU ms / step: the CPU time of the "
            "advantage computation alone (Hista: EMA of the hidden states of the log-prob "
            "forward pass, which it reuses, batched prefix distances and k-NN). trainer=trl: TRL's "
            "GRPOTrainer on the same task, "
            "from the same SFT weights, same batch / iterations / lr / clip (0.2, 0.28) / "
            "beta 0 / loss dapo; advantage 'trl' = TRL's own sequence-level (R - mean) / std, "
            "'numca' = our Numca token advantages through hista.trl_adapter. TRL samples with "
            "transformers' generate and its own data order, so it matches our 'dapo / group' "
            "row in recipe, not in random stream."
            + ("" if has_trl else " TRL rows skipped: trl is not installed (hista[bench]).")
        ),
    )
    rows = [("hista", loss, adv) for loss in ("grpo", "dapo", "cispo") for adv in ADV]
    if has_trl:
        rows += [("trl", "dapo", "trl"), ("trl", "dapo", "numca")]
    base_sec: dict[tuple[str, str], float] = {}
    for trainer, loss, adv in progress(rows, desc="RL rows"):
        accs, aucs, secs, adv_secs = [], [], [], []
        for k in range(seeds):
            torch.manual_seed(seed + k)
            if trainer == "trl":
                from .trl_adapter import grpo_trainer_anchor

                res = grpo_trainer_anchor(
                    copy.deepcopy(policy), data.train_problems, held_out, steps,
                    advantage=None if adv == "trl" else adv, lr=RL_LR, seed=seed + k,
                )  # fmt: skip
                accs.append(res["held-out acc"])
                aucs.append(res["reward AUC"])
                secs.append(res["s / step"])
                adv_secs.append(float("nan"))
                continue
            m = PolicyRLModule(
                advantage=adv, loss_type=loss, group_size=8, lr=RL_LR, seed=seed + k,
                policy=copy.deepcopy(policy),
                **{f"hista_{key}": ARITH_HISTA[key] for key in ("alpha", "min_interval", "min_distance", "k")},
            )  # fmt: skip
            train_rl(m, steps, ArithProblemsDataModule(seed=seed + k))
            accs.append(held_out_accuracy(m.policy, held_out, seed=seed))
            aucs.append(float(np.mean(m.step_rewards)))
            secs.append(float(np.mean(m.step_seconds)))
            adv_secs.append(float(np.mean(m.adv_seconds)))
        sec = float(np.mean(secs))
        if adv in ("group", "trl"):
            base_sec[(trainer, loss)] = sec
        sd = (lambda v: float(np.std(v, ddof=1))) if seeds > 1 else (lambda v: None)
        table.add_row(
            trainer=trainer,
            loss=loss,
            advantage=adv,
            **{
                "held-out acc": float(np.mean(accs)),
                "acc sd": sd(accs),
                "reward AUC": float(np.mean(aucs)),
                "AUC sd": sd(aucs),
                "CPU s / step": sec,
                "CPU time / group row": sec / base_sec[(trainer, loss)],
                "advantage CPU ms / step": (
                    None if trainer == "trl" else 1000 * float(np.mean(adv_secs))
                ),
            },
        )
    return table
