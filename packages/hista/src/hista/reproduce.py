"""``hista reproduce``: SVEB-mini at CPU scale (the paper's value-estimation comparison).

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782).

One run:

1. SFT-warm-starts the policy (a tiny randomly initialised ``transformers`` Qwen2 LM with a
   character-level fast tokenizer) on noisy-teacher ArithChain traces.
2. Trains the PPO-style critic (value head on the frozen policy) on labelled rollouts of
   problems outside the benchmark ("ppo-1").
3. Builds two SVEB case sets: (a) the policy's own rollouts, target = Monte-Carlo mean of
   ``M`` continuations; (b) the noisy teacher's rollouts, where the exact value of every prefix
   is known (the policy serves as the hidden-state encoder there).
4. Scores group mean, critic, VinePPO MC (K=2, 4), Numca, Hista (disjoint pool and the
   reference's ``include_self``) and, on (b), the exact oracle; plus the MC noise floor.
5. Scores each value estimator's segment advantages against the exact one-step advantage on
   teacher groups (``hista.advantage_variance``: the paper's mechanism, lower advantage error).
6. Trains the SFT policy further with RL: loss GRPO / DAPO / CISPO x advantages group mean /
   Numca / Hista, plus TRL's ``GRPOTrainer`` on the same task from the same weights (its own
   advantages, and Numca's through the adapter; skipped without ``trl``), reporting held-out
   accuracy, area under the reward curve, seconds per step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from .arith_chain import NoisyTeacher, reward, sample_problems
from .critic import train_critic
from .estimators import (
    CriticValue,
    Encoder,
    GroupMean,
    HistaValue,
    InformativeEncoder,
    NumcaEstimator,
    Oracle,
    VineMC,
)
from .hista_knn import HistaEstimator
from .policy import CausalLMPolicy, sft_warm_start
from .sveb import build_cases, evaluate, noise_floor


@dataclass(frozen=True)
class Setting:
    """Sizes of one reproduce run."""

    problems: int
    group_size: int
    n_mc: int
    cases_per_problem: int
    sft_steps: int
    critic_problems: int
    critic_epochs: int
    rl_steps: int
    rl_seeds: int
    variance_problems: int


QUICK = Setting(
    problems=40,
    group_size=16,
    n_mc=32,
    cases_per_problem=2,
    sft_steps=400,
    critic_problems=80,
    critic_epochs=10,
    rl_steps=20,
    rl_seeds=3,
    variance_problems=30,
)
FULL = Setting(
    problems=80,
    group_size=16,
    n_mc=32,
    cases_per_problem=2,
    sft_steps=800,
    critic_problems=200,
    critic_epochs=20,
    rl_steps=30,
    rl_seeds=3,
    variance_problems=80,
)
#: The ArithChain policy: a randomly initialised Qwen2 LM over the character vocabulary.
POLICY = {"hidden": 96, "layers": 2, "heads": 4}
#: Hista at ArithChain scale: one token per character, so windows and intervals shrink
#: (research notes C4: ``min_interval = 4``, ``mean_window = 1``); ``alpha`` is the recipes' 0.7.
HISTA = {"alpha": 0.7, "mean_window": 1, "min_interval": 2, "min_distance": 0.05, "k": 16}
#: The planted coordinate of ``InformativeEncoder`` (about the norm of the policy's hidden
#: states, so a wrong partial sum moves a state as far as a different context does).
INFORMATIVE_SCALE = 10.0
COLUMNS = ["estimator", "MAE vs V_MC", "MAE vs exact", "Spearman", "within-problem std"]


def _row(name: str, metrics: dict) -> dict:
    return {
        "estimator": name,
        "MAE vs V_MC": metrics["mae_mc"],
        "MAE vs exact": metrics.get("mae_exact"),
        "Spearman": metrics["spearman"],
        "within-problem std": metrics["within_std"],
    }


def reproduce(
    out: Path, quick: bool = False, seed: int = 0, setting: Setting | None = None
) -> Report:
    """Run SVEB-mini, the advantage-error table and the RL table; return the report."""
    torch.set_num_threads(1)
    start = time.process_time()
    s = setting or (QUICK if quick else FULL)
    report = Report("hista", out)
    torch.manual_seed(seed)
    teacher = NoisyTeacher()
    policy = CausalLMPolicy(**POLICY)
    sft_warm_start(policy, sample_problems(2000, seed=seed + 7), teacher, s.sft_steps, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    enc = Encoder(policy)

    def policy_sampler(p, prefix, n):
        return policy.generate(p.prompt + prefix, n, generator=gen)

    def teacher_sampler(p, prefix, n):
        return [teacher.continue_from(p, prefix, rng) for _ in range(n)]

    # ppo-1 critic: labelled rollouts of problems outside SVEB, per-token regression
    def critic_for(sampler):
        feats, targets = [], []
        for p in sample_problems(s.critic_problems, seed=seed + 101):
            outs = sampler(p, "", 8)
            for o, h in zip(outs, enc.states([p.prompt + o for o in outs]), strict=True):
                f = h[len(p.prompt) - 1 : -1]
                feats.append(f)
                targets.append(torch.full((f.shape[0],), reward(p, o)))
        return train_critic(torch.cat(feats), torch.cat(targets), s.critic_epochs, seed)

    critics = {}
    problems = sample_problems(s.problems, seed=seed + 1)
    settings = {
        "policy rollouts": (policy_sampler, None),
        "teacher rollouts (exact values)": (teacher_sampler, teacher.exact_value),
    }
    for label, (sampler, exact) in settings.items():
        cases = build_cases(
            sampler, problems, s.group_size, s.n_mc, 4, s.cases_per_problem, seed, exact
        )
        critics[label] = critic_for(sampler)
        ests = [
            GroupMean(),
            CriticValue(enc, critics[label]),
            VineMC(2),
            VineMC(4),
            NumcaEstimator(),
            HistaValue(enc, HistaEstimator(**HISTA)),
            HistaValue(enc, HistaEstimator(**HISTA, include_self=True)),
            HistaValue(
                InformativeEncoder(enc, INFORMATIVE_SCALE),
                HistaEstimator(**HISTA),
                "Hista, informative states (+ planted wrong-sum coordinate)",
            ),
        ]
        if exact is not None:
            ests.append(Oracle())
        mean_r = float(np.mean([r for c in cases[:: s.cases_per_problem] for r in c.pool_rewards]))
        table = Table(
            f"SVEB-mini, {label}",
            COLUMNS,
            notes=(
                f"{len(cases)} states from {s.problems} problems, G={s.group_size} pool "
                f"rollouts per problem (disjoint from the cut source), V_MC from M={s.n_mc} "
                f"continuations; mean pool reward {mean_r:.3f}. Lower MAE is better; "
                "within-problem std = mean std of the predictions over the states of one "
                "problem (0 = collapsed to a per-problem constant)."
            ),
        )
        for est in progress(ests, desc=f"SVEB {label}"):
            table.add_row(**_row(est.name, evaluate([est.predict(c) for c in cases], cases)))
        for m in (1, 2, 4, 8):
            table.add_row(**_row(f"noise floor: V_MC with M={m}", noise_floor(cases, m)))
        report.add_table(table)
    report.add_table(
        _variance_table(policy, enc, teacher, critics["teacher rollouts (exact values)"], s, seed)
    )
    report.add_table(_training_table(policy, s, seed))
    _plot(report)
    report.note(
        "Setting: ArithChain (one-digit addition chains, 3-5 terms), policy = randomly "
        f"initialised Qwen2ForCausalLM ({POLICY}, {policy.n_parameters} parameters, "
        "character-level fast tokenizer) SFT-warm-started for "
        f"{s.sft_steps} steps on noisy-teacher traces; Hista hyper-parameters {HISTA} "
        "(fixed, not tuned on these cases)."
    )
    report.note(f"CPU time of this run (one thread): {time.process_time() - start:.0f} s.")
    return report


def _variance_table(policy, enc, teacher, critic, s: Setting, seed: int) -> Table:
    from .advantage_variance import advantage_errors

    res = advantage_errors(
        teacher,
        sample_problems(s.variance_problems, seed=seed + 555),
        8,
        enc.states,
        HistaEstimator(**HISTA),
        critic=lambda h: float(critic(h[None]).detach()[0]),
        seed=seed,
        vine_k=4,
    )
    names = {
        "group": "group mean (GRPO)",
        "numca": "Numca (table after one earlier visit)",
        "hista": "Hista (other rollouts of the group)",
        "vine": "VinePPO MC K=4 (teacher continuations)",
        "critic": "PPO critic (value head)",
        "oracle": "oracle V_exact (return-noise floor)",
    }
    table = Table(
        "Advantage error vs the exact advantage (teacher rollouts)",
        ["value estimate", "advantage MSE vs exact", "E[A^2]", "value MAE at milestones"],
        notes=(
            f"{s.variance_problems} problems x G=8 noisy-teacher rollouts, "
            f"{res['group']['segments']} segments. Segment advantage A_k = R - V(s_k) "
            "(segment GAE, lambda=1, before the group-std division) scored against the exact "
            "one-step advantage V(s_k+1) - V(s_k); s_k = the prefix after k complete numbers. "
            "advantage MSE = return noise (the oracle row) + value error; E[A^2] is the "
            "second moment of the advantage signal. Lower is better."
        ),
    )
    for key, label in names.items():
        r = res[key]
        table.add_row(
            **{
                "value estimate": label,
                "advantage MSE vs exact": r["adv_mse"],
                "E[A^2]": r["adv_second_moment"],
                "value MAE at milestones": r["value_mae"],
            }
        )
    return table


def _training_table(policy, s: Setting, seed: int) -> Table:
    import copy
    import importlib.util

    from .rl_training import (
        ArithProblemsDataModule,
        PolicyRLModule,
        held_out_accuracy,
        train_rl,
    )

    data = ArithProblemsDataModule(seed=seed)
    data.setup("fit")
    held_out = data.held_out
    has_trl = importlib.util.find_spec("trl") is not None
    table = Table(
        "RL from the SFT policy: loss type x advantage estimator (+ TRL GRPOTrainer)",
        [
            "trainer",
            "loss",
            "advantage",
            "held-out acc",
            "acc sd",
            "reward AUC",
            "AUC sd",
            "CPU s / step",
            "CPU time / group row",
            "advantage CPU ms / step",
        ],
        notes=(
            f"{s.rl_steps} rollout steps of 8 problems x G=8, 2 policy iterations per batch, "
            f"Adam lr {RL_LR:g}, gradient-norm clip 1.0; {s.rl_seeds} seed(s): mean, and the "
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
        for k in range(s.rl_seeds):
            torch.manual_seed(seed + k)
            if trainer == "trl":
                from .trl_adapter import grpo_trainer_anchor

                pol = copy.deepcopy(policy)
                res = grpo_trainer_anchor(
                    pol,
                    data.train_problems,
                    held_out,
                    s.rl_steps,
                    advantage=None if adv == "trl" else adv,
                    lr=RL_LR,
                    seed=seed + k,
                )
                accs.append(res["held-out acc"])
                aucs.append(res["reward AUC"])
                secs.append(res["s / step"])
                adv_secs.append(float("nan"))
                continue
            m = PolicyRLModule(
                advantage=adv,
                loss_type=loss,
                group_size=8,
                lr=RL_LR,
                seed=seed + k,
                policy=copy.deepcopy(policy),
                **{
                    f"hista_{key}": HISTA[key]
                    for key in ("alpha", "min_interval", "min_distance", "k")
                },
            )
            train_rl(m, s.rl_steps, ArithProblemsDataModule(seed=seed + k))
            accs.append(held_out_accuracy(m.policy, held_out, seed=seed))
            aucs.append(float(np.mean(m.step_rewards)))
            secs.append(float(np.mean(m.step_seconds)))
            adv_secs.append(float(np.mean(m.adv_seconds)))
        sec = float(np.mean(secs))
        if adv in ("group", "trl"):
            base_sec[(trainer, loss)] = sec
        sd = (lambda v: float(np.std(v, ddof=1))) if s.rl_seeds > 1 else (lambda v: None)
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


ADV = ("group", "numca", "hista")
#: RL learning rate of every training row (Adam; 1e-3 degraded the SFT policy within 10 steps).
RL_LR = 1e-4


def _plot(report: Report) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sveb = [t for t in report.tables if t.title.startswith("SVEB")]
    fig, axes = plt.subplots(1, len(sveb), figsize=(6 * len(sveb), 4))
    for ax, table in zip(np.atleast_1d(axes), sveb, strict=True):
        rows = [r for r in table.rows if not r["estimator"].startswith("noise")]
        ax.barh([r["estimator"] for r in rows], [r["MAE vs V_MC"] for r in rows])
        ax.set_title(table.title, fontsize=9)
        ax.set_xlabel("MAE vs V_MC")
        ax.invert_yaxis()
    report.save_figure(fig, "sveb_mae")
