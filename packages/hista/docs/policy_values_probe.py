"""Do the SFT policy's own SVEB states carry value information beyond their problem?

Run from the package folder (about 5 minutes of CPU on one thread):

    python docs/policy_values_probe.py > docs/policy_values_probe.txt

For the policy warm-started on noisy-teacher traces with base error rate 0.05 (the RL
policy) and 0.15, SFT 1200 steps, seed 0: SVEB states of 16 *diagnostic* problems
(``sample_problems(16, seed=1000)``, none of the problems the ``sveb`` section scores or
validates on), G = 16, 3 cut states per problem, M = 64 continuations. Prints the mean pool
reward, :func:`hista.sveb.value_information` (the within-problem spread of V_MC, its binomial
noise and the spread beyond the noise), and the mean V_MC of states whose prefix already holds
a wrong partial sum against the others. No estimator is scored: the choice of the benchmark
policy rests on these numbers only.
"""

import numpy as np
import torch
from hista.arith_chain import sample_problems
from hista.estimators import InformativeEncoder
from hista.lightning import arith_sft_policy
from hista.sveb import build_cases, value_information

torch.set_num_threads(1)
problems = sample_problems(16, seed=1000)
for p_base in (0.05, 0.15):
    policy = arith_sft_policy(1200, 0, p_base)
    gen = torch.Generator().manual_seed(1000)

    def sampler(p, prefix, n, policy=policy, gen=gen):
        return policy.generate(p.prompt + prefix, n, generator=gen)

    cases = build_cases(sampler, problems, 16, 64, 0, 3, 1000)
    v = np.array([c.target for c in cases])
    wrong = np.array(
        [InformativeEncoder.wrong_flags(c.problem.prompt + c.prefix)[-1] for c in cases]
    )
    info = {k: None if x is None else round(x, 4) for k, x in value_information(cases).items()}
    pool = np.mean([np.mean(c.pool_rewards) for c in cases])
    print(
        f"p_base {p_base}: {len(cases)} states, mean pool reward {pool:.3f}, {info}, "
        f"share of states after a wrong partial sum {wrong.mean():.2f}, "
        f"mean V_MC after a wrong partial sum {v[wrong == 1].mean():.3f} vs otherwise "
        f"{v[wrong == 0].mean():.3f}"
    )
