"""RL from the SFT policy: loss type x advantage estimator (+ TRL's GRPOTrainer as an anchor).

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782). :func:`rl_table` trains the same SFT policy with
the DAPO loss and each advantage of :data:`ROWS` (group mean; Numca with the table updated
before the advantages as the authors' trainer does, before with leave-one-out reads, and after;
Hista; a PPO critic) through :class:`~hista.lightning.PolicyRLModule`
(:func:`~hista.lightning.train_rl`) on a training set small enough that problems come back
(``problems``: with 8 problems per step, each is visited ``8 * steps / problems`` times, so
Numca's persistent table is read on later visits), over seeds, and, when ``trl`` is installed,
TRL's ``GRPOTrainer`` on the same task from the same weights. Columns: held-out accuracy and
area under the reward curve with 95 % t-intervals over seeds, CPU seconds per step and the
estimator's overhead.
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

#: Rows of the table: (advantage, Numca table update) under the DAPO loss.
ROWS = (
    ("group", None),
    ("numca", "before"),
    ("numca", "loo"),
    ("numca", "after"),
    ("hista", None),
    ("critic", None),
)
#: RL learning rate of every training row (Adam; 1e-3 degraded the SFT policy within 10 steps).
RL_LR = 1e-4
RL_COLUMNS = [
    "trainer", "loss", "advantage", "held-out acc", "acc ± 95%", "reward AUC", "AUC ± 95%",
    "CPU s / step", "CPU time / group row", "advantage CPU ms / step",
]  # fmt: skip


def t_interval(values) -> float | None:
    """Half-width of the 95 % t-interval of the mean of ``values`` (None for one value).

    >>> round(t_interval([1.0, 2.0, 3.0]), 3)
    2.484
    """
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return None
    return float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def rl_table(policy: CausalLMPolicy, steps: int, seeds: int, seed: int = 0, problems: int = 32):
    """Train a copy of ``policy`` for ``steps`` rollout steps per row and seed; the table."""
    from icml26_shared.progress import progress
    from icml26_shared.results import Table

    data = ArithProblemsDataModule(n_problems=problems, seed=seed)
    data.setup("fit")
    held_out = data.held_out
    has_trl = importlib.util.find_spec("trl") is not None
    table = Table(
        "RL from the SFT policy: loss type x advantage estimator (+ TRL GRPOTrainer)",
        RL_COLUMNS,
        notes=(
            f"{steps} rollout steps of 8 problems x G=8 drawn from {problems} training problems "
            f"(each problem visited about {8 * steps / problems:.1f} times), 2 policy "
            f"iterations per batch, Adam lr {RL_LR:g}, gradient-norm clip 1.0, DAPO loss; "
            f"{seeds} seed(s): mean, and the half-width of its 95 % t-interval over seeds. "
            "numca (before): the group enters the persistent table before its advantages (the "
            "authors' trainer; a rollout's own reward is in its values); numca (loo): before, "
            "each rollout reading the table without its own visit; numca (after): values only "
            "from earlier visits; milestones at a number's start, unseen states worth the group "
            "mean. critic: a PPO value head on the last hidden state, fitted online. "
            "held-out acc: 100 unseen "
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
            "beta 0 / loss dapo, advantage 'trl' = TRL's own sequence-level (R - mean) / std. "
            "TRL samples with "
            "transformers' generate and its own data order, so it matches our 'dapo / group' "
            "row in recipe, not in random stream."
            + ("" if has_trl else " TRL rows skipped: trl is not installed (hista[bench]).")
        ),
    )
    rows = [("hista", "dapo", adv, upd) for adv, upd in ROWS]
    if has_trl:
        rows += [("trl", "dapo", "trl", None)]
    base_sec: dict[tuple[str, str], float] = {}
    for trainer, loss, adv, upd in progress(rows, desc="RL rows"):
        accs, aucs, secs, adv_secs = [], [], [], []
        for k in range(seeds):
            torch.manual_seed(seed + k)
            if trainer == "trl":
                from .trl_adapter import grpo_trainer_anchor

                res = grpo_trainer_anchor(
                    copy.deepcopy(policy), data.train_problems, held_out, steps,
                    advantage=None, lr=RL_LR, seed=seed + k,
                )  # fmt: skip
                accs.append(res["held-out acc"])
                aucs.append(res["reward AUC"])
                secs.append(res["s / step"])
                adv_secs.append(float("nan"))
                continue
            m = PolicyRLModule(
                advantage=adv, loss_type=loss, group_size=8, lr=RL_LR, seed=seed + k,
                policy=copy.deepcopy(policy), numca_update=upd or "before",
                **{f"hista_{key}": ARITH_HISTA[key] for key in ("alpha", "min_interval", "min_distance", "k")},
            )  # fmt: skip
            train_rl(m, steps, ArithProblemsDataModule(n_problems=problems, seed=seed + k))
            accs.append(held_out_accuracy(m.policy, held_out, seed=seed))
            aucs.append(float(np.mean(m.step_rewards)))
            secs.append(float(np.mean(m.step_seconds)))
            adv_secs.append(float(np.mean(m.adv_seconds)))
        sec = float(np.mean(secs))
        if adv in ("group", "trl"):
            base_sec[(trainer, loss)] = sec
        table.add_row(
            trainer=trainer,
            loss=loss,
            advantage=adv if upd is None else f"{adv} ({upd})",
            **{
                "held-out acc": float(np.mean(accs)),
                "acc ± 95%": t_interval(accs),
                "reward AUC": float(np.mean(aucs)),
                "AUC ± 95%": t_interval(aucs),
                "CPU s / step": sec,
                "CPU time / group row": sec / base_sec[(trainer, loss)],
                "advantage CPU ms / step": (
                    None if trainer == "trl" else 1000 * float(np.mean(adv_secs))
                ),
            },
        )
    return table
