"""The Lightning parts of videokr: the SFT -> GRPO recipe and the data modules.

Paper: VideoKR (ICML 2026), Sec. 4 (authors: LlamaFactory SFT, verl GRPO).

Training (LightningModules):

* :class:`SFTModule` -- next-token cross-entropy on ``<think>..</think><answer>..</answer>``
  responses only (prompt and soft video tokens are not supervised).
* :class:`GRPOModule` -- per prompt, ``G`` sampled completions; reward
  :func:`videokr.rewards.compute_score` (0.9 accuracy + 0.1 format); group-normalised advantage
  :func:`group_advantages` ``A_i = (r_i - mean_G r) / (std_G r + eps)``; clipped ratio objective
  ``min(rho A, clip(rho, 1 - eps, 1 + eps) A)`` with ``rho = pi / pi_old`` over ``ppo_epochs``
  updates per batch; KL to the frozen reference policy as a *loss* with the k3 (``low_var_kl``)
  estimator :func:`k3_kl` ``= exp(ref - logp) - (ref - logp) - 1``, coefficient 0.01 (verl setting).

Both validate by greedy decoding (paper eval: temperature 0.1) and log accuracy and format
compliance; :class:`PredictionWriter` saves ``predict`` outputs for ``videokr eval``.
``GRPOModule(init_ckpt=...)`` starts policy and reference from an SFT checkpoint,
:meth:`GRPOModule.start_from` from an SFT module in memory.

Data (LightningDataModules):

* :class:`VideoQADataset` -- records + a :class:`~videokr.microworld.VideoStore` -> examples.
* :func:`collate` -- right-padded ``prompt + response`` (SFT, with ``labels``), left-padded
  prompts (generation / GRPO), and the string fields the rewards and the harness need.
* :class:`SynthKRDataModule` -- builds the micro-world, runs the quality filters
  (:mod:`videokr.pipeline`), selects the training skill mix (perception-only = ``[VidR]``).
* :class:`VideoKRDataModule` -- local JSONL corpora in the schema, with ``.npy`` clips under a
  video root (decoding real videos to frames is left to the user; see the README).

>>> dm = SynthKRDataModule(n_videos=12, batch_size=4, filtered=False)
>>> dm.setup("fit"); b = next(iter(dm.train_dataloader()))
>>> b["video"].shape, b["input_ids"].shape[0]
(torch.Size([4, 1, 7, 16, 16]), 4)
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any, Literal

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .rewards import accuracy_reward, compute_score, format_reward
from .tiny_video_lm import TinyVideoLM, build_tokenizer, decode, prompt_text, response_text

STRING_FIELDS = ("id", "solution", "skill", "subject", "problem_type")


class VideoQADataset(Dataset):
    """Validated records with their clips (``(1, T, H, W)`` float tensors)."""

    def __init__(self, records: Sequence[dict[str, Any]], store) -> None:
        self.records, self.store = list(records), store

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, i: int) -> dict[str, Any]:
        r = self.records[i]
        video = torch.from_numpy(np.asarray(self.store.load(r["video_path"]), dtype=np.float32))
        return {"record": r, "video": video[None]}


def collate(items: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokenise a list of examples into one batch."""
    tok = build_tokenizer()
    eos = tok.token_to_id("[EOS]")
    prompts = [[2, *tok.encode(prompt_text(it["record"])).ids] for it in items]
    responses = [[*tok.encode(response_text(it["record"])).ids, eos] for it in items]
    n = len(items)
    full_len = max(len(p) + len(r) for p, r in zip(prompts, responses, strict=True))
    input_ids = torch.zeros((n, full_len), dtype=torch.long)
    attention = torch.zeros((n, full_len), dtype=torch.long)
    labels = torch.full((n, full_len), -100, dtype=torch.long)
    p_len = max(len(p) for p in prompts)
    prompt_ids = torch.zeros((n, p_len), dtype=torch.long)
    prompt_mask = torch.zeros((n, p_len), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        seq = p + r
        input_ids[i, : len(seq)] = torch.tensor(seq)
        attention[i, : len(seq)] = 1
        labels[i, len(p) - 1 : len(seq) - 1] = torch.tensor(r)  # position t predicts token t+1
        prompt_ids[i, p_len - len(p) :] = torch.tensor(p)
        prompt_mask[i, p_len - len(p) :] = 1
    batch: dict[str, Any] = {
        "video": torch.stack([it["video"] for it in items]),
        "input_ids": input_ids,
        "attention_mask": attention,
        "labels": labels,
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "n_options": torch.tensor([len(it["record"]["options"]) for it in items]),
    }
    for key in STRING_FIELDS:
        batch[key] = [str(it["record"].get(key, "")) for it in items]
    return batch


class _QADataModule(pl.LightningDataModule):
    def __init__(self, batch_size: int = 32, num_workers: int = 0) -> None:
        super().__init__()
        self.batch_size, self.num_workers = batch_size, num_workers
        self.splits: dict[str, list[dict[str, Any]]] = {}
        self.store = None

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if split not in self.splits:
            raise RuntimeError(f"call setup() before asking for the {split} loader")
        return DataLoader(
            VideoQADataset(self.splits[split], self.store),
            batch_size=self.batch_size,
            shuffle=shuffle,
            collate_fn=collate,
            num_workers=self.num_workers,
            generator=torch.Generator().manual_seed(0) if shuffle else None,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader("test", False)


class SynthKRDataModule(_QADataModule):
    """The micro-world corpus: train on a skill mix, validate on held-out train videos, test on eval.

    Parameters
    ----------
    n_videos: clips to generate (about three items each).
    train_skills: the SFT/GRPO skill mix (``[VidR]`` = perception-only data).
    filtered: run the quality filters on both splits (the paper's pipeline).
    val_fraction: share of the (filtered) train items held out for validation.
    """

    def __init__(
        self,
        n_videos: int = 400,
        seed: int = 0,
        train_skills: list[str] | None = None,
        filtered: bool = True,
        val_fraction: float = 0.1,
        batch_size: int = 32,
        num_workers: int = 0,
    ) -> None:
        super().__init__(batch_size, num_workers)
        self.n_videos, self.seed, self.filtered = n_videos, seed, filtered
        self.train_skills = list(train_skills or ["VidR", "KnowVid", "KnowVidR"])
        self.val_fraction = val_fraction
        self.world = None

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        from .microworld import make_microworld
        from .pipeline import filter_world

        self.world = make_microworld(self.n_videos, seed=self.seed)
        self.store = self.world.store
        if self.filtered:
            train, test, _ = filter_world(self.world, seed=self.seed)
        else:
            train, test = self.world.train, self.world.eval
        self.set_records(train, test)

    def set_records(self, train, test) -> None:
        train = [r for r in train if r["skill"] in self.train_skills]
        videos = sorted({r["video_path"] for r in train})
        rng = np.random.default_rng(self.seed)
        n_val = max(1, int(round(self.val_fraction * len(videos))))
        val_videos = set(rng.permutation(videos)[:n_val].tolist())
        self.splits = {
            "train": [r for r in train if r["video_path"] not in val_videos],
            "val": [r for r in train if r["video_path"] in val_videos],
            "test": list(test),
        }


class VideoKRDataModule(_QADataModule):
    """Local corpora in the VideoKR schema (e.g. the released JSONL files downloaded by the user).

    Clips are ``.npy`` frame arrays ``(T, H, W)`` under ``video_root`` (or ``$VIDEOKR_VIDEO_ROOT``);
    every referenced clip is checked at setup, and a missing one names the path and the root.
    """

    def __init__(
        self,
        train_file: str,
        test_file: str,
        video_root: str | None = None,
        val_fraction: float = 0.1,
        batch_size: int = 32,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, num_workers)
        self.train_file, self.test_file, self.video_root = train_file, test_file, video_root
        self.val_fraction, self.seed = val_fraction, seed

    def setup(self, stage: str | None = None) -> None:
        if self.splits:
            return
        from .corpus import load_local
        from .microworld import VideoStore
        from .schema import video_root

        root = video_root(self.video_root)
        train = load_local(self.train_file, root, check_videos=True)
        test = load_local(self.test_file, root, check_videos=True)
        self.store = VideoStore(root if root is not None else os.curdir)
        rng = np.random.default_rng(self.seed)
        idx = rng.permutation(len(train))
        n_val = max(1, int(round(self.val_fraction * len(train))))
        self.splits = {
            "train": [train[i] for i in idx[n_val:]],
            "val": [train[i] for i in idx[:n_val]],
            "test": test,
        }


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """``(r - mean) / (std + eps)`` over the last axis (one group per row).

    A group whose rewards are all equal carries no signal, and its advantages are exactly 0.
    Computed by the formula alone they were not: the float32 mean of eight rewards of 0.9 differs
    from 0.9 by about 1e-8, and that residual divided by ``std + eps = 1e-6`` gave every
    completion of the group an advantage of -0.06 (-0.0075 for eight rewards of 0.1), a
    spurious push that Adam scales up to a full step when it is the only gradient in the batch.

    >>> group_advantages(torch.tensor([[1.0, 0.0], [0.5, 0.5]]))
    tensor([[ 1.0000, -1.0000],
            [ 0.0000,  0.0000]])
    >>> bool((group_advantages(torch.full((1, 8), 0.9)) == 0).all())
    True
    """
    mean = rewards.mean(-1, keepdim=True)
    std = rewards.std(-1, unbiased=False, keepdim=True)
    constant = rewards.amax(-1, keepdim=True) == rewards.amin(-1, keepdim=True)
    return ((rewards - mean) / (std + eps)).masked_fill(constant, 0.0)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(pi || ref) per token; always >= 0.

    >>> float(k3_kl(torch.tensor(0.0), torch.tensor(0.0)))
    0.0
    """
    x = ref_logp - logp
    return torch.exp(x) - x - 1.0


LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean")


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    kl_coef: float = 0.01,
    loss_agg_mode: str = "token-mean",
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate + ``kl_coef`` * k3 KL per token, aggregated over the batch.

    ``logp, old_logp, ref_logp, mask``: ``(N, L)``; ``advantages``: ``(N,)``.
    ``loss_agg_mode="token-mean"`` (the default, verl's default in the authors' GRPO run):
    ``sum_i sum_t m_it l_it / sum_i sum_t m_it`` -- every response token weighs the same, so long
    responses weigh more. ``"seq-mean-token-mean"``: the mean over tokens of each sequence,
    then over sequences (every response weighs the same; this package's 0.1 behaviour).

    >>> lp = torch.zeros(2, 3); m = torch.tensor([[1, 1, 1], [1, 0, 0]])
    >>> adv = torch.tensor([1.0, -1.0])
    >>> float(grpo_loss(lp, lp, lp, adv, m)[0])  # (-3 * 1 + 1 * 1) / 4 tokens
    -0.5
    >>> float(grpo_loss(lp, lp, lp, adv, m, loss_agg_mode="seq-mean-token-mean")[0])
    0.0
    """
    if loss_agg_mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {loss_agg_mode!r}")
    ratio = torch.exp(logp - old_logp)
    a = advantages[:, None]
    surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * a)
    kl = k3_kl(logp, ref_logp)
    m = mask.float()

    def agg(x: torch.Tensor) -> torch.Tensor:
        if loss_agg_mode == "token-mean":
            return (x * m).sum() / m.sum().clamp(min=1.0)
        return ((x * m).sum(1) / m.sum(1).clamp(min=1.0)).mean()

    loss = agg(-surrogate) + kl_coef * agg(kl)
    stats = {"kl": agg(kl).detach(), "ratio": (ratio * m).sum() / m.sum().clamp(min=1.0)}
    return loss, stats


class PredictionWriter(pl.callbacks.BasePredictionWriter):
    """Writes ``predict`` outputs as JSONL ``{"id", "output"}`` lines, the input of ``videokr eval``.

    On the command line: ``videokr predict --config configs/sft_full.yaml --ckpt_path X.ckpt
    --trainer.callbacks+=videokr.lightning.PredictionWriter --trainer.callbacks.output preds.jsonl``.
    The file is written once, atomically, after the last batch.

    Parameters
    ----------
    output: path of the JSONL file.
    """

    def __init__(self, output: str = "predictions.jsonl") -> None:
        super().__init__(write_interval="epoch")
        self.output = output

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices) -> None:
        import json

        from icml26_shared.results import atomic_write_text

        rows = [row for batch in predictions for row in batch]
        text = "".join(json.dumps(r) + "\n" for r in rows)
        atomic_write_text(self.output, text)


