"""RL post-training with per-token advantages from group mean, Numca or Hista.

1. ``token_advantages``: per-token advantages of a group of rollouts.
   ``group``: ``R - mean(group)`` on every token (GRPO). ``numca``: segment GAE over number
   milestones with a persistent ``NumcaTable`` (updated after the step, so a rollout never
   sees its own reward). ``hista``: node values ``[group mean, V_1..V_{m-1}]`` from the
   *other* rollouts of the group (``include_self=False``), then segment GAE with ``lam``.
   All are divided by the group reward std (``scale_rewards="group"``); a group whose rewards
   are all equal gets zero advantages (the recipe's dynamic sampling drops such groups;
   without this, Numca's ``R - V`` would be divided by ~0). Numca's unseen root (first visit
   of a problem) falls back to the current group mean.
2. ``policy_loss``: token-level surrogate for ``loss_type``: ``grpo`` (PPO clip, mean per
   sequence then over sequences), ``dapo`` (clip with ``eps_high``, mean over all tokens),
   ``dr_grpo`` (sum over tokens / (batch * max_len)), ``cispo`` (clipped, stop-gradient IS
   weight times ``log pi`` times the advantage).
3. ``PolicyRLModule``: a LightningModule doing ``num_iterations`` updates per rollout batch
   (manual optimisation); ``train_rl`` runs it on ArithChain and logs held-out accuracy.
"""

from __future__ import annotations

import time

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .arith_chain import Problem, reward, sample_problems
from .hista_knn import HistaEstimator, knn_value, prefix_chamfer
from .numca import NumcaTable, extract_numbers
from .policy import CharPolicy, batch_ids
from .segment_gae import segment_gae

ADVANTAGES = ("group", "numca", "hista")
LOSSES = ("grpo", "dapo", "dr_grpo", "cispo")


def _hista_advantages(
    embs: list[torch.Tensor], rewards: list[float], est: HistaEstimator, lam: float
) -> list[torch.Tensor]:
    g = len(embs)
    base = float(np.mean(rewards))
    out = []
    for i in range(g):
        length = embs[i].shape[0]
        nodes = [n for n in est.nodes(length) if n < length]
        dists, labels = [], []
        for j in range(g):
            if j == i:
                continue
            mat = prefix_chamfer(embs[i], embs[j])
            cols = [n - 1 for n in est.nodes(embs[j].shape[0])]
            dists.append(mat[:, cols])
            labels.extend([rewards[j]] * len(cols))
        d = torch.cat(dists, 1)
        lab = torch.tensor(labels)
        values = [base] + [
            knn_value(d[n - 1], lab, est.k, est.min_distance, est.temperature) for n in nodes
        ]
        bounds = [0] + [n * est.mean_window for n in nodes]
        keep = [0] + [b for b in range(1, len(bounds)) if bounds[b] > bounds[b - 1]]
        out.append(
            segment_gae(
                torch.tensor(values)[keep],
                [bounds[b] for b in keep],
                length * est.mean_window,
                rewards[i],
                lam,
            )
        )
    return out


def token_advantages(
    mode: str,
    problem_id: str,
    responses: list[str],
    rewards: list[float],
    lengths: list[int],
    table: NumcaTable | None = None,
    embeddings: list[torch.Tensor] | None = None,
    hista: HistaEstimator | None = None,
    lam: float = 1.0,
    merge_threshold: int = 2,
    eps: float = 1e-4,
) -> list[torch.Tensor]:
    """Per-token advantages (one tensor of ``lengths[i]`` per rollout), group-std scaled."""
    if mode not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {mode!r}; use one of {ADVANTAGES}")
    if not len(responses) == len(rewards) == len(lengths) or len(responses) < 2:
        raise ValueError(
            f"need >= 2 rollouts with matching rewards and lengths, got "
            f"{len(responses)}, {len(rewards)}, {len(lengths)}"
        )
    std = float(np.std(rewards, ddof=1))
    if std == 0.0:  # dynamic sampling: no learning signal in this group
        return [torch.zeros(n) for n in lengths]
    std += eps
    if mode == "group":
        mean = float(np.mean(rewards))
        adv = [torch.full((n,), r - mean) for r, n in zip(rewards, lengths, strict=True)]
    elif mode == "numca":
        if table is None:
            raise ValueError("numca advantages need a NumcaTable")
        adv = [
            table.segment_advantages(
                problem_id,
                resp,
                [(k, k + 1) for k in range(n)],
                r,
                merge_threshold,
                lam,
                root_fallback=float(np.mean(rewards)),
            )
            for resp, r, n in zip(responses, rewards, lengths, strict=True)
        ]
    else:
        if embeddings is None or hista is None or len(embeddings) != len(responses):
            raise ValueError("hista advantages need one embedding per rollout and an estimator")
        adv = [
            a[:n]
            for a, n in zip(
                _hista_advantages(embeddings, rewards, hista, lam), lengths, strict=True
            )
        ]
    return [a / std for a in adv]


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    loss_type: str = "dapo",
    eps_low: float = 0.2,
    eps_high: float = 0.28,
) -> torch.Tensor:
    """Token-level policy loss on (B, T) log-probs, advantages and response mask."""
    if loss_type not in LOSSES:
        raise ValueError(f"unknown loss type {loss_type!r}; use one of {LOSSES}")
    ratio = torch.exp(logp - old_logp)
    if loss_type == "cispo":
        w = ratio.clamp(max=1 + eps_high).detach()
        per_tok = -w * adv * logp
    else:
        high = eps_low if loss_type == "grpo" else eps_high
        per_tok = -torch.minimum(ratio * adv, ratio.clamp(1 - eps_low, 1 + high) * adv)
    per_tok = per_tok * mask
    if loss_type == "grpo":
        return (per_tok.sum(1) / mask.sum(1).clamp(min=1)).mean()
    if loss_type == "dr_grpo":
        return per_tok.sum() / mask.numel()
    return per_tok.sum() / mask.sum().clamp(min=1)


