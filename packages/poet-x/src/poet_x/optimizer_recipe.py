"""The POET-X optimiser recipe.

* POET parameters (the Q's) in their own AdamW group at lr = poet_lr x poet_lr_scale and no
  weight decay; everything else (embeddings, norms, lm_head, biases, skipped Linears) with
  AdamW at ``base_lr``; betas (0.9, 0.999), eps 1e-6.
* :func:`reset_poet_state` clears Adam's m, v and step of the POET parameters after a merge.
* :func:`clip_value`: the gradient-clip threshold ramps linearly from 0.1x to 1x over
  ``clip_warmup_steps`` optimiser steps after every merge.
* Anchors built on the same model: ``"adamw"`` (all parameters), ``"muon"`` (torch's
  Muon on 2-D hidden matrices + AdamW for the rest), ``"galore"`` (``galore-torch``
  GaLoreAdamW, low-rank projected Adam on the hidden matrices) and ``"apollo"``
  (``apollo-torch`` APOLLOAdamW, random-projection channel-wise scaling on the hidden
  matrices); LoRA / OFT (``peft``) change the model instead and then use ``"adamw"`` on the
  trainable parameters. The optional anchors need the ``bench`` extra.
"""

from __future__ import annotations

import torch
from torch import nn

from .config import POETConfig
from .poet_linear import POETLinear


def poet_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The rotation parameters (q_in, q_out) of every POET layer."""
    out = []
    for m in model.modules():
        if isinstance(m, POETLinear):
            out += [m.q_in, m.q_out]
    return out


def build_optimizer(
    model: nn.Module,
    cfg: POETConfig,
    baseline: str = "poet",
    lr: float | None = None,
    weight_decay: float = 0.0,
    rank: int | None = None,
    proj_gap: int = 50,
) -> torch.optim.Optimizer | list[torch.optim.Optimizer]:
    """Optimiser(s) for ``baseline`` in {"poet", "adamw", "muon", "galore", "apollo"}.

    >>> net = nn.Linear(4, 4)
    >>> opt = build_optimizer(net, POETConfig(block_size=2), baseline="adamw", lr=1e-3)
    >>> type(opt).__name__
    'AdamW'
    """
    lr = cfg.base_lr if lr is None else lr
    kw = {"betas": (0.9, 0.999), "eps": 1e-6}
    if baseline == "poet":
        poet = poet_parameters(model)
        if not poet:
            raise ValueError("baseline 'poet' needs a model wrapped with wrap_model")
        ids = {id(p) for p in poet}
        rest = [p for p in model.parameters() if p.requires_grad and id(p) not in ids]
        groups = [{"params": poet, "lr": cfg.poet_group_lr, "weight_decay": 0.0, "poet": True}]
        if rest:
            groups.append({"params": rest, "lr": lr, "weight_decay": weight_decay})
        return torch.optim.AdamW(groups, **kw)
    params = [p for p in model.parameters() if p.requires_grad]
    if baseline == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, **kw)
    emb = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    head = getattr(model, "lm_head", None)
    if head is not None:
        emb.add(id(head.weight))
    mats = [p for p in params if p.dim() == 2 and id(p) not in emb]
    ids = {id(p) for p in mats}
    rest = [p for p in params if id(p) not in ids]
    if baseline in ("galore", "apollo"):
        rank = max(min(min(p.shape) for p in mats) // 4, 1) if rank is None else rank
        low = {"params": mats, "rank": rank, "update_proj_gap": proj_gap, "scale": 0.25,
               "proj_type": "std"}  # fmt: skip
        if baseline == "galore":
            from galore_torch import GaLoreAdamW as Opt
        else:
            from apollo_torch import APOLLOAdamW as Opt

            low.update(proj="random", scale_type="channel", scale=1.0)
        groups = [{"params": rest, "weight_decay": weight_decay}, low]
        return Opt(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0)
    if baseline == "muon":
        if not hasattr(torch.optim, "Muon"):
            raise ImportError(
                f"optimizer 'muon' needs torch.optim.Muon (torch >= 2.9); torch is {torch.__version__}"
            )
        return [
            torch.optim.Muon(mats, lr=lr * 20, weight_decay=0.0, momentum=0.95),
            torch.optim.AdamW(rest, lr=lr, weight_decay=weight_decay, **kw),
        ]
    raise ValueError(f"unknown optimiser {baseline!r}; choose poet, adamw, muon, galore or apollo")


def reset_poet_state(optimizer: torch.optim.Optimizer) -> int:
    """Drop Adam state of the POET group(s) (after a merge); return how many were reset."""
    n = 0
    for group in optimizer.param_groups:
        if group.get("poet"):
            for p in group["params"]:
                if p in optimizer.state:
                    del optimizer.state[p]
                    n += 1
    return n


def clip_value(base: float, steps_since_merge: int, warmup: int) -> float:
    """Clip threshold after a merge: linear ramp 0.1 x base -> base over ``warmup`` steps.

    >>> [round(clip_value(1.0, s, 10), 2) for s in (0, 5, 10, 20)]
    [0.1, 0.55, 1.0, 1.0]
    """
    if warmup <= 0:
        return base
    frac = min(steps_since_merge / warmup, 1.0)
    return base * (0.1 + 0.9 * frac)
