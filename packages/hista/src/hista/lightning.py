"""Lightning parts of hista: the SFT warm start, the RL rows and the PPO critic, with their data.

Paper: "Hista and Numca: Estimate State Value Effectively for LLM Reinforcement Learning",
Chen et al., ICML 2026 (arXiv 2605.29782). Every training in the package goes through these
modules (``hista fit --config configs/<row>.yaml``, and the ``reproduce`` sections through
:func:`icml26_shared.trainer.quiet_trainer`):

1. :class:`SFTModule` + :class:`TeacherTracesDataModule`: teacher-forced cross-entropy on
   noisy-teacher ArithChain traces (:func:`~hista.policy.sft_loss`); :func:`sft_warm_start`
   trains a given policy in place on a seeded stream of trace batches, :func:`arith_sft_policy`
   is the (cached) SFT policy of the ArithChain testbed.
2. :class:`PolicyRLModule` + :class:`ArithProblemsDataModule`: one training step = one rollout
   batch, per-token advantages (:func:`~hista.advantage_provider.token_advantages`: group mean,
   Numca, Hista; VinePPO and a PPO critic through the providers), ``num_iterations`` updates of
   the ``loss_type`` surrogate (:func:`~hista.rl_training.policy_loss`); :func:`train_rl`.
3. :class:`CriticModule` + :class:`ArithCriticDataModule`: SVEB's "ppo-1" value head on the frozen
   policy's hidden states, regressed onto final rewards (:func:`~hista.critic.rollout_features`);
   :func:`train_critic`.
"""

from __future__ import annotations

import copy
import functools
import time

import lightning.pytorch as pl
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from .advantage_provider import NUMCA_UPDATES, token_advantages, token_offsets
from .arith_chain import NoisyTeacher, Problem, reward, sample_problems
from .critic import rollout_features
from .hista_knn import HistaEstimator
from .numca import NumcaTable
from .policy import ARITH_POLICY, CausalLMPolicy, sft_loss
from .rl_training import LOSSES, RL_ADVANTAGES, load_policy_weights, pad_ids, policy_loss

# ---------------------------------------------------------------- SFT warm start


class TeacherTracesDataModule(pl.LightningDataModule):
    """Noisy-teacher ArithChain traces for the SFT warm start (fresh samples every batch).

    Batches are ``(prompts, responses)`` lists; ``steps_per_epoch`` batches make one epoch.

    Examples
    --------
    >>> dm = TeacherTracesDataModule(n_problems=8, batch_size=4, steps_per_epoch=2)
    >>> dm.setup("fit"); prompts, responses = next(iter(dm.train_dataloader()))
    >>> len(prompts), responses[0].endswith(";")
    (4, True)
    """

    def __init__(
        self,
        n_problems: int = 2000,
        batch_size: int = 64,
        steps_per_epoch: int = 100,
        val_batches: int = 4,
        p_base: float = 0.05,
        p_carry: float = 0.25,
        seed: int = 0,
    ):
        super().__init__()
        if min(n_problems, batch_size, steps_per_epoch, val_batches) < 1:
            raise ValueError("n_problems, batch_size, steps_per_epoch and val_batches must be >= 1")
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        self.teacher = NoisyTeacher(hp.p_base, hp.p_carry)
        self.problems = sample_problems(hp.n_problems, seed=hp.seed + 7)
        self.val_problems = sample_problems(hp.batch_size * hp.val_batches, seed=hp.seed + 77)

    def _batches(self, problems, n_batches, seed):
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(n_batches):
            idx = rng.integers(0, len(problems), size=self.hparams.batch_size)
            ps = [problems[int(i)] for i in idx]
            out.append(([p.prompt for p in ps], [self.teacher.sample(p, rng) for p in ps]))
        return out

    def train_dataloader(self):
        trainer = getattr(self, "trainer", None)
        epoch = trainer.current_epoch if trainer is not None else 0
        hp = self.hparams
        return DataLoader(
            self._batches(self.problems, hp.steps_per_epoch, hp.seed + 1000 * epoch),
            batch_size=None,
        )

    def val_dataloader(self):
        hp = self.hparams
        return DataLoader(
            self._batches(self.val_problems, hp.val_batches, hp.seed + 1), batch_size=None
        )

    def test_dataloader(self):
        return self.val_dataloader()

    def predict_dataloader(self):
        return self.val_dataloader()


