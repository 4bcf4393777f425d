"""The LightningModules and DataModules of sigreg: every training run goes through these.

* the paper's non-stationary CIFAR protocol (labels re-permuted across samples every phase;
  SIGReg on the trunk output that feeds a linear classifier): the data with its phase
  schedule -> :class:`DigitsShuffleDataModule` (digits offline, CIFAR-10 as the real path;
  loaders and phase labels in :mod:`sigreg.shuffled_labels`), the classifier with every
  plasticity baseline and both SIGReg presets -> :class:`ShuffledLabelClassifier`
* PQN (vectorised epsilon-greedy rollouts, Q(lambda) targets, LayerNorm, RAdam; SIGReg on
  the LayerNorm'd trunk output before the Q-head's ReLU) -> :class:`PQNModule` (network
  and targets in :mod:`sigreg.pqn_agent`)
* PPO (shared trunk, GAE, clipped surrogate; SIGReg on the trunk's hidden state)
  -> :class:`PPOModule` (actor-critic and GAE in :mod:`sigreg.ppo_agent`)
* the on-policy agents collect their own rollouts in ``training_step``; the data module only
  yields iteration indices, so ``Trainer.fit`` drives ``iterations`` rounds of collection and
  learning -> :class:`RolloutDataModule`

The training loss of every module is ``L_task + lambda * SIGReg(phi)`` (``additive``, the
released code) or ``(1 - lambda) L_task + lambda * SIGReg(phi)`` (``convex``, the paper's
text) -> :func:`sigreg.sigreg_loss.combine_losses`.
"""

from __future__ import annotations

import time
from typing import Literal

import gymnasium as gym
import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Categorical
from torch.utils.data import DataLoader, Dataset, TensorDataset

from sigreg.encoder import Trunk
from sigreg.nonstationary_env import build_env
from sigreg.plasticity_baselines import L2Init, redo_reset, shrink_perturb
from sigreg.plasticity_metrics import ActivationRecorder, representation_report
from sigreg.ppo_agent import ActorCritic, gae
from sigreg.pqn_agent import QNetwork, q_lambda_returns
from sigreg.shuffled_labels import METHODS, load_cifar10_tensors, load_digits_tensors, phase_labels
from sigreg.sigreg_loss import SIGReg, combine_losses

OPTIMIZERS = ("radam", "adam", "kron")


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    """The agent's optimiser by name: ``radam``, ``adam`` or ``kron``.

    ``kron`` is PSGD-Kron (Li's preconditioned SGD with Kronecker-factored preconditioners,
    the second-order comparator of the paper's optimiser study) as implemented by the
    ``kron-torch`` package (``pip install "sigreg[bench]"``), with its defaults
    (momentum 0.9, preconditioner update probability annealed from 1 to 0.03).

    Examples:
        >>> opt = make_optimizer("adam", [torch.nn.Parameter(torch.zeros(2))], 1e-3)
        >>> type(opt).__name__
        'Adam'
    """
    if name == "radam":
        return torch.optim.RAdam(params, lr=lr)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "kron":
        try:
            from kron_torch import Kron
        except ImportError as err:
            raise ValueError(
                "optimizer 'kron' needs the kron-torch package: pip install 'sigreg[bench]'"
            ) from err
        return Kron(params, lr=lr)
    raise ValueError(f"unknown optimizer {name!r}; choose one of {list(OPTIMIZERS)}")


