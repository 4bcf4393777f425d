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
   (manual optimisation) on batches of ``ArithProblemsDataModule``; validation is held-out
   accuracy; ``train_rl`` runs it on CPU for a fixed number of rollout steps. Besides the
   three modes above it takes ``vine`` (VinePPO Monte Carlo) and ``critic`` (a PPO value head
   trained online) through ``hista.advantage_provider``.
"""

from __future__ import annotations

import time
from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader

from .arith_chain import NoisyTeacher, Problem, reward, sample_problems
from .hista_knn import HistaEstimator
from .numca import NumcaTable, extract_numbers
from .policy import CausalLMPolicy, sft_warm_start
from .segment_gae import segment_gae


def token_offsets(tokenizer, text: str) -> list[tuple[int, int]]:
    """Character span ``(start, end)`` of every token of ``text`` (no special tokens).

    Raises ``ValueError`` for a tokenizer without offsets (a slow, pure-Python tokenizer).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"a fast tokenizer is required (token offsets map numbers to milestones); "
            f"got {type(tokenizer).__name__}"
        )
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [tuple(map(int, span)) for span in enc["offset_mapping"]]


ADVANTAGES = ("group", "numca", "hista")
#: advantage modes of ``PolicyRLModule``: the above plus the providers ``vine`` and ``critic``
RL_ADVANTAGES = (*ADVANTAGES, "vine", "critic")
LOSSES = ("grpo", "dapo", "dr_grpo", "cispo")


def _hista_advantages(
    embs: list[torch.Tensor], rewards: list[float], est: HistaEstimator, lam: float
) -> list[torch.Tensor]:
    base = float(np.mean(rewards))
    node_values = est.group_values(embs, rewards)  # one vectorised k-NN pass for the group
    out = []
    for emb, vals, r in zip(embs, node_values, rewards, strict=True):
        length = emb.shape[0]
        nodes = est.query_nodes(length)
        values = [base] + vals.tolist()
        bounds = [0] + [n * est.mean_window for n in nodes]
        keep = [0] + [b for b in range(1, len(bounds)) if bounds[b] > bounds[b - 1]]
        out.append(
            segment_gae(
                torch.tensor(values)[keep],
                [bounds[b] for b in keep],
                length * est.mean_window,
                r,
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
    offsets: list[list[tuple[int, int]]] | None = None,
    scale: bool = True,
) -> list[torch.Tensor]:
    """Per-token advantages (one tensor of ``lengths[i]`` per rollout), group-std scaled.

    ``offsets[i]``: character span of each response token of rollout ``i`` (default: one token
    per character). ``scale=False`` returns the raw ``R - V`` advantages (no std division and
    no zeroing of equal-reward groups), for diagnostics.
    """
    if mode not in ADVANTAGES:
        raise ValueError(f"unknown advantage estimator {mode!r}; use one of {ADVANTAGES}")
    if not len(responses) == len(rewards) == len(lengths) or len(responses) < 2:
        raise ValueError(
            f"need >= 2 rollouts with matching rewards and lengths, got "
            f"{len(responses)}, {len(rewards)}, {len(lengths)}"
        )
    if offsets is None:
        offsets = [[(k, k + 1) for k in range(n)] for n in lengths]
    elif len(offsets) != len(lengths) or any(
        len(o) != n for o, n in zip(offsets, lengths, strict=True)
    ):
        raise ValueError("need one (start, end) span per response token of every rollout")
    std = float(np.std(rewards, ddof=1))
    if scale and std == 0.0:  # dynamic sampling: no learning signal in this group
        return [torch.zeros(n) for n in lengths]
    std = std + eps if scale else 1.0
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
                offs,
                r,
                merge_threshold,
                lam,
                root_fallback=float(np.mean(rewards)),
            )
            for resp, offs, r in zip(responses, offsets, rewards, strict=True)
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


