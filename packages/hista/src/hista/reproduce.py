"""``hista reproduce``: SVEB-mini and the RL table at CPU scale (the paper's comparisons).

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782). The policy is a tiny randomly initialised
``transformers`` Qwen2 LM with a character-level fast tokenizer, SFT-warm-started on
noisy-teacher ArithChain traces (:func:`~hista.lightning.arith_sft_policy`, shared by the
sections). Sizes in ``configs/reproduce/{quick,full,paper}.yaml``; three sections:

1. ``sveb``: SVEB-mini on the policy's own rollouts and on the noisy teacher's (exact values
   known) for group mean, ppo-1 critic, VinePPO MC, Numca, Hista and the oracle
   (:func:`~hista.sveb_mini.sveb_mini`), and the advantage error each value estimate causes
   against the exact one-step advantage (:func:`~hista.advantage_variance.advantage_error_table`).
2. ``rl``: RL from the SFT policy with the DAPO loss: group mean, Numca (table updated before /
   leave-one-out / after), Hista, PPO critic, on a small training set so that problems come
   back, plus TRL's ``GRPOTrainer`` when installed (:func:`~hista.rl_comparison.rl_table`).
3. ``informativeness``: Hista's error vs SFT length and planted informative states
   (:func:`~hista.informativeness.informativeness_table`).
"""

from __future__ import annotations

from dataclasses import dataclass

from icml26_shared.experiment import Experiment, Section, SectionResult

from .advantage_variance import advantage_error_table
from .arith_chain import NoisyTeacher, sample_problems
from .estimators import Encoder
from .hista_knn import ARITH_HISTA, HistaEstimator
from .informativeness import informativeness_table
from .lightning import arith_sft_policy
from .policy import ARITH_POLICY
from .rl_comparison import rl_table
from .sveb import mae_figure
from .sveb_mini import TEACHER_ROLLOUTS, sveb_over_seeds


@dataclass
class SvebSetting:
    sft_steps: int  # SFT warm start of the policy
    problems: int  # SVEB problems (cases_per_problem cut states each)
    group_size: int  # pool rollouts G per problem
    n_mc: int  # continuations M per state (the target V_MC)
    cases_per_problem: int
    critic_problems: int  # labelled problems (x 8 rollouts) of each ppo-1 critic
    critic_epochs: int
    variance_problems: int  # problems (x G=8 teacher rollouts) of the advantage-error table
    seeds: int = 3  # SFT policy, problems, validation split and cases drawn anew per seed
    # base error rate of the teacher whose traces warm-start the policy (0.05: the RL policy's;
    # 0.15: a policy that carries on from its own wrong partial sums, docs/policy-values.md)
    sft_p_base: float = 0.05


def sveb_section(s: SvebSetting, seed: int) -> SectionResult:
    import torch

    torch.set_num_threads(1)
    summaries, policy, critics, picks = sveb_over_seeds(
        lambda k: arith_sft_policy(s.sft_steps, k, s.sft_p_base), s.seeds, seed, s.problems, s.group_size,
        s.n_mc, s.cases_per_problem, s.critic_problems, s.critic_epochs,
    )  # fmt: skip
    critic = critics[TEACHER_ROLLOUTS]
    variance = advantage_error_table(
        NoisyTeacher(),
        sample_problems(s.variance_problems, seed=seed + 555),
        Encoder(policy).states,
        HistaEstimator(**ARITH_HISTA),
        critic=lambda h: float(critic(h[None]).detach()[0]),
        seed=seed,
    )
    note = (
        "Setting: ArithChain (one-digit addition chains, 3-5 terms), policy = randomly "
        f"initialised Qwen2ForCausalLM ({ARITH_POLICY}, {policy.n_parameters} parameters, "
        f"character-level fast tokenizer) SFT-warm-started for {s.sft_steps} steps on "
        f"noisy-teacher traces (base error rate {s.sft_p_base:g}); Hista hyper-parameters {ARITH_HISTA} (fixed, not tuned on these "
        "cases) for the reference rows. The advantage-error table uses the first seed's policy "
        "and critic. Chosen on validation: " + "; ".join(picks) + "."
    )
    return SectionResult(
        [*summaries, variance],
        {"sveb_mae.png": mae_figure([t for t in summaries if "MAE vs V_MC" in t.columns])},
        [note],
    )


@dataclass
class RLSetting:
    sft_steps: int  # SFT warm start of the policy every row starts from
    rl_steps: int  # rollout steps of 8 problems x G=8 per row and seed
    rl_seeds: int
    rl_problems: int = (
        32  # training problems (8 per step): problems come back, Numca's table is read
    )


def rl_section(s: RLSetting, seed: int):
    import torch

    torch.set_num_threads(1)
    policy = arith_sft_policy(s.sft_steps, seed)
    return rl_table(policy, s.rl_steps, s.rl_seeds, seed, s.rl_problems)


@dataclass
class InformativenessSetting:
    sft_steps: list[int]  # increasing SFT lengths (one policy trained further between rows)
    problems: int  # SVEB-mini problems (teacher rollouts, exact values)
    scales: list[float]  # scales of the planted wrong-partial-sum coordinate


def informativeness_section(s: InformativenessSetting, seed: int):
    return informativeness_table(tuple(s.sft_steps), s.problems, tuple(s.scales), seed)


EXPERIMENT = Experiment(
    "hista",
    [
        Section(
            "sveb",
            sveb_section,
            "Numca and Hista estimate state values better than the group mean and the PPO "
            "critic (SVEB), and so give a lower advantage error",
            SvebSetting,
        ),
        Section(
            "rl",
            rl_section,
            "Numca (table updated before / leave-one-out / after) and Hista advantages train "
            "better than group-mean and PPO-critic advantages (DAPO loss, problems revisited), "
            "at little extra cost per step",
            RLSetting,
        ),
        Section(
            "informativeness",
            informativeness_section,
            "Hista is only as good as the hidden states are informative about the outcome",
            InformativenessSetting,
        ),
    ],
)
