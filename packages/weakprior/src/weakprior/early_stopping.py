"""Early stopping for noise optimisation (paper Sec. 3, "improved early stopping").

* :func:`holdout_split` -- split the observed measurement entries of every sample at random
  into a fit part (``train_frac``, 90 %) and a validation part (the rest); the two masks are
  disjoint and their union is the observed set.
* :class:`HoldOutStopper` -- track the validation MSE per sample, keep the ``best_k`` (100)
  lowest losses seen so far, and return the *latest* iterate among those top-k. An iterate that
  enters the top-k when it arrives can only leave it when ``best_k`` better *later* iterates
  arrive, so the latest member of the final top-k is the last iterate that entered the top-k on
  arrival; the stopper keeps only that one image per sample. ``patience`` stops the run when no
  sample improved its best loss for that many iterations.
* :class:`WindowedVarianceStopper` -- DMPlug's ES-WMV baseline: the running variance of the
  last ``window`` (10) iterates; return the iterate of minimal windowed variance, stop after
  ``patience`` (100) iterations without a new minimum.
"""

from __future__ import annotations

import bisect
from collections import deque

import torch


def holdout_split(
    observed: torch.Tensor, train_frac: float = 0.9, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Disjoint fit / validation masks whose union is ``observed`` (split per sample).

    Every sample keeps ``round(train_frac * n_obs)`` of its observed entries for fitting,
    chosen uniformly at random; the generator is salted so that the split is independent of a
    mask drawn from the same integer seed.

    Examples
    --------
    >>> obs = torch.ones(2, 10)
    >>> fit, val = holdout_split(obs, 0.9, seed=0)
    >>> fit.sum(1).tolist(), val.sum(1).tolist(), bool(((fit + val) == obs).all())
    ([9.0, 9.0], [1.0, 1.0], True)
    """
    if not 0.0 < train_frac <= 1.0:
        raise ValueError(f"train_frac must lie in (0, 1], got {train_frac}")
    gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + 0x5EED)
    flat = (observed > 0.5).flatten(1)
    train = torch.zeros_like(flat)
    for i in range(flat.shape[0]):
        idx = flat[i].nonzero().squeeze(1)
        perm = idx[torch.randperm(len(idx), generator=gen)]
        train[i, perm[: round(train_frac * len(idx))]] = True
    val = flat & ~train
    return train.float().view(observed.shape), val.float().view(observed.shape)


class HoldOutStopper:
    """Hold-out validation early stopping with the paper's "latest of the best-k" choice.

    Examples
    --------
    >>> s = HoldOutStopper(best_k=2)
    >>> for i, loss in enumerate([3.0, 1.0, 2.0, 5.0]):
    ...     _ = s.update(torch.tensor([loss]), torch.full((1, 1), float(i)))
    >>> s.best().item()  # top-2 losses are iterates 1 and 2; the latest is 2
    2.0
    """

    def __init__(self, best_k: int = 100, patience: int = 1000) -> None:
        if best_k < 1 or patience < 1:
            raise ValueError("best_k and patience must be >= 1")
        self.best_k, self.patience = int(best_k), int(patience)
        self._losses: list[list[float]] = []
        self._chosen: torch.Tensor | None = None
        self.chosen_iteration: list[int] = []
        self._best: list[float] = []
        self._since_best = 0
        self.iteration = -1

    def update(self, val_loss: torch.Tensor, x: torch.Tensor) -> bool:
        """Record one iterate (``val_loss`` ``(B,)``, images ``(B, ...)``); ``True`` = stop."""
        self.iteration += 1
        val_loss = val_loss.detach().double()
        if self._chosen is None:
            b = val_loss.shape[0]
            self._losses = [[] for _ in range(b)]
            self._best = [float("inf")] * b
            self.chosen_iteration = [0] * b
            self._chosen = x.detach().clone()
        improved = False
        for i, loss in enumerate(val_loss.tolist()):
            top = self._losses[i]
            if len(top) < self.best_k or loss < top[-1]:
                bisect.insort(top, loss)
                del top[self.best_k :]
                self._chosen[i] = x[i].detach()
                self.chosen_iteration[i] = self.iteration
            if loss < self._best[i]:
                self._best[i] = loss
                improved = True
        self._since_best = 0 if improved else self._since_best + 1
        return self._since_best >= self.patience

    def best(self) -> torch.Tensor:
        """The chosen iterate of every sample."""
        if self._chosen is None:
            raise RuntimeError("HoldOutStopper.best() called before any update")
        return self._chosen


class WindowedVarianceStopper:
    """DMPlug's windowed-moving-variance early stopping (ES-WMV).

    Examples
    --------
    >>> s = WindowedVarianceStopper(window=2, patience=5)
    >>> for v in [0.0, 4.0, 4.5, 4.5, 9.0]:
    ...     _ = s.update(None, torch.full((1, 1), v))
    >>> s.best().item()  # the window (4.5, 4.5) has zero variance
    4.5
    """

    def __init__(self, window: int = 10, patience: int = 100) -> None:
        if window < 1 or patience < 1:
            raise ValueError("window and patience must be >= 1")
        self.window, self.patience = int(window), int(patience)
        self._buf: deque[torch.Tensor] = deque(maxlen=self.window)
        self._min_var: torch.Tensor | None = None
        self._chosen: torch.Tensor | None = None
        self._since_best = 0
        self._last: torch.Tensor | None = None

    def update(self, val_loss, x: torch.Tensor) -> bool:
        """Record one iterate (``val_loss`` is ignored); ``True`` = stop."""
        x = x.detach().clone()
        self._last = x
        self._buf.append(x)
        if len(self._buf) < self.window:
            return False
        stack = torch.stack(list(self._buf))  # (W, B, ...)
        var = stack.var(0, unbiased=False).flatten(1).mean(1)  # (B,)
        if self._min_var is None:
            self._min_var = var.clone()
            self._chosen = x.clone()
            return False
        better = var < self._min_var
        self._min_var = torch.where(better, var, self._min_var)
        self._chosen[better] = x[better]
        self._since_best = 0 if bool(better.any()) else self._since_best + 1
        return self._since_best >= self.patience

    def best(self) -> torch.Tensor:
        """The chosen iterate (the last one while fewer than ``window`` were seen)."""
        if self._chosen is None:
            if self._last is None:
                raise RuntimeError("WindowedVarianceStopper.best() called before any update")
            return self._last
        return self._chosen
