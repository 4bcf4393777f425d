"""Does Hista do better on the policy's own rollouts with the reference's prompt-inclusive prefixes?

Run from the package folder (a few minutes of CPU on one thread):

    python docs/prompt_prefix_probe.py > docs/prompt_prefix_probe.txt

The authors' code starts every prefix at the first prompt token (the group's shared prompt
states are in both prefixes of a pair); ``hista`` starts them at the first response token
(``HistaEstimator(prompt_in_prefix=False)``, the default of every committed results file).
This probe scores both on SVEB states of the 0.15-teacher SFT policy (1200 steps, seed 0, as
the ``sveb`` section's first seed) of 32 *diagnostic* problems (``sample_problems(32,
seed=2000)``), with the validated rows chosen on 32 other diagnostic problems (``seed=2001``);
none of them is a problem the ``sveb`` section scores or validates on. G = 16, 3 cut states per
problem, M = 64. Rows: Hista's reference setting (``ARITH_HISTA``) and the validated Hista
(``HISTA_GRID``), each with response-only and with prompt-inclusive prefixes; MAE vs V_MC,
the paired difference to the group mean per problem and between the two prefix choices per
problem, with 95 % t-intervals. One seed: a diagnostic, not a claim.
"""

import numpy as np
import torch
from hista.arith_chain import sample_problems
from hista.estimators import Encoder, GroupMean, HistaValue
from hista.hista_knn import ARITH_HISTA, HistaEstimator
from hista.lightning import arith_sft_policy
from hista.rl_comparison import t_interval
from hista.sveb import build_cases, problem_errors
from hista.sveb_mini import HISTA_GRID, hista_options, validated_hista

torch.set_num_threads(1)
policy = arith_sft_policy(1200, 0, 0.15)
gen = torch.Generator().manual_seed(2000)


def sampler(p, prefix, n):
    return policy.generate(p.prompt + prefix, n, generator=gen)


test = build_cases(sampler, sample_problems(32, seed=2000), 16, 64, 0, 3, 2000)
val = build_cases(sampler, sample_problems(32, seed=2001), 16, 64, 0, 3, 2001)
enc = Encoder(policy)
rows = {"group mean (GRPO)": GroupMean()}
for prompt in (False, True):
    tag = "prompt + response prefixes" if prompt else "response-only prefixes"
    ref = HistaEstimator(**ARITH_HISTA, prompt_in_prefix=prompt)
    rows[f"Hista reference, {tag}"] = HistaValue(enc, ref)
    grid = [{**g, "prompt_in_prefix": prompt} for g in HISTA_GRID]
    best, mae = validated_hista(enc, val, grid)
    print(f"validated, {tag}: {hista_options(best)} (val MAE {mae:.4f})")
    rows[f"Hista validated, {tag}"] = HistaValue(enc, best)

errs = {}
for name, est in rows.items():
    pred = [est.predict(c) for c in test]
    errs[name] = problem_errors(pred, test)
pool = np.mean([np.mean(c.pool_rewards) for c in test])
print(
    f"{len(test)} states of {len({c.problem_id for c in test})} problems, mean pool reward {pool:.3f}"
)
keys = sorted(errs["group mean (GRPO)"], key=str)
g = np.array([errs["group mean (GRPO)"][k] for k in keys])
for name in rows:
    e = np.array([errs[name][k] for k in keys])
    d = e - g
    print(f"{name}: MAE {e.mean():.4f}, Δ/problem vs group {d.mean():+.4f} ± {t_interval(d):.4f}")
for kind in ("reference", "validated"):
    a = np.array([errs[f"Hista {kind}, response-only prefixes"][k] for k in keys])
    b = np.array([errs[f"Hista {kind}, prompt + response prefixes"][k] for k in keys])
    print(
        f"Hista {kind}: prompt + response minus response-only, Δ/problem "
        f"{(b - a).mean():+.4f} ± {t_interval(b - a):.4f}"
    )
