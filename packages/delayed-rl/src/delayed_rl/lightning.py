"""Lightning shell around the tabular learners: one training step = one episode + replan.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480). The learners are not gradient based;
Lightning is used as an honest, thin shell so that ``delayed-rl fit|validate|test|predict``
work with configs, checkpoints and loggers like every package of the workspace:

- :class:`TabularAgentModule` -- manual optimisation, no parameters. ``training_step``
  plans the episode's policy, evaluates its exact pseudo-regret V*_1 - V^{pi_k}_1 (DP on
  the true augmented MDP), runs the episode with the batch's seed and learns from the
  revealed trajectory. Regret is logged through torchmetrics (``SumMetric`` for the
  cumulative regret, ``MeanMetric`` for its mean). The learner's counts are registered
  buffers, so checkpoints restore it exactly.
- :class:`EpisodeDataModule` -- the episode seeds (one batch = one episode by default).

The learner is sequential: under a multi-process strategy (DDP) every process would learn
from its own episodes; use one device.
"""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torchmetrics import MeanMetric, SumMetric

from .agents import make_agent, make_mdp
from .augmented import AugmentedMDP
from .delay import DelayDistribution
from .interaction import run_episode


class TabularAgentModule(pl.LightningModule):
    """A tabular learner under delayed observations as a LightningModule.

    Parameters
    ----------
    env:
        Benchmark environment (``garnet``, ``corridor``, ``chain``, ``frozenlake``,
        ``cliffwalking``).
    delay:
        Delay spec (``none``, ``constant:d``, ``uniform:D``, ``geometric:p:D``, ``pmf:...``).
    agent:
        Learner (``delay-ucbvi-h``, ``delay-ucbvi-b``, ``naive-augmented``,
        ``delay-ignorant``, ``belief-greedy``, ``random``).
    horizon:
        Episode length H (default: the environment's).
    env_seed:
        Seed of the generated MDP (garnet).
    bonus_scale, delta:
        Bonus constant c and confidence delta.
    known_delay:
        Give the delay pmf to the delay-aware learner (else it is estimated).

    Examples
    --------
    >>> import torch
    >>> m = TabularAgentModule(env="chain", delay="uniform:1", horizon=4)
    >>> m.training_step(torch.tensor([0]), 0) is None
    True
    >>> m(torch.tensor([1, 2])).shape  # realised returns of the current policy
    torch.Size([2])
    """

    def __init__(
        self,
        env: str = "garnet",
        delay: str = "uniform:2",
        agent: str = "delay-ucbvi-h",
        horizon: int | None = None,
        env_seed: int = 0,
        bonus_scale: float | str = 0.03,
        delta: float = 0.1,
        known_delay: bool = True,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.mdp = make_mdp(env, horizon, env_seed)
        self.delay_law = DelayDistribution.parse(delay)
        self.aug = AugmentedMDP(self.mdp, self.delay_law)
        self.agent = make_agent(
            agent, self.mdp, self.delay_law.D, self.delay_law, bonus_scale, delta, known_delay
        )
        self.optimum = self.aug.solve().value
        for key, arr in self.agent.state_dict().items():
            self.register_buffer(f"agent_{key}", torch.as_tensor(np.array(arr)).clone())
        self.cumulative_regret = SumMetric()
        self.mean_regret = MeanMetric()

    # ------------------------------------------------------------ state

    def _pull(self) -> None:
        state = {
            k[len("agent_") :]: b.detach().cpu().numpy()
            for k, b in self.named_buffers()
            if k.startswith("agent_")
        }
        self.agent.load_state_dict(state)

    def _push(self) -> None:
        for key, arr in self.agent.state_dict().items():
            buf = getattr(self, f"agent_{key}")
            buf.copy_(torch.as_tensor(np.array(arr), dtype=buf.dtype))

    def pseudo_regret(self) -> float:
        """Exact pseudo-regret of the policy the learner would play now."""
        self._pull()
        return self.optimum - self.aug.evaluate(self.agent.policy())

    # ------------------------------------------------------------ Lightning

    def forward(self, seeds: torch.Tensor) -> torch.Tensor:
        """Realised returns of the current policy on episodes seeded by ``seeds``, (B,) -> (B,)."""
        self._pull()
        table = self.agent.policy()
        out = [
            run_episode(self.mdp, self.delay_law, table, np.random.default_rng(int(s))).ret
            for s in seeds.reshape(-1).tolist()
        ]
        return torch.tensor(out, dtype=torch.float64)

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        """Play one episode per seed in ``batch`` (B,), replanning before each."""
        for seed in batch.reshape(-1).tolist():
            self._pull()
            table = self.agent.policy()
            regret = self.optimum - self.aug.evaluate(table)
            traj = run_episode(self.mdp, self.delay_law, table, np.random.default_rng(int(seed)))
            self.agent.update(traj)
            self._push()
            value = torch.tensor(regret, dtype=torch.float32)
            self.cumulative_regret.update(value)
            self.mean_regret.update(value)
            self.log("train/pseudo_regret", value, on_step=True, on_epoch=False, batch_size=1)
        self.log("train/cumulative_regret", self.cumulative_regret, on_step=False, on_epoch=True)
        self.log("train/mean_pseudo_regret", self.mean_regret, on_step=False, on_epoch=True)
        return None

    def _eval_step(self, stage: str) -> None:
        self.log(f"{stage}/pseudo_regret", self.pseudo_regret(), batch_size=1)

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        """Exact pseudo-regret of the current policy."""
        self._eval_step("val")

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        """Exact pseudo-regret of the current policy."""
        self._eval_step("test")

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Realised returns of the current policy on the seeded episodes."""
        return self(batch)

    def configure_optimizers(self):
        """No optimiser: the learner updates counts, not parameters."""
        return None


class _Seeds(Dataset):
    def __init__(self, start: int, n: int) -> None:
        self.start, self.n = start, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor(self.start + i, dtype=torch.int64)


class EpisodeDataModule(pl.LightningDataModule):
    """Episode seeds: ``episodes`` training episodes, a few evaluation seeds.

    Parameters
    ----------
    episodes:
        Number K of training episodes per epoch.
    seed:
        Offset of the episode seeds (episode i uses seed ``seed * 10**6 + i``).
    batch_size:
        Episodes per training step.
    eval_episodes:
        Seeds in the validation / test / predict sets.

    Examples
    --------
    >>> dm = EpisodeDataModule(episodes=3, seed=1)
    >>> dm.setup("fit")
    >>> [int(b) for b in dm.train_dataloader()]
    [1000000, 1000001, 1000002]
    """

    def __init__(
        self, episodes: int = 500, seed: int = 0, batch_size: int = 1, eval_episodes: int = 4
    ) -> None:
        super().__init__()
        if episodes < 1 or batch_size < 1 or eval_episodes < 1:
            raise ValueError("episodes, batch_size and eval_episodes must be >= 1")
        self.save_hyperparameters()
        self.episodes, self.seed, self.batch_size, self.eval_episodes = (
            episodes,
            seed,
            batch_size,
            eval_episodes,
        )

    def setup(self, stage: str | None = None) -> None:
        base = self.seed * 10**6
        self.train_set = _Seeds(base, self.episodes)
        self.eval_set = _Seeds(base + 900_000, self.eval_episodes)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=False, num_workers=0)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.eval_set, batch_size=self.eval_episodes, num_workers=0)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:
        return self.val_dataloader()