class SFTModule(pl.LightningModule):
    """The SFT warm start as a LightningModule (teacher-forced cross-entropy on traces).

    Trains the tiny policy (``hidden``, ``layers``, ``heads``), ``model_id`` (a Hub id) or a
    given ``policy`` in place. Its checkpoint's ``policy.*`` weights seed
    ``PolicyRLModule(sft_checkpoint=...)``.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> m = SFTModule(hidden=16, layers=1, heads=2)
    >>> float(m.training_step((["3+4="], ["7;"]), 0).detach()) > 0
    True
    """

    def __init__(
        self,
        hidden: int = 96,
        layers: int = 2,
        heads: int = 4,
        lr: float = 3e-3,
        model_id: str | None = None,
        policy: CausalLMPolicy | None = None,
    ):
        super().__init__()
        self.save_hyperparameters(ignore=["policy"])
        if policy is None:
            policy = (
                CausalLMPolicy.from_pretrained(model_id)
                if model_id
                else CausalLMPolicy(hidden=hidden, layers=layers, heads=heads)
            )
        self.policy = policy
        self.train_losses: list[float] = []

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits of the policy, (B, T) -> (B, T, V)."""
        return self.policy(ids)

    def training_step(self, batch, batch_idx):
        loss = sft_loss(self.policy, *batch)
        self.train_losses.append(float(loss.detach()))
        self.log("train/loss", loss, batch_size=len(batch[0]))
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val/loss", sft_loss(self.policy, *batch), batch_size=len(batch[0]))

    def test_step(self, batch, batch_idx):
        self.log("test/loss", sft_loss(self.policy, *batch), batch_size=len(batch[0]))

    @torch.no_grad()
    def predict_step(self, batch, batch_idx):
        return [self.policy.generate(p, 1)[0] for p in batch[0]]

    def configure_optimizers(self):
        return torch.optim.Adam(self.policy.parameters(), lr=self.hparams.lr)


class TeacherTraceBatches(IterableDataset):
    """``steps`` batches ``(prompts, responses)`` of noisy-teacher traces, drawn lazily.

    Problem indices and teacher samples come from one ``numpy`` generator seeded with ``seed``,
    in the order of the package's SFT warm start.

    >>> b = TeacherTraceBatches(sample_problems(4), NoisyTeacher(), batch_size=2, steps=3)
    >>> [len(p) for p, _ in b]
    [2, 2, 2]
    """

    def __init__(
        self, problems: list[Problem], teacher: NoisyTeacher, batch_size: int, steps: int,
        seed: int = 0,
    ) -> None:  # fmt: skip
        self.problems, self.teacher = problems, teacher
        self.batch_size, self.steps, self.seed = batch_size, steps, seed

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        for _ in range(self.steps):
            idx = rng.integers(0, len(self.problems), size=self.batch_size)
            prompts = [self.problems[int(i)].prompt for i in idx]
            responses = [self.teacher.sample(self.problems[int(i)], rng) for i in idx]
            yield prompts, responses


def sft_warm_start(
    policy: CausalLMPolicy,
    problems: list[Problem],
    teacher: NoisyTeacher,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Train ``policy`` in place for ``steps`` Adam steps of teacher-forced cross-entropy on
    noisy-teacher traces (:class:`SFTModule`, quiet Trainer); returns the training losses.

    The batches (:class:`TeacherTraceBatches`) are drawn from a generator seeded with ``seed``;
    the policy is left in eval mode.
    """
    from icml26_shared.trainer import quiet_trainer

    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    module = SFTModule(lr=lr, policy=policy)
    if steps > 0:
        batches = TeacherTraceBatches(problems, teacher, batch_size, steps, seed)
        # a private generator for the loader's own seed draw: torch's global state is untouched
        loader = DataLoader(batches, batch_size=None, generator=torch.Generator())
        trainer = quiet_trainer(max_epochs=1, max_steps=steps, num_sanity_val_steps=0)
        trainer.fit(module, train_dataloaders=loader)
    policy.eval()
    return module.train_losses