class ArithProblemsDataModule(pl.LightningDataModule):
    """ArithChain prompts for RL: batches of training problems, held-out problems to score.

    Batches are lists of :class:`~hista.arith_chain.Problem` (the module samples the rollouts).

    Examples
    --------
    >>> dm = ArithProblemsDataModule(n_problems=16, n_held_out=4, batch_size=8)
    >>> dm.setup("fit"); batch = next(iter(dm.train_dataloader()))
    >>> len(batch), type(batch[0]).__name__, len(next(iter(dm.val_dataloader())))
    (8, 'Problem', 4)
    """

    def __init__(
        self,
        n_problems: int = 512,
        n_held_out: int = 100,
        batch_size: int = 8,
        min_terms: int = 3,
        max_terms: int = 5,
        seed: int = 0,
    ):
        super().__init__()
        if n_problems < 1 or n_held_out < 1 or batch_size < 1:
            raise ValueError(
                "need n_problems, n_held_out and batch_size >= 1, got "
                f"{n_problems}, {n_held_out}, {batch_size}"
            )
        self.save_hyperparameters()
        self.train_problems: list[Problem] = []
        self.held_out: list[Problem] = []

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        self.train_problems = sample_problems(
            hp.n_problems, hp.min_terms, hp.max_terms, seed=hp.seed + 3
        )
        self.held_out = sample_problems(
            hp.n_held_out, hp.min_terms, hp.max_terms, seed=hp.seed + 999
        )

    def train_dataloader(self):
        return DataLoader(
            self.train_problems,
            batch_size=self.hparams.batch_size,
            shuffle=True,
            collate_fn=list,
            generator=torch.Generator().manual_seed(self.hparams.seed),
        )

    def val_dataloader(self):
        return DataLoader(self.held_out, batch_size=len(self.held_out), collate_fn=list)

    def test_dataloader(self):
        return self.val_dataloader()

    def predict_dataloader(self):
        return self.val_dataloader()


def load_policy_weights(policy: CausalLMPolicy, checkpoint: str) -> None:
    """Load ``policy.*`` weights from a Lightning checkpoint (``SFTModule`` / ``PolicyRLModule``)."""
    path = Path(checkpoint)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    state = torch.load(path, map_location="cpu", weights_only=False)
    state = state.get("state_dict", state)
    own = {k[len("policy.") :]: v for k, v in state.items() if k.startswith("policy.")}
    if not own:
        raise ValueError(f"{str(path)!r} holds no policy weights (keys 'policy.*')")
    policy.load_state_dict(own)


