"""DataModules: the SynthKR micro-world (offline) and released VideoKR-style corpora.

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

import os
from collections.abc import Sequence
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .tiny_video_lm import build_tokenizer, prompt_text, response_text

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
