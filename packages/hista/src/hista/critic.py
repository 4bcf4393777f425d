"""The PPO-style critic baseline: a value head on the frozen policy, trained by regression.

SVEB's "ppo-1" critic (research notes C1): the action model is frozen and a value head on its
last-layer hidden states is regressed onto the final rewards of labelled responses, at every
response token. ``CriticModule`` is that value head (MSE, sigmoid output in [0, 1]);
``ArithCriticDataModule`` builds the labelled data from ArithChain rollouts of an SFT policy.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .arith_chain import NoisyTeacher, Problem, reward, sample_problems
from .policy import CausalLMPolicy, batch_ids, sft_warm_start


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


@torch.no_grad()
def rollout_features(
    policy: CausalLMPolicy, problems: list[Problem], group_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, list[tuple[Problem, str, float]]]:
    """Per-token (hidden state, final reward) pairs of ``group_size`` rollouts per problem."""
    feats, targets, rollouts = [], [], []
    for p in problems:
        outs = policy.generate(p.prompt, group_size, generator=generator)
        texts = [p.prompt + o for o in outs]
        ids, lengths = batch_ids(texts, policy)
        hid = policy.hidden(ids)
        start = len(policy.encode(p.prompt))
        for i, o in enumerate(outs):
            r = reward(p, o)
            rollouts.append((p, o, r))
            # states after the prompt and after every response token but the last
            h = hid[i, start - 1 : int(lengths[i]) - 1]
            feats.append(h)
            targets.append(torch.full((h.shape[0],), r))
    return torch.cat(feats), torch.cat(targets), rollouts


class ArithCriticDataModule(pl.LightningDataModule):
    """Labelled rollouts of an SFT-warm-started ArithChain policy (80/20 train/val split).

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
        torch.manual_seed(hp.seed)
        policy = self.policy or CausalLMPolicy(hidden=hp.hidden, layers=hp.layers, heads=hp.heads)
        if self.policy is None:
            sft_warm_start(
                policy,
                sample_problems(2000, seed=hp.seed + 7),
                NoisyTeacher(),
                hp.sft_steps,
                seed=hp.seed,
            )
            self.policy = policy
        problems = sample_problems(hp.n_problems, seed=hp.seed + 11)
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
    pl.seed_everything(seed, verbose=False)
    module = CriticModule(hidden_size=features.shape[1])
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(TensorDataset(features, targets), 256, shuffle=True, generator=gen)
    trainer = pl.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, loader)
    return module.eval()
