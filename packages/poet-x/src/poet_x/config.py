"""POET-X configuration (the hyper-parameters of Sec. 3 of the paper and the repo's defaults).

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu, Liu, Weller, Shi, Liu, ICML 2026 (arXiv 2603.05500); code github.com/Sphere-AI-Lab/poet.

* ``block_size`` b: size of the b x b Cayley blocks of R and P (POET-BS).
* ``merge_interval`` T: merge-then-reinitialise every T optimiser steps.
* ``cayley``: ``"exact"`` G = (I+Q)(I-Q)^-1 or ``"neumann"`` G = I + 2 sum_{j<=k} Q^j.
* ``mode``: ``"fast"`` (autograd stores intermediates), ``"mem"`` (recompute in backward),
  ``"naive"`` (POET: materialise the full dense R and P and R W0 P every step).
* ``base_quant="int8"`` with ``mode="mem"``: POET-XQ (uint8 base, dequantised in the recompute).
* ``bias_placement``: ``"before_rotation"`` (the authors' code: y = R (W0 P x + b0)) or
  ``"after_rotation"`` (this package's 0.1 layer: y = R W0 P x + b0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal


@dataclass
class POETConfig:
    """Hyper-parameters of POET / POET-X.

    Examples
    --------
    >>> cfg = POETConfig(block_size=4, merge_interval=10)
    >>> cfg.poet_group_lr
    0.00025
    >>> POETConfig(block_size=1)
    Traceback (most recent call last):
    ...
    ValueError: block_size must be >= 2, got 1
    """

    block_size: int = 64
    merge_interval: int = 200
    cayley: Literal["exact", "neumann"] = "neumann"
    neumann_terms: int = 4
    mode: Literal["fast", "mem", "naive"] = "fast"
    path: Literal["auto", "input", "weight"] = "auto"
    base_quant: Literal["none", "int8"] = "none"
    quant_group_size: int = 256
    bias_placement: Literal["before_rotation", "after_rotation"] = "before_rotation"
    normalize_rows: bool = True
    target_modules: Sequence[str] | None = None
    exclude_modules: Sequence[str] = field(default_factory=lambda: ("lm_head",))
    on_indivisible: Literal["raise", "skip"] = "raise"
    poet_lr: float = 5e-4
    poet_lr_scale: float = 0.5
    base_lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: float = 0.1
    clip_warmup_steps: int = 0
    seed: int | None = 0

    def __post_init__(self) -> None:
        if int(self.block_size) < 2:
            raise ValueError(f"block_size must be >= 2, got {self.block_size}")
        if int(self.merge_interval) <= 0:
            raise ValueError(f"merge_interval must be > 0, got {self.merge_interval}")
        if int(self.neumann_terms) < 1:
            raise ValueError(f"neumann_terms must be >= 1, got {self.neumann_terms}")
        if self.cayley not in ("exact", "neumann"):
            raise ValueError(f"cayley must be 'exact' or 'neumann', got {self.cayley!r}")
        if self.mode not in ("fast", "mem", "naive"):
            raise ValueError(f"mode must be 'fast', 'mem' or 'naive', got {self.mode!r}")
        if self.path not in ("auto", "input", "weight"):
            raise ValueError(f"path must be 'auto', 'input' or 'weight', got {self.path!r}")
        if self.base_quant not in ("none", "int8"):
            raise ValueError(f"base_quant must be 'none' or 'int8', got {self.base_quant!r}")
        if self.bias_placement not in ("before_rotation", "after_rotation"):
            raise ValueError(
                "bias_placement must be 'before_rotation' or 'after_rotation', "
                f"got {self.bias_placement!r}"
            )
        if self.on_indivisible not in ("raise", "skip"):
            raise ValueError(
                f"on_indivisible must be 'raise' or 'skip', got {self.on_indivisible!r}"
            )
        if int(self.quant_group_size) < 2:
            raise ValueError(f"quant_group_size must be >= 2, got {self.quant_group_size}")
        if self.clip_warmup_steps < 0:
            raise ValueError(f"clip_warmup_steps must be >= 0, got {self.clip_warmup_steps}")

    @property
    def poet_group_lr(self) -> float:
        """Learning rate of the rotation parameters: ``poet_lr * poet_lr_scale``."""
        return self.poet_lr * self.poet_lr_scale