class _Problems(Dataset):
    def __init__(self, n: int, seed: int):
        self.items = sample_problems(n, seed=seed)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return i


class PolicyRLModule(pl.LightningModule):
    """Policy-gradient post-training of a ``CharPolicy`` with per-token advantages.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> m = PolicyRLModule(CharPolicy(hidden=8, layers=1), advantage="numca", group_size=2)
    >>> m.hparams.loss_type
    'dapo'
    """

    def __init__(
        self,
        policy: CharPolicy | None = None,
        advantage: str = "group",
        loss_type: str = "dapo",
        group_size: int = 8,
        num_iterations: int = 2,
        lr: float = 1e-3,
        eps_low: float = 0.2,
        eps_high: float = 0.28,
        lam: float = 1.0,
        temperature: float = 1.0,
        problems: list[Problem] | None = None,
        seed: int = 0,
    ):
        super().__init__()
        if advantage not in ADVANTAGES:
            raise ValueError(f"unknown advantage estimator {advantage!r}; use one of {ADVANTAGES}")
        if loss_type not in LOSSES:
            raise ValueError(f"unknown loss type {loss_type!r}; use one of {LOSSES}")
        if group_size < 2:
            raise ValueError(f"group size must be >= 2, got {group_size}")
        self.save_hyperparameters(ignore=["policy", "problems"])
        self.policy = policy or CharPolicy()
        self.problems = problems or sample_problems(512, seed=seed + 3)
        self.table = NumcaTable()
        self.hista = HistaEstimator(
            alpha=0.7, mean_window=1, min_interval=2, min_distance=0.05, k=16
        )
        self.automatic_optimization = False
        self.gen = torch.Generator().manual_seed(seed)
        self.step_rewards: list[float] = []
        self.step_seconds: list[float] = []

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr)

    def _logp(self, ids, starts, lengths):
        logits = self.policy(ids[:, :-1])
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        pos = torch.arange(lp.shape[1])[None]
        mask = (pos >= starts[:, None] - 1) & (pos < lengths[:, None] - 1)
        return lp, mask.float()

    def training_step(self, batch, batch_idx):
        t0 = time.perf_counter()
        hp = self.hparams
        texts, starts, advs = [], [], []
        self.policy.eval()
        all_r = []
        pending = []
        for i in batch.tolist():
            p = self.problems[i]
            outs = self.policy.generate(
                p.prompt, hp.group_size, temperature=hp.temperature, generator=self.gen
            )
            rs = [reward(p, o) for o in outs]
            all_r.extend(rs)
            lens = [max(len(o), 1) for o in outs]
            embs = None
            if hp.advantage == "hista":
                with torch.no_grad():
                    ids, ln = batch_ids([p.prompt + o for o in outs], self.policy.tokenizer)
                    hid = self.policy.hidden(ids)
                embs = [
                    self.hista.embed(hid[k, : int(ln[k])], len(p.prompt) - 1)[1:]
                    for k in range(len(outs))
                ]
            a = token_advantages(
                hp.advantage, str(i), outs, rs, lens, self.table, embs, self.hista, hp.lam
            )
            pending.append((str(i), outs, rs))
            texts.extend(p.prompt + o for o in outs)
            starts.extend([len(p.prompt)] * len(outs))
            advs.extend(a)
        for pid, outs, rs in pending:  # the table learns after the step (no self-leak)
            for o, r in zip(outs, rs, strict=True):
                self.table.update(pid, [n for n, _ in extract_numbers(o)], r)
        self.policy.train()
        ids, lengths = batch_ids(texts, self.policy.tokenizer)
        starts_t = torch.tensor(starts)
        adv = torch.zeros(ids.shape[0], ids.shape[1] - 1)
        for k, a in enumerate(advs):
            s = starts[k] - 1
            adv[k, s : s + len(a)] = a[: adv.shape[1] - s]
        with torch.no_grad():
            old, mask = self._logp(ids, starts_t, lengths)
        opt = self.optimizers()
        for _ in range(hp.num_iterations):
            lp, _ = self._logp(ids, starts_t, lengths)
            loss = policy_loss(lp, old, adv, mask, hp.loss_type, hp.eps_low, hp.eps_high)
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
        self.policy.eval()
        self.step_rewards.append(float(np.mean(all_r)))
        self.step_seconds.append(time.perf_counter() - t0)
        self.log("train/reward", self.step_rewards[-1])

    def train_dataloader(self):
        return DataLoader(
            _Problems(len(self.problems), self.hparams.seed),
            batch_size=8,
            shuffle=True,
            generator=torch.Generator().manual_seed(self.hparams.seed),
        )


@torch.no_grad()
def held_out_accuracy(
    policy: CharPolicy, problems: list[Problem], samples: int = 4, seed: int = 0
) -> float:
    """Mean reward of ``samples`` sampled responses per held-out problem."""
    gen = torch.Generator().manual_seed(seed)
    return float(
        np.mean(
            [
                reward(p, o)
                for p in problems
                for o in policy.generate(p.prompt, samples, generator=gen)
            ]
        )
    )


def train_rl(module: PolicyRLModule, steps: int) -> PolicyRLModule:
    """Run ``steps`` rollout steps (each ``num_iterations`` optimiser steps) on CPU."""
    trainer = pl.Trainer(
        max_steps=steps * module.hparams.num_iterations,
        max_epochs=-1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module)
    return module