class SFTModule(pl.LightningModule):
    """Supervised fine-tuning of the tiny video-LM on chain-of-thought responses.

    >>> m = SFTModule(d_model=32, layers=1, heads=2)
    >>> sum(p.numel() for p in m.parameters()) > 0
    True
    """

    def __init__(
        self,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 4,
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        warmup_steps: int = 20,
        max_new_tokens: int = 48,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.tokenizer = build_tokenizer()
        self.model = TinyVideoLM(self.tokenizer.get_vocab_size(), d_model, layers, heads)

    def forward(self, video, input_ids, attention_mask, **_: Any) -> torch.Tensor:
        return self.model(video, input_ids, attention_mask)

    def training_step(self, batch, batch_idx):
        logits = self(batch["video"], batch["input_ids"], batch["attention_mask"])
        loss = torch.nn.functional.cross_entropy(
            logits.flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=-100
        )
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["id"]))
        return loss

    def complete(self, batch, temperature: float = 0.0, generator=None) -> list[str]:
        tokens, mask = self.model.generate(
            batch["video"],
            batch["prompt_ids"],
            batch["prompt_mask"],
            max_new_tokens=self.hparams.max_new_tokens,
            temperature=temperature,
            generator=generator,
        )
        return decode(tokens, mask)

    def _score(self, batch, prefix: str) -> None:
        outs = self.complete(batch)
        acc = [accuracy_reward(o, s) for o, s in zip(outs, batch["solution"], strict=True)]
        fmt = [format_reward(o) for o in outs]
        n = len(outs)
        self.log(f"{prefix}/accuracy", sum(acc) / n, batch_size=n, prog_bar=True)
        self.log(f"{prefix}/format", sum(fmt) / n, batch_size=n)

    def validation_step(self, batch, batch_idx):
        self._score(batch, "val")

    def test_step(self, batch, batch_idx):
        self._score(batch, "test")

    def predict_step(self, batch, batch_idx):
        return [
            {"id": i, "output": o} for i, o in zip(batch["id"], self.complete(batch), strict=True)
        ]

    def configure_optimizers(self):
        opt = torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        warm = max(1, self.hparams.warmup_steps)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class GRPOModule(SFTModule):
    """GRPO on the tiny video-LM: group sampling, clipped ratio, k3 KL to a frozen reference.

    Parameters beyond :class:`SFTModule`'s: ``group_size`` (completions per prompt; paper 8),
    ``clip_eps`` (0.2), ``kl_coef`` (k3 KL loss coefficient, 0.01), ``ppo_epochs`` (policy
    updates per rollout batch), ``temperature`` (sampling), ``init_ckpt`` (an SFT checkpoint
    for policy and reference), ``loss_agg_mode`` (:func:`grpo_loss`: ``"token-mean"``, the
    authors' verl default, or ``"seq-mean-token-mean"``). Reference: VideoKR (ICML 2026) Sec. 4.

    >>> m = GRPOModule(d_model=32, layers=1, heads=2, group_size=2)
    >>> all(not p.requires_grad for p in m.reference.parameters())
    True
    """

    def __init__(
        self,
        d_model: int = 64,
        layers: int = 2,
        heads: int = 4,
        lr: float = 5e-4,
        weight_decay: float = 0.0,
        warmup_steps: int = 0,
        max_new_tokens: int = 48,
        group_size: int = 8,
        clip_eps: float = 0.2,
        kl_coef: float = 0.01,
        ppo_epochs: int = 2,
        temperature: float = 1.0,
        init_ckpt: str | None = None,
        loss_agg_mode: Literal["token-mean", "seq-mean-token-mean"] = "token-mean",
    ) -> None:
        if loss_agg_mode not in LOSS_AGG_MODES:
            raise ValueError(
                f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {loss_agg_mode!r}"
            )
        super().__init__(d_model, layers, heads, lr, weight_decay, warmup_steps, max_new_tokens)
        self.save_hyperparameters()
        self.automatic_optimization = False
        self._reference = [self._frozen_copy()]  # a list: not a submodule, not in the state dict
        if init_ckpt:
            from icml26_shared.cli import load_checkpoint

            self.start_from(load_checkpoint(SFTModule, init_ckpt, what="SFT checkpoint"))

    def start_from(self, sft: SFTModule) -> GRPOModule:
        """Start policy and frozen reference from the weights of a trained ``sft`` module."""
        self.load_state_dict(sft.state_dict())
        self._reference = [self._frozen_copy()]
        return self

    def _frozen_copy(self) -> TinyVideoLM:
        ref = copy.deepcopy(self.model).eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return ref

    @property
    def reference(self) -> TinyVideoLM:
        ref = self._reference[0]
        if next(ref.parameters()).device != self.device:
            self._reference[0] = ref.to(self.device)
        return self._reference[0]

    def sample_groups(self, batch) -> dict[str, torch.Tensor | list]:
        """``G`` completions per prompt, their rewards and group-normalised advantages."""
        g = self.hparams.group_size
        rep = {k: batch[k].repeat_interleave(g, 0) for k in ("video", "prompt_ids", "prompt_mask")}
        tokens, mask = self.model.generate(
            rep["video"],
            rep["prompt_ids"],
            rep["prompt_mask"],
            max_new_tokens=self.hparams.max_new_tokens,
            temperature=self.hparams.temperature,
        )
        texts = decode(tokens, mask)
        sols = [s for s in batch["solution"] for _ in range(g)]
        rewards = torch.tensor(
            [compute_score(t, s) for t, s in zip(texts, sols, strict=True)], device=self.device
        )
        adv = group_advantages(rewards.view(-1, g)).flatten()
        return {
            **rep,
            "tokens": tokens,
            "mask": mask,
            "texts": texts,
            "rewards": rewards,
            "adv": adv,
        }

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        roll = self.sample_groups(batch)
        args = (
            roll["video"],
            roll["prompt_ids"],
            roll["prompt_mask"],
            roll["tokens"],
            roll["mask"],
        )
        with torch.no_grad():
            old = self.model.token_logprobs(*args)
            ref = self.reference.token_logprobs(*args)
        for _ in range(self.hparams.ppo_epochs):
            logp = self.model.token_logprobs(*args)
            loss, stats = grpo_loss(
                logp,
                old,
                ref,
                roll["adv"],
                roll["mask"],
                self.hparams.clip_eps,
                self.hparams.kl_coef,
                self.hparams.loss_agg_mode,
            )
            opt.zero_grad()
            self.manual_backward(loss)
            self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
            opt.step()
        n = len(roll["texts"])
        self.log("train/reward", roll["rewards"].mean(), prog_bar=True, batch_size=n)
        self.log("train/format", sum(format_reward(t) for t in roll["texts"]) / n, batch_size=n)
        self.log("train/kl", stats["kl"], batch_size=n)
        return loss.detach()

    def configure_optimizers(self):
        return torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