@functools.cache
def _sft_policy(
    sft_steps: int, seed: int, hidden: int, layers: int, heads: int, p_base: float
) -> CausalLMPolicy:
    torch.manual_seed(seed)
    policy = CausalLMPolicy(hidden=hidden, layers=layers, heads=heads)
    teacher = NoisyTeacher(p_base=p_base)
    sft_warm_start(policy, sample_problems(2000, seed=seed + 7), teacher, sft_steps, seed=seed)
    return policy


def arith_sft_policy(
    sft_steps: int, seed: int = 0, p_base: float = NoisyTeacher.p_base, **sizes: int
) -> CausalLMPolicy:
    """A fresh copy of the ArithChain policy (:data:`~hista.policy.ARITH_POLICY` sizes unless
    given) SFT-warm-started for ``sft_steps`` steps with ``seed`` on the traces of a
    :class:`~hista.arith_chain.NoisyTeacher` with base error rate ``p_base`` (a higher rate
    gives more traces that continue from a wrong partial sum, from which the policy learns to
    carry on from what it wrote: then its own mistakes lower its states' values).

    Built once per process and argument set (the ``reproduce`` sections share it); each call
    returns a deep copy, so the caller may train it.
    """
    s = {**ARITH_POLICY, **sizes}
    return copy.deepcopy(
        _sft_policy(sft_steps, seed, s["hidden"], s["layers"], s["heads"], float(p_base))
    )


# ---------------------------------------------------------------- RL rows


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


