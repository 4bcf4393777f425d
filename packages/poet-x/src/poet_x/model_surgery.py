"""Swap ``nn.Linear`` layers of any model (e.g. a ``transformers`` Llama) for POET-X layers.

* :func:`wrap_model`: every eligible Linear (not in ``cfg.exclude_modules``, e.g. ``lm_head``,
  and in ``cfg.target_modules`` when given) becomes a :class:`~poet_x.poet_linear.POETLinear`;
  all other parameters stay trainable (trained by AdamW in the recipe). Dimensions not divisible
  by b raise by default; with ``on_indivisible="skip"`` they are left as Linear and reported.
  ``transformers``' ``Conv1D`` (GPT-2 family: y = x W + b with W stored (in, out)) is
  converted too, as the linear map with weight W^T.
* :func:`merge_to_linear`: replace every POETLinear by a plain Linear holding W_eff (a
  ``Conv1D`` holding W_eff^T where the layer came from one, so the state dict keeps the
  model's own layout), so the model can be ``save_pretrained``-ed and runs with no overhead.
* :func:`merge_all`: the periodic merge-and-reinitialise of every POET layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from .config import POETConfig
from .poet_linear import POETLinear


@dataclass
class WrapReport:
    """Names of the converted and the skipped (indivisible) Linear layers."""

    wrapped: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _conv1d_class():
    """``transformers.pytorch_utils.Conv1D`` (GPT-2's linear layer), or None."""
    try:
        from transformers.pytorch_utils import Conv1D
    except ImportError:  # pragma: no cover - transformers is a dependency
        return None
    return Conv1D


def _linear_weight(mod: nn.Module) -> torch.Tensor:
    """The (out, in) weight of an nn.Linear or a transposed Conv1D."""
    return mod.weight if isinstance(mod, nn.Linear) else mod.weight.t()


def _eligible(name: str, cfg: POETConfig) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    if any(leaf == ex or name == ex or name.endswith("." + ex) for ex in cfg.exclude_modules):
        return False
    if cfg.target_modules is not None:
        return any(leaf == t or name.endswith("." + t) for t in cfg.target_modules)
    return True


def wrap_model(model: nn.Module, cfg: POETConfig) -> WrapReport:
    """Convert the model's Linear layers to POET-X in place; return what was converted.

    Examples
    --------
    >>> net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    >>> rep = wrap_model(net, POETConfig(block_size=4))
    >>> rep.wrapped, type(net[0]).__name__
    (['0', '2'], 'POETLinear')
    """
    gen = torch.Generator().manual_seed(cfg.seed if cfg.seed is not None else 0)
    report = WrapReport()
    b = cfg.block_size
    conv1d = _conv1d_class()
    kinds = (nn.Linear,) if conv1d is None else (nn.Linear, conv1d)
    targets = [
        (name, mod)
        for name, mod in model.named_modules()
        if isinstance(mod, kinds) and not isinstance(mod, POETLinear) and _eligible(name, cfg)
    ]
    if not targets:
        raise ValueError("model has no eligible nn.Linear (or Conv1D) layer to convert to POET-X")
    plan = []
    for name, mod in targets:  # validate everything first: a raise leaves the model untouched
        if not mod.weight.is_floating_point():
            raise TypeError(f"layer {name!r} has integer dtype {mod.weight.dtype}; need floats")
        m, n = _linear_weight(mod).shape
        if any(d % b or b > d for d in (m, n)):
            if cfg.on_indivisible == "raise":
                raise ValueError(
                    f"layer {name!r} of shape ({m}, {n}) is not divisible by block_size {b} "
                    "(pass on_indivisible='skip' to leave it as nn.Linear)"
                )
            report.skipped.append(name)
        else:
            plan.append((name, mod))
    for name, mod in plan:
        new = POETLinear(_linear_weight(mod), mod.bias, cfg, gen).to(mod.weight.device)
        new.export_as = "linear" if isinstance(mod, nn.Linear) else "conv1d"
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, leaf, new)
        report.wrapped.append(name)
    if not report.wrapped:
        raise ValueError(f"no Linear layer of the model is divisible by block_size {b}")
    return report


def poet_layers(model: nn.Module) -> list[POETLinear]:
    """All POET layers of a model."""
    return [m for m in model.modules() if isinstance(m, POETLinear)]


def merge_all(model: nn.Module) -> int:
    """Merge-and-reinitialise every POET layer; return how many were merged."""
    layers = poet_layers(model)
    for layer in layers:
        layer.merge_and_reinit()
    return len(layers)


def merge_to_linear(model: nn.Module) -> nn.Module:
    """Replace each POETLinear by ``nn.Linear`` with weight W_eff (in place; returns the model).

    Layers converted from a ``transformers`` ``Conv1D`` go back to a ``Conv1D``.
    """
    for name, mod in list(model.named_modules()):
        if isinstance(mod, POETLinear):
            parent_name, _, leaf = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, leaf, mod.to_linear())
    return model