class PolicyRLModule(pl.LightningModule):
    """Policy-gradient post-training of a causal LM policy with per-token advantages.

    One training step = one rollout batch: ``group_size`` samples per problem, rewards,
    advantages (``group`` / ``numca`` / ``hista``; ``vine``: ``vine_k`` fresh policy
    continuations at every number milestone; ``critic``: a PPO value head on the last hidden
    state, regressed onto the rewards after each step at ``critic_lr``), then
    ``num_iterations`` optimiser steps of the ``loss_type`` surrogate. Validation/test: held-out accuracy (``val/accuracy``).
    The policy is the tiny Qwen2 LM (``hidden``, ``layers``, ``heads``) or ``model_id`` (a Hub
    id such as ``Qwen/Qwen2.5-0.5B``); ``sft_checkpoint`` loads SFT weights, else ``sft_steps``
    of teacher-forced warm start run at the start of ``fit``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> m = PolicyRLModule(advantage="numca", group_size=2, hidden=8, layers=1, heads=2)
    >>> m.hparams.loss_type, type(m.policy.model).__name__
    ('dapo', 'Qwen2ForCausalLM')
    """

    def __init__(
        self,
        advantage: str = "group",
        loss_type: str = "dapo",
        group_size: int = 8,
        num_iterations: int = 2,
        lr: float = 1e-4,
        max_grad_norm: float | None = 1.0,
        eps_low: float = 0.2,
        eps_high: float = 0.28,
        lam: float = 1.0,
        temperature: float = 1.0,
        max_new: int = 24,
        eval_samples: int = 4,
        hidden: int = 96,
        layers: int = 2,
        heads: int = 4,
        model_id: str | None = None,
        sft_steps: int = 0,
        sft_checkpoint: str | None = None,
        hista_alpha: float = 0.7,
        hista_min_interval: int = 2,
        hista_min_distance: float = 0.05,
        hista_k: int = 16,
        vine_k: int = 4,
        critic_lr: float = 3e-3,
        seed: int = 0,
        policy: CausalLMPolicy | None = None,
    ):
        super().__init__()
        if advantage not in RL_ADVANTAGES:
            raise ValueError(
                f"unknown advantage estimator {advantage!r}; use one of {RL_ADVANTAGES}"
            )
        if vine_k < 1 or critic_lr <= 0:
            raise ValueError(f"need vine_k >= 1 and critic_lr > 0, got {vine_k}, {critic_lr}")
        if loss_type not in LOSSES:
            raise ValueError(f"unknown loss type {loss_type!r}; use one of {LOSSES}")
        if group_size < 2:
            raise ValueError(f"group size must be >= 2, got {group_size}")
        if num_iterations < 1:
            raise ValueError(f"num_iterations must be >= 1, got {num_iterations}")
        if lr <= 0 or (max_grad_norm is not None and max_grad_norm <= 0):
            raise ValueError(f"lr and max_grad_norm must be > 0, got {lr}, {max_grad_norm}")
        self.save_hyperparameters(ignore=["policy"])
        if policy is None:
            torch.manual_seed(seed)
            policy = (
                CausalLMPolicy.from_pretrained(model_id)
                if model_id
                else CausalLMPolicy(hidden=hidden, layers=layers, heads=heads)
            )
        self.policy = policy
        self.table = NumcaTable()
        self.hista = HistaEstimator(
            alpha=hista_alpha,
            mean_window=1,
            min_interval=hista_min_interval,
            min_distance=hista_min_distance,
            k=hista_k,
        )
        if advantage == "critic":  # PPO critic: a value head on the policy's last hidden state
            self.value_head = torch.nn.Sequential(
                torch.nn.Linear(policy.hidden_size, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1)
            )
            self._value_opt: torch.optim.Optimizer | None = None
        self.automatic_optimization = False
        self.gen = torch.Generator().manual_seed(seed)
        self.step_rewards: list[float] = []
        self.step_seconds: list[float] = []  # process CPU seconds of each rollout step
        self.adv_seconds: list[float] = []  # of which: advantages (embedding, k-NN, tables)
        self._warm = False

    def on_fit_start(self) -> None:
        hp = self.hparams
        if self._warm:
            return
        self._warm = True
        if hp.sft_checkpoint:
            load_policy_weights(self.policy, hp.sft_checkpoint)
        elif hp.sft_steps > 0:
            sft_warm_start(
                self.policy,
                sample_problems(2000, seed=hp.seed + 7),
                NoisyTeacher(),
                hp.sft_steps,
                seed=hp.seed,
            )

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr)

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        return batch  # a list of Problem records; rollouts are tensorised on the device later

    def _logp(self, ids, starts, lengths, hidden: bool = False):
        """Per-token log-probs (B, T-1) and response mask; with ``hidden`` also the last-layer
        hidden states (B, T, H) of the same forward pass (what Hista and the critic read)."""
        out = self.policy.model(input_ids=ids, output_hidden_states=hidden)
        logits = out.logits[:, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        pos = torch.arange(lp.shape[1], device=lp.device)[None]
        mask = (pos >= starts[:, None] - 1) & (pos < lengths[:, None] - 1)
        if hidden:
            return lp, mask.float(), out.hidden_states[-1].float()
        return lp, mask.float()

    def _value(self, h: torch.Tensor) -> torch.Tensor:
        """Critic values in [0, 1] of (N, H) hidden states -> (N,)."""
        return torch.sigmoid(self.value_head(h.to(self.device))).squeeze(-1)

    def _provider_advantages(self, p, outs, rs, offs, p_ids, hid_rows, critic_data):
        """``vine`` / ``critic`` advantages through ``hista.advantage_provider``."""
        from .advantage_provider import CriticAdvantages, RolloutGroup, VineAdvantages

        hp, pol = self.hparams, self.policy
        if hp.advantage == "vine":

            def sampler(pid, prefix, k):  # k fresh policy continuations of the prefix
                conts = pol.generate(p.prompt + prefix, k, hp.max_new, hp.temperature, self.gen)
                return [reward(p, prefix + c) for c in conts]

            prov = VineAdvantages(sampler, hp.vine_k, merge_threshold=2, lam=hp.lam)
            return prov(RolloutGroup(p.prompt, outs, rs, offs))
        hidden = hid_rows  # from the log-prob forward pass of this step
        start = len(p_ids)
        for h, r in zip(hidden, rs, strict=True):  # the critic's regression data (s_t, R)
            critic_data.append((h[start - 1 : -1], float(r)))
        group = RolloutGroup(p.prompt, outs, rs, offs, hidden, [start] * len(outs))
        return CriticAdvantages(self._value, lam=hp.lam)(group)

    def _fit_critic(self, critic_data) -> torch.Tensor:
        """``num_iterations`` MSE steps of the value head onto the rewards (after use)."""
        if self._value_opt is None:
            self._value_opt = torch.optim.Adam(
                self.value_head.parameters(), lr=self.hparams.critic_lr
            )
        x = torch.cat([h for h, _ in critic_data]).to(self.device)  # (N, H)
        y = torch.cat([torch.full((h.shape[0],), r) for h, r in critic_data]).to(self.device)
        for _ in range(self.hparams.num_iterations):
            mse = torch.nn.functional.mse_loss(self._value(x), y)
            self._value_opt.zero_grad()
            mse.backward()
            self._value_opt.step()
        return mse.detach()

    def _offsets(self, response: str) -> list[tuple[int, int]]:
        return token_offsets(self.policy.tokenizer, response) or [(0, 0)]

    def training_step(self, batch: list[Problem], batch_idx):
        t0 = time.process_time()
        hp, pol = self.hparams, self.policy
        pol.eval()
        groups = pol.generate_many(
            [p.prompt for p in batch], hp.group_size, hp.max_new, hp.temperature, self.gen
        )
        seqs, starts, all_r, info = [], [], [], []
        for p, outs in zip(batch, groups, strict=True):
            rs = [reward(p, o) for o in outs]
            all_r.extend(rs)
            p_ids = pol.encode(p.prompt)
            r_ids = [pol.encode(o) or [pol.eos_id] for o in outs]
            info.append((p, outs, rs, p_ids, r_ids, [self._offsets(o) for o in outs]))
            seqs.extend(p_ids + r for r in r_ids)
            starts.extend([len(p_ids)] * len(outs))
        ids, lengths = _pad(seqs, pol.pad_id)
        ids, lengths = ids.to(self.device), lengths.to(self.device)
        starts_t = torch.tensor(starts, device=self.device)
        # one no-grad forward: old log-probs and, for Hista / the critic, the hidden states
        # (the paper reuses the log-prob pass; no extra forward)
        need_hidden = hp.advantage in ("hista", "critic")
        with torch.no_grad():
            fwd = self._logp(ids, starts_t, lengths, hidden=need_hidden)
        old, mask = fwd[0], fwd[1]
        t_adv = time.process_time()
        embs_all = None
        if hp.advantage == "hista":
            ln = lengths.tolist()
            embs_all = self.hista.embed_batch(fwd[2].cpu(), starts, ln)
        advs, critic_data, row = [], [], 0
        for p, outs, rs, p_ids, r_ids, offs in info:
            g = len(outs)
            lens = [len(r) for r in r_ids]
            if hp.advantage in ("vine", "critic"):
                hid_rows = None
                if need_hidden:
                    hid_rows = [fwd[2][row + k, : len(p_ids) + lens[k]] for k in range(g)]
                advs.extend(
                    self._provider_advantages(p, outs, rs, offs, p_ids, hid_rows, critic_data)
                )
            else:
                embs = None if embs_all is None else embs_all[row : row + g]
                advs.extend(
                    token_advantages(
                        hp.advantage,
                        p.prompt,
                        outs,
                        rs,
                        lens,
                        self.table,
                        embs,
                        self.hista,
                        hp.lam,
                        offsets=offs,
                    )
                )
            row += g
        for p, outs, rs, *_ in info:  # the table learns after the step (no self-leak)
            for o, r in zip(outs, rs, strict=True):
                self.table.update(p.prompt, [n for n, _ in extract_numbers(o)], r)
        self.adv_seconds.append(time.process_time() - t_adv)
        pol.train()
        adv = torch.zeros(ids.shape[0], ids.shape[1] - 1)
        for k, a in enumerate(advs):
            s = starts[k] - 1
            adv[k, s : s + len(a)] = a[: adv.shape[1] - s]
        adv = adv.to(self.device)
        opt = self.optimizers()
        for _ in range(hp.num_iterations):
            lp, _ = self._logp(ids, starts_t, lengths)
            loss = policy_loss(lp, old, adv, mask, hp.loss_type, hp.eps_low, hp.eps_high)
            opt.zero_grad()
            self.manual_backward(loss)
            if hp.max_grad_norm is not None:  # TRL's default max_grad_norm = 1.0
                self.clip_gradients(
                    opt, gradient_clip_val=hp.max_grad_norm, gradient_clip_algorithm="norm"
                )
            opt.step()
        pol.eval()
        if hp.advantage == "critic":
            self.log("train/value_mse", self._fit_critic(critic_data), batch_size=len(batch))
        self.step_rewards.append(float(np.mean(all_r)))
        self.step_seconds.append(time.process_time() - t0)
        self.log("train/reward", self.step_rewards[-1], batch_size=len(batch))
        self.log("train/loss", loss.detach(), batch_size=len(batch))

    @torch.no_grad()
    def _accuracy(self, batch: list[Problem]) -> float:
        gen = torch.Generator().manual_seed(self.hparams.seed)
        outs = self.policy.generate_many(
            [p.prompt for p in batch], self.hparams.eval_samples, self.hparams.max_new, 1.0, gen
        )
        return float(
            np.mean([reward(p, o) for p, os_ in zip(batch, outs, strict=True) for o in os_])
        )

    def validation_step(self, batch, batch_idx):
        self.log("val/accuracy", self._accuracy(batch), batch_size=len(batch))

    def test_step(self, batch, batch_idx):
        self.log("test/accuracy", self._accuracy(batch), batch_size=len(batch))

    def predict_step(self, batch, batch_idx):
        gen = torch.Generator().manual_seed(self.hparams.seed)
        outs = self.policy.generate_many(
            [p.prompt for p in batch], 1, self.hparams.max_new, 1.0, gen
        )
        return [(p.prompt, o[0], reward(p, o[0])) for p, o in zip(batch, outs, strict=True)]


def _pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return ids, torch.tensor([len(s) for s in seqs])


@torch.no_grad()
def held_out_accuracy(
    policy: CausalLMPolicy, problems: list[Problem], samples: int = 4, seed: int = 0
) -> float:
    """Mean reward of ``samples`` sampled responses per held-out problem."""
    gen = torch.Generator().manual_seed(seed)
    outs = policy.generate_many([p.prompt for p in problems], samples, generator=gen)
    return float(
        np.mean([reward(p, o) for p, os_ in zip(problems, outs, strict=True) for o in os_])
    )


def train_rl(
    module: PolicyRLModule, steps: int, data: ArithProblemsDataModule | None = None
) -> PolicyRLModule:
    """Run ``steps`` rollout steps (each ``num_iterations`` optimiser steps) on CPU."""
    data = data or ArithProblemsDataModule(seed=module.hparams.seed)
    trainer = pl.Trainer(
        max_steps=steps * module.hparams.num_iterations,
        max_epochs=-1,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
    )
    trainer.fit(module, datamodule=data)
    return module