class PolicyRLModule(pl.LightningModule):
    """Policy-gradient post-training of a causal LM policy with per-token advantages.

    One training step = one rollout batch: ``group_size`` samples per problem, rewards,
    advantages (``group`` / ``numca`` / ``hista``; ``vine``: ``vine_k`` fresh policy
    continuations at every number milestone; ``critic``: a PPO value head on the last hidden
    state, regressed onto the rewards after each step at ``critic_lr``), then
    ``num_iterations`` optimiser steps of the ``loss_type`` surrogate. Validation/test: held-out accuracy (``val/accuracy``).
    Numca's persistent table takes each group ``numca_update`` = ``"before"`` its advantages
    (the authors' trainer), ``"loo"`` (before, each rollout reading it without its own visit)
    or ``"after"``; milestones at a number's start (``numca_at``, the reference); unseen states
    worth the group mean (``numca_unseen="fallback"``).
    The policy is the tiny Qwen2 LM (``hidden``, ``layers``, ``heads``) or ``model_id`` (a Hub
    id such as ``Qwen/Qwen2.5-0.5B``); ``sft_checkpoint`` loads SFT weights, else ``sft_steps``
    of teacher-forced warm start run at the start of ``fit`` (one step under ``fast_dev_run``).

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
        numca_update: str = "before",
        numca_at: str = "start",
        numca_unseen: str = "fallback",
        seed: int = 0,
        policy: CausalLMPolicy | None = None,
    ):
        super().__init__()
        if numca_update not in NUMCA_UPDATES:
            raise ValueError(f"unknown numca_update {numca_update!r}; use one of {NUMCA_UPDATES}")
        if numca_at not in ("start", "end") or numca_unseen not in ("table", "fallback", "parent"):
            raise ValueError(
                f"need numca_at in (start, end) and numca_unseen in (table, fallback, parent), "
                f"got {numca_at!r}, {numca_unseen!r}"
            )
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
            smoke = self._trainer is not None and bool(self.trainer.fast_dev_run)
            sft_warm_start(
                self.policy,
                sample_problems(2000, seed=hp.seed + 7),
                NoisyTeacher(),
                1 if smoke else hp.sft_steps,  # fast_dev_run: one warm-start step
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
        ids, lengths = pad_ids(seqs, pol.pad_id)
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
                        numca_update=hp.numca_update,  # the group enters the table before /
                        numca_at=hp.numca_at,  # after its advantages, or before with
                        numca_unseen=hp.numca_unseen,  # leave-one-out reads
                    )
                )
            row += g
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


def train_rl(
    module: PolicyRLModule, steps: int, data: ArithProblemsDataModule | None = None
) -> PolicyRLModule:
    """Run ``steps`` rollout steps (each ``num_iterations`` optimiser steps) on CPU."""
    from icml26_shared.trainer import quiet_trainer

    data = data or ArithProblemsDataModule(seed=module.hparams.seed)
    trainer = quiet_trainer(
        max_steps=steps * module.hparams.num_iterations, max_epochs=-1, limit_val_batches=0
    )
    trainer.fit(module, datamodule=data)
    return module


# ---------------------------------------------------------------- the PPO critic


class CriticModule(pl.LightningModule):
    """Value head ``V(h) = sigmoid(MLP(h))`` trained by MSE on (hidden state, reward) pairs.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> CriticModule(hidden_size=8)(torch.zeros(3, 8)).shape
    torch.Size([3])
    """

    def __init__(self, hidden_size: int = 96, width: int = 64, lr: float = 3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(hidden_size, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(features)).squeeze(-1)

    def _loss(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self(x), y)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train/mse", loss, prog_bar=False)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val/mse", self._loss(batch))

    def test_step(self, batch, batch_idx):
        self.log("test/mse", self._loss(batch))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class ArithCriticDataModule(pl.LightningDataModule):
    """Labelled rollouts of an SFT-warm-started ArithChain policy (80/20 train/val split).

    Under ``fast_dev_run`` (a smoke test) the warm start is one step and 5 problems are rolled
    out.

    Examples
    --------
    >>> dm = ArithCriticDataModule(n_problems=4, group_size=2, sft_steps=2, hidden=8, heads=2)
    >>> dm.setup("fit"); x, y = next(iter(dm.train_dataloader()))
    >>> x.shape[1], bool(((y == 0) | (y == 1)).all())
    (8, True)
    """

    def __init__(
        self,
        n_problems: int = 200,
        group_size: int = 8,
        sft_steps: int = 400,
        hidden: int = 96,
        layers: int = 2,
        heads: int = 4,
        batch_size: int = 256,
        seed: int = 0,
    ):
        super().__init__()
        if group_size < 1 or n_problems < 2:
            raise ValueError(
                f"need n_problems >= 2 and group_size >= 1, got {n_problems}, {group_size}"
            )
        self.save_hyperparameters()
        self.policy: CausalLMPolicy | None = None
        self.policy_state: dict | None = None

    def setup(self, stage: str | None = None) -> None:
        if getattr(self, "_train", None) is not None:
            return
        hp = self.hparams
        trainer = getattr(self, "trainer", None)
        smoke = trainer is not None and bool(trainer.fast_dev_run)  # one step, 5 problems
        torch.manual_seed(hp.seed)
        policy = self.policy or CausalLMPolicy(hidden=hp.hidden, layers=hp.layers, heads=hp.heads)
        if self.policy is None:
            sft_warm_start(
                policy,
                sample_problems(2000, seed=hp.seed + 7),
                NoisyTeacher(),
                min(hp.sft_steps, 1) if smoke else hp.sft_steps,
                seed=hp.seed,
            )
            self.policy = policy
        problems = sample_problems(
            min(hp.n_problems, 5) if smoke else hp.n_problems, seed=hp.seed + 11
        )
        gen = torch.Generator().manual_seed(hp.seed)
        cut = max(1, int(0.8 * len(problems)))
        xt, yt, _ = rollout_features(policy, problems[:cut], hp.group_size, gen)
        xv, yv, _ = rollout_features(policy, problems[cut:], hp.group_size, gen)
        self._train, self._val = TensorDataset(xt, yt), TensorDataset(xv, yv)

    def train_dataloader(self):
        gen = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(self._train, self.hparams.batch_size, shuffle=True, generator=gen)

    def val_dataloader(self):
        return DataLoader(self._val, self.hparams.batch_size)

    def test_dataloader(self):
        return self.val_dataloader()

    def predict_dataloader(self):
        return self.val_dataloader()


def train_critic(
    features: torch.Tensor, targets: torch.Tensor, epochs: int = 20, seed: int = 0
) -> CriticModule:
    """Fit a ``CriticModule`` on precomputed features with a quiet CPU Lightning trainer."""
    from icml26_shared.trainer import quiet_trainer

    pl.seed_everything(seed, verbose=False)
    module = CriticModule(hidden_size=features.shape[1])
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(TensorDataset(features, targets), 256, shuffle=True, generator=gen)
    trainer = quiet_trainer(max_epochs=epochs)
    trainer.fit(module, loader)
    return module.eval()