class DigitsShuffleDataModule(pl.LightningDataModule):
    """Digits (or CIFAR-10) with labels re-permuted every ``epochs_per_phase`` epochs.

    ``dataset="digits"`` (offline, default) or ``dataset="cifar10"`` (the paper's real
    path: the first ``n_samples`` (default 10,000) CIFAR-10 training images, flattened to
    3072 inputs, so the classifier needs ``in_dim: 3072``; see
    ``configs/cifar10-shuffle-sigreg.yaml``).

    The train loader is rebuilt every epoch (``reload_dataloaders_every_n_epochs=1``) and
    serves the labels of phase ``current_epoch // epochs_per_phase``; the val loader
    scores the *current* phase's labels on the same images (train accuracy, as in the
    paper: the task is memorisation). ``start_phase`` > 0 starts at that phase's labels
    (the fresh-init reference: a new network trained on one shuffled phase only).

    Examples:
        >>> dm = DigitsShuffleDataModule(phases=2, epochs_per_phase=1, batch_size=64, n_samples=128)
        >>> dm.setup("fit"); x, y = next(iter(dm.train_dataloader())); x.shape
        torch.Size([64, 64])
    """

    def __init__(
        self,
        phases: int = 10,
        epochs_per_phase: int = 30,
        batch_size: int = 128,
        n_samples: int | None = None,
        seed: int = 0,
        dataset: Literal["digits", "cifar10"] = "digits",
        start_phase: int = 0,
    ) -> None:
        super().__init__()
        if phases < 1 or epochs_per_phase < 1 or batch_size < 1:
            raise ValueError("phases, epochs_per_phase and batch_size must be >= 1")
        if not 0 <= start_phase < phases:
            raise ValueError(f"start_phase must be in [0, {phases - 1}], got {start_phase}")
        if dataset not in ("digits", "cifar10"):
            raise ValueError(f"unknown dataset {dataset!r}; choose 'digits' or 'cifar10'")
        self.dataset = dataset
        self.phases = phases
        self.epochs_per_phase = epochs_per_phase
        self.batch_size = batch_size
        self.n_samples = n_samples
        self.seed = seed
        self.start_phase = start_phase
        self.x = self.labels = None

    def setup(self, stage: str | None = None) -> None:
        if self.x is not None:
            return
        if self.dataset == "cifar10":
            x, y = load_cifar10_tensors(10_000 if self.n_samples is None else self.n_samples)
        else:
            x, y = load_digits_tensors()
        if self.n_samples is not None:
            x, y = x[: self.n_samples], y[: self.n_samples]
        self.x = x
        self.labels = phase_labels(y, self.phases, self.seed)

    def phase(self) -> int:
        epoch = self.trainer.current_epoch if self.trainer is not None else 0
        return min(self.start_phase + epoch // self.epochs_per_phase, self.phases - 1)

    def train_dataloader(self) -> DataLoader:
        g = torch.Generator().manual_seed(self.seed + 7919 * self.phase())
        ds = TensorDataset(self.x, self.labels[self.phase()])
        return DataLoader(ds, batch_size=self.batch_size, shuffle=True, generator=g)

    def val_dataloader(self) -> DataLoader:
        ds = TensorDataset(self.x, self.labels[self.phase()])
        return DataLoader(ds, batch_size=1024)


class ShuffledLabelClassifier(pl.LightningModule):
    """MLP classifier on the shuffled-label task with one plasticity method.

    Args:
        in_dim, n_classes, hidden, depth: The MLP (paper's CPU-scale: 3 x 256 ReLU).
        method: One of :data:`METHODS`.
        sigreg_lambda: SIGReg weight (``sigreg*`` methods).
        lambda_convention: ``additive`` (code) or ``convex`` (paper text).
        lr: Adam learning rate.
        epochs_per_phase: For the phase-boundary baselines (ReDo, Shrink & Perturb).
        redo_tau, sp_shrink, sp_perturb, l2_coef: Baseline settings.
        sigreg_layer: Where ``phi`` is read: ``post-relu`` (the paper's CIFAR script: the
            trunk output after its final ReLU) or ``pre-relu`` (before the final ReLU).

    Examples:
        >>> m = ShuffledLabelClassifier(64, 10, hidden=16, depth=2, method="sigreg")
        >>> m(torch.randn(5, 64)).shape
        torch.Size([5, 10])
    """

    def __init__(
        self,
        in_dim: int = 64,
        n_classes: int = 10,
        hidden: int = 256,
        depth: int = 3,
        method: str = "none",
        sigreg_lambda: float = 1.0,
        lambda_convention: Literal["additive", "convex"] = "additive",
        sigreg_slices: int | None = None,
        lr: float = 1e-3,
        epochs_per_phase: int = 30,
        redo_tau: float = 0.025,
        sp_shrink: float = 0.4,
        sp_perturb: float = 0.1,
        l2_coef: float = 1e-3,
        sigreg_layer: Literal["post-relu", "pre-relu"] = "post-relu",
    ) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
        if sigreg_lambda < 0:
            raise ValueError(f"sigreg_lambda must be >= 0, got {sigreg_lambda}")
        self.save_hyperparameters()
        self.trunk = Trunk(
            in_dim, hidden, depth, layer_norm=method == "layernorm", feature_point=sigreg_layer
        )
        self.head = nn.Linear(hidden, n_classes)
        self.reg: nn.Module | None = None
        if method == "sigreg":
            self.reg = SIGReg("isogaussian-drl", num_slices=sigreg_slices)
        elif method == "sigreg-lejepa":
            self.reg = SIGReg("lejepa", num_slices=sigreg_slices)
        elif method == "lightly-sigreg":
            from lightly.loss.lejepa_loss import SIGReg as LightlySIGReg

            self.reg = LightlySIGReg(
                **({} if sigreg_slices is None else {"num_vectors": sigreg_slices})
            )
        self.l2 = (
            L2Init(nn.ModuleList([self.trunk, self.head]), l2_coef) if method == "l2-init" else None
        )
        self.phase_end: list[dict] = []
        self.reg_time = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk.head_input(self.trunk(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        phi = self.trunk(x)
        logits = self.head(self.trunk.head_input(phi))
        loss = F.cross_entropy(logits, y)
        if self.reg is not None:
            t0 = time.perf_counter()
            reg = self.reg(phi)
            loss = combine_losses(
                loss, reg, self.hparams.sigreg_lambda, self.hparams.lambda_convention
            )
            self.reg_time += time.perf_counter() - t0
            self.log("train/sigreg", reg.detach(), prog_bar=False)
        if self.l2 is not None:
            loss = loss + self.l2(nn.ModuleList([self.trunk, self.head]))
        self.log("train/loss", loss.detach(), prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(-1) == y).float().mean()
        self.log("val/acc", acc, prog_bar=True)

    def on_train_epoch_start(self) -> None:
        epoch = self.current_epoch
        k = self.hparams.epochs_per_phase
        if epoch == 0 or epoch % k != 0:
            return
        if self.hparams.method == "shrink-perturb":
            shrink_perturb(
                nn.ModuleList([self.trunk, self.head]),
                self.hparams.sp_shrink,
                self.hparams.sp_perturb,
            )
        elif self.hparams.method == "redo":
            dm = self.trainer.datamodule
            with torch.no_grad(), ActivationRecorder(self.trunk, [nn.ReLU]) as rec:
                self.trunk(dm.x)
            redo_reset(
                self.trunk.linear_layers(),
                list(rec.outputs.values()),
                self.head,
                self.hparams.redo_tau,
            )

    @torch.no_grad()
    def diagnose(self, x: torch.Tensor, y: torch.Tensor | None = None) -> dict[str, float]:
        """Accuracy (if labels) and representation diagnostics of the trunk on ``x``.

        Every diagnostic is read at the same layer whatever ``sigreg_layer`` is: the
        classifier's input (the trunk output after its final ReLU), and dormancy over every
        ReLU of the trunk including that final one (applied in :meth:`Trunk.head_input` for
        ``pre-relu``), so rows regularised at different points stay comparable.
        """
        was = self.training
        self.eval()
        with ActivationRecorder(self.trunk, [nn.ReLU]) as rec:
            phi = self.trunk(x)
        acts = dict(rec.outputs)
        feats = self.trunk.head_input(phi)
        if self.trunk.feature_point == "pre-relu":
            acts["head_relu"] = feats
        out = representation_report(feats, acts)
        if y is not None:
            out["accuracy"] = float(
                (self.head(self.trunk.head_input(phi)).argmax(-1) == y).float().mean()
            )
        self.train(was)
        return out

    def on_train_epoch_end(self) -> None:
        k = self.hparams.epochs_per_phase
        if (self.current_epoch + 1) % k != 0:
            return
        dm = self.trainer.datamodule
        if dm is None or getattr(dm, "labels", None) is None:
            return
        phase = getattr(dm, "start_phase", 0) + self.current_epoch // k
        if phase >= dm.labels.shape[0]:
            return
        row = self.diagnose(dm.x.to(self.device), dm.labels[phase].to(self.device))
        row["phase"] = phase
        self.phase_end.append(row)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class PQNModule(pl.LightningModule):
    """PQN agent (manual optimisation; one ``training_step`` = one rollout + its updates).

    Args:
        env_id: Gymnasium id with a discrete action space (``CartPole-v1``, ``MinAtar/*``).
        num_envs, num_steps: Rollout size per iteration.
        total_timesteps: For the epsilon schedule (iterations = total / (envs * steps)).
        lr, gamma, q_lambda, num_epochs, num_minibatches, max_grad_norm: PQN settings.
        start_e, end_e, exploration_fraction: Epsilon schedule.
        hidden, depth, layer_norm: Q-network.
        encoder: ``mlp`` (flattened observation) or ``nature-cnn`` (Atari frame stacks, the
            paper's encoder; use ``hidden=512``).
        sigreg_lambda, sigreg_preset, lambda_convention: The regulariser (0: plain PQN).
        ns_period, ns_kinds: Non-stationarity (vector steps per phase, kinds).
        seed: Environment seed.
        optimizer: ``radam`` (PQN's and the paper's), ``adam``, or ``kron`` (PSGD-Kron, a
            Kronecker-factored preconditioned optimiser, from the ``kron-torch`` package,
            ``sigreg[bench]``; the paper's second-order comparator) -> :func:`make_optimizer`.

    Examples:
        >>> agent = PQNModule(num_envs=2, num_steps=4, hidden=8)
        >>> agent(torch.zeros(1, 4)).shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        env_id: str = "CartPole-v1",
        num_envs: int = 16,
        num_steps: int = 32,
        total_timesteps: int = 100_000,
        lr: float = 2.5e-4,
        gamma: float = 0.99,
        q_lambda: float = 0.65,
        num_epochs: int = 2,
        num_minibatches: int = 4,
        max_grad_norm: float = 10.0,
        start_e: float = 1.0,
        end_e: float = 0.05,
        exploration_fraction: float = 0.2,
        hidden: int = 128,
        depth: int = 2,
        layer_norm: bool = True,
        encoder: Literal["mlp", "nature-cnn"] = "mlp",
        sigreg_lambda: float = 0.0,
        sigreg_preset: str = "isogaussian-drl",
        lambda_convention: Literal["additive", "convex"] = "additive",
        ns_period: int | None = None,
        ns_kinds: tuple[str, ...] = ("permute", "sign"),
        seed: int = 0,
        optimizer: str = "radam",  # one of OPTIMIZERS; checked below (a one-line CLI error)
    ) -> None:
        super().__init__()
        if sigreg_lambda < 0:
            raise ValueError(f"sigreg_lambda must be >= 0, got {sigreg_lambda}")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {list(OPTIMIZERS)}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.env = build_env(env_id, num_envs, period=ns_period, kinds=ns_kinds, seed=seed)
        if not isinstance(self.env.single_action_space, gym.spaces.Discrete):
            raise ValueError(
                f"PQN needs a discrete action space; {env_id!r} has {self.env.single_action_space}"
            )
        self.obs_dim = self.env.obs_dim
        self.n_actions = int(self.env.single_action_space.n)
        self.q = QNetwork(
            self.obs_dim,
            self.n_actions,
            hidden,
            depth,
            layer_norm,
            encoder=encoder,
            obs_shape=self.env.raw_obs_shape,
        )
        self.reg = SIGReg(sigreg_preset) if sigreg_lambda > 0 else None
        self.rng = np.random.default_rng(seed)
        self._obs = None
        self.env_steps = 0
        self.reg_time = 0.0
        self.update_time = 0.0
        self.last_features: torch.Tensor | None = None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(obs)

    def epsilon(self) -> float:
        total = self.hparams.exploration_fraction * self.hparams.total_timesteps
        frac = min(self.env_steps / max(total, 1.0), 1.0)
        return self.hparams.start_e + frac * (self.hparams.end_e - self.hparams.start_e)

    @torch.no_grad()
    def collect(self) -> dict[str, torch.Tensor]:
        """One vectorised rollout with epsilon-greedy actions."""
        hp = self.hparams
        if self._obs is None:
            self._obs, _ = self.env.reset(seed=hp.seed)
        s, e = hp.num_steps, hp.num_envs
        obs = torch.zeros(s, e, self.obs_dim)
        actions = torch.zeros(s, e, dtype=torch.long)
        rewards = torch.zeros(s, e)
        dones = torch.zeros(s, e)
        next_values = torch.zeros(s, e)
        for t in range(s):
            o = torch.as_tensor(self._obs, dtype=torch.float32)
            obs[t] = o
            greedy = self.q(o.to(self.device)).argmax(-1).cpu().numpy()
            explore = self.rng.random(e) < self.epsilon()
            a = np.where(explore, self.rng.integers(0, self.n_actions, e), greedy)
            self._obs, r, term, trunc, _ = self.env.step(a)
            self.env_steps += e
            actions[t] = torch.as_tensor(a)
            rewards[t] = torch.as_tensor(r)
            dones[t] = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            # same-step autoreset: the returned obs after a done is a reset obs, and its value
            # is masked by (1 - done) in the targets, so it can stand in for s_{t+1}
            next_values[t] = (
                self.q(torch.as_tensor(self._obs, dtype=torch.float32).to(self.device))
                .max(-1)
                .values.cpu()
            )
        return {
            "obs": obs,
            "actions": actions,
            "rewards": rewards,
            "dones": dones,
            "next_values": next_values,
        }

    def training_step(self, batch, batch_idx):
        hp = self.hparams
        roll = self.collect()
        returns = q_lambda_returns(
            roll["rewards"], roll["dones"], roll["next_values"], hp.gamma, hp.q_lambda
        )
        obs = roll["obs"].reshape(-1, self.obs_dim).to(self.device)
        actions = roll["actions"].reshape(-1).to(self.device)
        returns = returns.reshape(-1).to(self.device)
        opt = self.optimizers()
        n = obs.shape[0]
        mb = max(n // hp.num_minibatches, 2)
        t_start = time.perf_counter()
        for _ in range(hp.num_epochs):
            perm = torch.randperm(n, device=self.device)
            for k in range(hp.num_minibatches):
                idx = perm[k * mb : (k + 1) * mb]
                phi = self.q.features(obs[idx])
                qsa = (
                    self.q.head(self.q.trunk.head_input(phi))
                    .gather(1, actions[idx, None])
                    .squeeze(1)
                )
                td = 0.5 * F.mse_loss(qsa, returns[idx])
                loss = td
                if self.reg is not None:
                    t0 = time.perf_counter()
                    reg = self.reg(phi)
                    loss = combine_losses(td, reg, hp.sigreg_lambda, hp.lambda_convention)
                    self.reg_time += time.perf_counter() - t0
                opt.zero_grad()
                self.manual_backward(loss)
                self.clip_gradients(
                    opt, gradient_clip_val=hp.max_grad_norm, gradient_clip_algorithm="norm"
                )
                opt.step()
        self.update_time += time.perf_counter() - t_start
        self.last_features = obs[-256:].detach()
        self.log("train/td_loss", td.detach(), prog_bar=True)
        self.log("train/epsilon", self.epsilon())
        if self.env.episodes:
            self.log("train/episode_return", self.env.episodes[-1][1], prog_bar=True)

    @torch.no_grad()
    def diagnose(self, obs: torch.Tensor | None = None) -> dict[str, float]:
        """Representation diagnostics of the trunk on recent observations."""
        obs = self.last_features if obs is None else obs
        if obs is None:
            raise ValueError("no observations to diagnose yet (train first)")
        with ActivationRecorder(self.q.trunk, [nn.ReLU]) as rec:
            phi = self.q.features(obs.to(self.device))
        acts = dict(rec.outputs)
        acts["head_relu"] = torch.relu(phi)
        return representation_report(phi, acts)

    def configure_optimizers(self):
        return make_optimizer(self.hparams.optimizer, self.parameters(), self.hparams.lr)


class PPOModule(pl.LightningModule):
    """PPO agent (manual optimisation; one ``training_step`` = one rollout + its updates).

    Args:
        env_id: Gymnasium id with a discrete action space.
        num_envs, num_steps, iterations: Rollout size and number of rollouts (for the lr
            annealing).
        lr, gamma, gae_lambda, clip_coef, ent_coef, vf_coef, max_grad_norm,
        update_epochs, num_minibatches: PPO settings (CleanRL classic-control defaults).
        hidden, depth: Shared trunk.
        encoder: ``mlp`` or ``nature-cnn`` (Atari; use ``hidden=512``).
        sigreg_lambda, sigreg_preset, lambda_convention: The regulariser.
        ns_period, ns_kinds: Non-stationarity.
        seed: Environment seed.

    Examples:
        >>> agent = PPOModule(num_envs=2, num_steps=4, hidden=8)
        >>> logits, value = agent(torch.zeros(1, 4)); logits.shape
        torch.Size([1, 2])
    """

    def __init__(
        self,
        env_id: str = "CartPole-v1",
        num_envs: int = 4,
        num_steps: int = 128,
        iterations: int = 100,
        lr: float = 2.5e-4,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        clip_coef: float = 0.2,
        ent_coef: float = 0.01,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        update_epochs: int = 4,
        num_minibatches: int = 4,
        hidden: int = 64,
        depth: int = 2,
        encoder: Literal["mlp", "nature-cnn"] = "mlp",
        sigreg_lambda: float = 0.0,
        sigreg_preset: str = "isogaussian-drl",
        lambda_convention: Literal["additive", "convex"] = "additive",
        ns_period: int | None = None,
        ns_kinds: tuple[str, ...] = ("permute", "sign"),
        seed: int = 0,
    ) -> None:
        super().__init__()
        if sigreg_lambda < 0:
            raise ValueError(f"sigreg_lambda must be >= 0, got {sigreg_lambda}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.env = build_env(env_id, num_envs, period=ns_period, kinds=ns_kinds, seed=seed)
        if not isinstance(self.env.single_action_space, gym.spaces.Discrete):
            raise ValueError(
                f"this PPO needs a discrete action space; {env_id!r} has {self.env.single_action_space}"
            )
        self.obs_dim = self.env.obs_dim
        self.agent = ActorCritic(
            self.obs_dim,
            int(self.env.single_action_space.n),
            hidden,
            depth,
            encoder=encoder,
            obs_shape=self.env.raw_obs_shape,
        )
        self.reg = SIGReg(sigreg_preset) if sigreg_lambda > 0 else None
        self._obs = None
        self.env_steps = 0
        self.reg_time = 0.0
        self.update_time = 0.0
        self.last_features: torch.Tensor | None = None

    def forward(self, obs: torch.Tensor):
        return self.agent(obs)

    @torch.no_grad()
    def diagnose(self, obs: torch.Tensor | None = None) -> dict[str, float]:
        """Representation diagnostics (dormancy, srank, isotropy) of the shared trunk."""
        obs = self.last_features if obs is None else obs
        if obs is None:
            raise ValueError("no observations to diagnose yet (train first)")
        with ActivationRecorder(self.agent.trunk, [nn.ReLU]) as rec:
            phi = self.agent.trunk(obs.to(self.device))
        return representation_report(phi, dict(rec.outputs))

    @torch.no_grad()
    def collect(self) -> dict[str, torch.Tensor]:
        hp = self.hparams
        if self._obs is None:
            self._obs, _ = self.env.reset(seed=hp.seed)
        s, e = hp.num_steps, hp.num_envs
        buf = {k: torch.zeros(s, e) for k in ("rewards", "dones", "values", "next_values", "logp")}
        buf["obs"] = torch.zeros(s, e, self.obs_dim)
        buf["actions"] = torch.zeros(s, e, dtype=torch.long)
        for t in range(s):
            o = torch.as_tensor(self._obs, dtype=torch.float32)
            logits, v = self.agent(o.to(self.device))
            dist = Categorical(logits=logits)
            a = dist.sample()
            self._obs, r, term, trunc, _ = self.env.step(a.cpu().numpy())
            self.env_steps += e
            buf["obs"][t] = o
            buf["actions"][t] = a.cpu()
            buf["logp"][t] = dist.log_prob(a).cpu()
            buf["values"][t] = v.cpu()
            buf["rewards"][t] = torch.as_tensor(r)
            buf["dones"][t] = torch.as_tensor(np.logical_or(term, trunc), dtype=torch.float32)
            buf["next_values"][t] = self.agent(
                torch.as_tensor(self._obs, dtype=torch.float32).to(self.device)
            )[1].cpu()
        return buf

    def training_step(self, batch, batch_idx):
        hp = self.hparams
        opt = self.optimizers()
        frac = 1.0 - batch_idx / max(hp.iterations, 1)  # linear lr annealing
        for group in opt.param_groups:
            group["lr"] = max(frac, 0.0) * hp.lr
        roll = self.collect()
        adv, ret = gae(
            roll["rewards"],
            roll["values"],
            roll["dones"],
            roll["next_values"],
            hp.gamma,
            hp.gae_lambda,
        )
        flat = {k: v.reshape(-1, *v.shape[2:]).to(self.device) for k, v in roll.items()}
        adv, ret = adv.reshape(-1).to(self.device), ret.reshape(-1).to(self.device)
        self.last_features = flat["obs"][-256:].detach()
        n = adv.shape[0]
        mb = max(n // hp.num_minibatches, 2)
        t_start = time.perf_counter()
        for _ in range(hp.update_epochs):
            perm = torch.randperm(n, device=self.device)
            for k in range(hp.num_minibatches):
                idx = perm[k * mb : (k + 1) * mb]
                h = self.agent.trunk(flat["obs"][idx])
                logits, v = self.agent.policy(h), self.agent.value(h).squeeze(-1)
                dist = Categorical(logits=logits)
                logp = dist.log_prob(flat["actions"][idx])
                ratio = (logp - flat["logp"][idx]).exp()
                a = adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(
                    -a * ratio, -a * ratio.clamp(1 - hp.clip_coef, 1 + hp.clip_coef)
                ).mean()
                vloss = 0.5 * ((v - ret[idx]) ** 2).mean()
                loss = pg - hp.ent_coef * dist.entropy().mean() + hp.vf_coef * vloss
                if self.reg is not None:
                    t0 = time.perf_counter()
                    loss = combine_losses(loss, self.reg(h), hp.sigreg_lambda, hp.lambda_convention)
                    self.reg_time += time.perf_counter() - t0
                opt.zero_grad()
                self.manual_backward(loss)
                self.clip_gradients(
                    opt, gradient_clip_val=hp.max_grad_norm, gradient_clip_algorithm="norm"
                )
                opt.step()
        self.update_time += time.perf_counter() - t_start
        self.log("train/loss", loss.detach(), prog_bar=True)
        if self.env.episodes:
            self.log("train/episode_return", self.env.episodes[-1][1], prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr, eps=1e-5)


class _Iterations(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor(i)


class RolloutDataModule(pl.LightningDataModule):
    """``iterations`` rollout rounds for an on-policy agent (PQN, PPO).

    Examples:
        >>> dm = RolloutDataModule(3); dm.setup("fit"); [int(b) for b in dm.train_dataloader()]
        [0, 1, 2]
    """

    def __init__(self, iterations: int = 100) -> None:
        super().__init__()
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        self.iterations = int(iterations)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_Iterations(self.iterations), batch_size=None, shuffle=False)
