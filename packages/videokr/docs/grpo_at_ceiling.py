"""Why GRPO after the full-mix SFT loses items in the full run (``results/full``, methods).

For each seed of the full preset (400 clips, SFT 900 steps, GRPO 60 optimiser steps with group
8 and batch 8, as ``configs/reproduce/full.yaml``) this trains the full-mix SFT model once and
then runs GRPO from it at two learning rates: the preset's 5e-4 and 5e-5. Every 10 optimiser
steps it records the greedy accuracy on the filtered eval split, the items lost / gained
against the SFT model (paired), the mean reward of the last rollout batch and the k3 KL to the
reference. Before and after GRPO it samples 4 eval batches x 8 prompts x 8 completions at the
rollout temperature (1.0) and reports the mean reward and the share of groups whose rewards
differ (the only groups with a non-zero GRPO advantage).

    OMP_NUM_THREADS=1 python docs/grpo_at_ceiling.py > docs/grpo_at_ceiling.txt

(about 20 minutes on one thread). The output is read in the README ("Full run").
"""

from __future__ import annotations

import time

import lightning.pytorch as pl
import torch
from videokr.harness import EvalHarness
from videokr.lightning import GRPOModule
from videokr.synthkr import SKILL_COLS, _data, _trainer, filtered_world, model_outputs, train_sft

SEEDS = (0, 1, 2)
LRS = (5e-4, 5e-5)
N_VIDEOS, SFT_STEPS, GRPO_STEPS, GROUP, BATCH = 400, 900, 60, 8, 8  # configs/reproduce/full.yaml


def sampled_reward(module: GRPOModule, dm, n_batches: int = 4) -> tuple[float, float]:
    """Mean sampled reward and share of groups with differing rewards on eval prompts."""
    module.train()
    groups = []
    with torch.no_grad():
        for i, batch in enumerate(dm.test_dataloader()):
            if i >= n_batches:
                break
            groups.append(module.sample_groups(batch)["rewards"].view(-1, GROUP))
    r = torch.cat(groups)
    return float(r.mean()), float(((r.max(1).values - r.min(1).values) > 0).float().mean())


class Trajectory(pl.Callback):
    """Greedy eval accuracy and paired lost / gained items every 10 optimiser steps."""

    def __init__(self, harness: EvalHarness, base, dm) -> None:
        self.harness, self.base, self.dm = harness, base, dm

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:
        if trainer.global_step % 10:
            return
        res = self.harness.evaluate(model_outputs(module, self.dm))
        module.train()
        lost = sum(res.per_item[i] < self.base.per_item[i] for i in res.per_item)
        gained = sum(res.per_item[i] > self.base.per_item[i] for i in res.per_item)
        m = trainer.callback_metrics
        print(
            f"  step {trainer.global_step:3d}: greedy {res.overall:.4f}  lost {lost:3d}  "
            f"gained {gained:3d}  batch reward {float(m['train/reward']):.3f}  "
            f"kl {float(m['train/kl']):.4f}",
            flush=True,
        )


def main() -> None:
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True, warn_only=True)
    for seed in SEEDS:
        t0 = time.time()
        fw = filtered_world(N_VIDEOS, seed)
        sft, dm = train_sft(fw, list(SKILL_COLS), SFT_STEPS, seed)
        harness = EvalHarness(fw.test)
        base = harness.evaluate(model_outputs(sft, dm))
        print(f"seed {seed}: {len(fw.test)} eval items, SFT full mix greedy {base.overall:.4f}")
        for lr in LRS:
            pl.seed_everything(seed, verbose=False)
            grpo = GRPOModule(group_size=GROUP, max_new_tokens=48, lr=lr).start_from(sft)
            gdm = _data(fw, seed, list(SKILL_COLS), batch_size=BATCH)
            r0, mixed0 = sampled_reward(grpo, gdm)
            pl.seed_everything(seed, verbose=False)
            trainer = _trainer(GRPO_STEPS)
            trainer.callbacks.append(Trajectory(harness, base, gdm))
            print(f" lr {lr:g}: sampled reward {r0:.3f}, groups with a signal {mixed0:.3f}")
            trainer.fit(grpo, gdm)
            r1, mixed1 = sampled_reward(grpo, gdm)
            print(
                f" lr {lr:g} after GRPO: sampled reward {r1:.3f}, groups with a signal {mixed1:.3f}"
            )
        print(f"seed {seed}: {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
