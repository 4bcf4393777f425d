"""Which in-context algorithm does the learned update implement? (Lutz et al., ICML 2026, Sec. 4)

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification" (arXiv 2604.11613). The paper's claim is that the emergent algorithm is **not
gradient descent** (the hypothesis of von Oswald et al. 2023 / Ahn et al. 2023 for linear
attention) but a coupled, label-aware mean shift. We test it by fitting both candidate rules,
each a small parametric family, to a trained model's probe logits on one bank of episodes and
measuring how well each reproduces the logits on *other* episodes.

Map of this module:

* k-step in-context gradient descent on the squared loss from ``W = 0`` with one step size
  per step, ``W_{t+1} = W_t - eta_t (1/N) sum_i (W_t x_i - y_i) x_i^T``, logits
  ``alpha W_k x_q`` (``k + 1`` parameters)                              -> :func:`gd_rule_logits`
* label-aware mean shift, one softmax step per layer over the mixed feature-label Gram
  ``S_ji = beta_l <x_j, x_i> + phi_l <y_j, y_i>``, moving every token towards the
  attention-weighted mean of the context,
  ``x_j += gamma_l sum_i A_ji x_i``, ``y_j += lambda_l sum_i A_ji y_i``; logits
  ``alpha y_q`` (``4 L + 1`` parameters)                               -> :func:`mean_shift_logits`
* least-squares fit of a rule's parameters to the model's centred logits (Adam, float64)
                                                                       -> :func:`fit_rule`
* logit agreement on held-out episodes: prediction agreement (same argmax) and
  ``R^2 = 1 - |l_rule - l_model|^2 / |l_model|^2`` of the centred logits   -> :func:`agreement`
* both rules against one model                                          -> :func:`match_rules`

Logits are compared after centring (subtracting the mean over classes): the softmax, and so
the model, ignores a constant added to all logits of an episode.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from symicl.episodes import one_hot_labels
from symicl.transformer import EquivariantICLTransformer

RULES = ("gd", "mean_shift")


def centred(logits: torch.Tensor) -> torch.Tensor:
    """Logits minus their mean over classes (what the softmax depends on)."""
    return logits - logits.mean(-1, keepdim=True)


def gd_rule_logits(x, y, xq, params: torch.Tensor) -> torch.Tensor:
    """Probe logits of k-step in-context GD; ``params = [alpha, eta_1, ..., eta_k]``.

    ``x (B, N, d)``, one-hot ``y (B, N, C)`` (zero rows = unlabeled, left out of the loss),
    ``xq (B, d)``. With ``k = 1`` this is the prototype classifier
    ``alpha eta_1 (1/N) sum_i y_i <x_i, x_q>``.

    >>> x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]); y = torch.eye(2)[None]
    >>> gd_rule_logits(x, y, torch.tensor([[2.0, 1.0]]), torch.tensor([1.0, 1.0]))
    tensor([[1.0000, 0.5000]])
    """
    alpha, etas = params[0], params[1:]
    mask = (y.sum(-1) > 0).to(x.dtype)  # (B, N)
    n_lab = mask.sum(1).clamp_min(1.0)[:, None, None]
    w = torch.zeros(x.shape[0], y.shape[-1], x.shape[-1], dtype=x.dtype)
    for eta in etas:
        resid = (torch.einsum("bcd,bnd->bnc", w, x) - y) * mask[..., None]
        w = w - eta * torch.einsum("bnc,bnd->bcd", resid, x) / n_lab
    return alpha * torch.einsum("bcd,bd->bc", w, xq)


def mean_shift_logits(x, y, xq, params: torch.Tensor) -> torch.Tensor:
    """Probe logits of the L-layer label-aware mean shift; ``params = [alpha, (beta, phi,
    gamma, lambda) per layer]``.

    Every token ``j`` (context points and the probe ``[x_q; 0]``) attends to the context
    with ``softmax_i(beta <x_j, x_i> + phi <y_j, y_i>)`` and moves by ``gamma`` (features)
    and ``lambda`` (labels) times the attention-weighted context mean; the logits are
    ``alpha`` times the probe's label slot after the last layer.

    >>> x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]]); y = torch.eye(2)[None]
    >>> p = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0])  # beta = 0: uniform attention
    >>> mean_shift_logits(x, y, torch.tensor([[2.0, 1.0]]), p)
    tensor([[0.5000, 0.5000]])
    """
    alpha, layers = params[0], params[1:].view(-1, 4)
    n = x.shape[1]
    feats = torch.cat([x, xq[:, None]], dim=1)
    labels = torch.cat([y, torch.zeros_like(y[:, :1])], dim=1)
    for beta, phi, gamma, lam in layers:
        scores = beta * feats @ feats[:, :n].mT + phi * labels @ labels[:, :n].mT
        attn = torch.softmax(scores, dim=-1)  # (B, N+1, N)
        feats = feats + gamma * attn @ feats[:, :n]
        labels = labels + lam * attn @ labels[:, :n]
    return alpha * labels[:, -1]


def _rule_fn(rule: str):
    if rule == "gd":
        return gd_rule_logits
    if rule == "mean_shift":
        return mean_shift_logits
    raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")


def initial_params(rule: str, size: int) -> list[torch.Tensor]:
    """Starting points of a fit (it keeps the best): ``size`` = k (GD steps) or L (layers).

    GD starts from step sizes 0.2 and 0.5; the mean shift from a near-uniform (``beta =
    0.05``, where it is close to the prototype rule), a moderate (0.3) and a sharp (1.0)
    feature kernel, with ``phi = gamma = 0`` and ``lambda = 1``.
    """
    if rule == "gd":
        return [torch.tensor([1.0] + [eta] * size, dtype=torch.float64) for eta in (0.2, 0.5)]
    if rule == "mean_shift":
        return [
            torch.tensor([1.0] + [beta, 0.0, 0.0, 1.0] * size, dtype=torch.float64)
            for beta in (0.05, 0.3, 1.0)
        ]
    raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")


def fit_rule(
    rule: str,
    size: int,
    batch: dict[str, torch.Tensor],
    target: torch.Tensor,
    steps: int = 400,
    lr: float = 0.05,
) -> torch.Tensor:
    """Parameters of ``rule`` minimising the mean squared error to centred ``target`` logits.

    ``batch`` holds ``x``, integer ``y`` (``-1`` = unlabeled) and ``xq``; ``target`` is
    ``(B, C)``. Adam in float64 from each start of :func:`initial_params`; returns the
    parameters with the lowest loss seen.
    """
    fn = _rule_fn(rule)
    x, xq = batch["x"].double(), batch["xq"].double()
    y = one_hot_labels(batch["y"], target.shape[-1]).double()
    goal = centred(target.double())
    best, best_loss = None, float("inf")
    for start in initial_params(rule, size):
        params, loss = _adam_fit(fn, start, x, y, xq, goal, steps, lr)
        if best is None or loss < best_loss:
            best, best_loss = params, loss
    return best


def _adam_fit(fn, start, x, y, xq, goal, steps, lr):
    params = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([params], lr=lr)
    best, best_loss = params.detach().clone(), float("inf")
    for _ in range(steps):
        opt.zero_grad()
        loss = ((centred(fn(x, y, xq, params)) - goal) ** 2).mean()
        value = float(loss.detach())
        if value != value or value == float("inf"):
            break
        if value < best_loss:
            best, best_loss = params.detach().clone(), value
        loss.backward()
        opt.step()
    return best, best_loss


def agreement(rule_logits: torch.Tensor, model_logits: torch.Tensor) -> dict[str, float]:
    """Prediction agreement and ``R^2`` of centred logits between a rule and the model.

    >>> l = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    >>> agreement(l, l)
    {'agree': 1.0, 'r2': 1.0}
    """
    a, b = centred(rule_logits.double()), centred(model_logits.double())
    agree = float((a.argmax(-1) == b.argmax(-1)).double().mean())
    r2 = 1.0 - float(((a - b) ** 2).sum() / (b**2).sum().clamp_min(1e-300))
    return {"agree": agree, "r2": r2}


@dataclass
class RuleMatch:
    """One candidate rule fitted to one model: its parameters and held-out agreement."""

    rule: str  # "gd" or "mean_shift"
    size: int  # k (GD steps) or L (mean-shift layers)
    params: list[float]
    agree: float  # fraction of held-out episodes where rule and model predict the same class
    r2: float  # R^2 of the rule's centred logits against the model's, held-out episodes
    accuracy: float  # the fitted rule's own probe accuracy on the held-out episodes
    extra: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``"GD k=4"`` or ``"mean shift L=2"``."""
        return f"GD k={self.size}" if self.rule == "gd" else f"mean shift L={self.size}"

    @property
    def n_params(self) -> int:
        """Number of fitted parameters."""
        return len(self.params)


@torch.no_grad()
def model_logits(model: EquivariantICLTransformer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's probe logits in float64 (eval mode, on a copy)."""
    ref = copy.deepcopy(model).double().eval()
    y = one_hot_labels(batch["y"], model.n_classes).double()
    return ref(batch["x"].double(), y, batch["xq"].double())


def match_rules(
    model: EquivariantICLTransformer,
    fit_batch: dict[str, torch.Tensor],
    test_batch: dict[str, torch.Tensor],
    gd_steps: tuple[int, ...] = (1, 2, 4),
    steps: int = 400,
) -> list[RuleMatch]:
    """Fit k-step GD (each ``k`` of ``gd_steps``) and an ``L``-layer label-aware mean shift
    (``L`` = the model's depth) to ``model`` on ``fit_batch``; score them on ``test_batch``.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> from symicl.transformer import prototype_model
    >>> sampler = LinearTaskSampler(4, 2, 16, seed=0)
    >>> fits = match_rules(prototype_model(4, 2), sampler.sample(64), sampler.sample(64, 64),
    ...                    gd_steps=(1,), steps=100)
    >>> [m.label for m in fits], round(fits[0].r2, 6)   # one GD step *is* the prototype rule
    (['GD k=1', 'mean shift L=1'], 1.0)
    """
    target_fit, target_test = model_logits(model, fit_batch), model_logits(model, test_batch)
    y_test = one_hot_labels(test_batch["y"], model.n_classes).double()
    out = []
    for rule, size in [("gd", k) for k in gd_steps] + [("mean_shift", model.n_layers)]:
        params = fit_rule(rule, size, fit_batch, target_fit, steps=steps)
        with torch.no_grad():
            logits = _rule_fn(rule)(
                test_batch["x"].double(), y_test, test_batch["xq"].double(), params
            )
        scores = agreement(logits, target_test)
        acc = float((logits.argmax(-1) == test_batch["yq"]).double().mean())
        out.append(RuleMatch(rule, size, params.tolist(), scores["agree"], scores["r2"], acc))
    return out


def best_match(matches: list[RuleMatch]) -> RuleMatch:
    """The rule with the highest held-out ``R^2`` (ties: higher prediction agreement)."""
    return max(matches, key=lambda m: (m.r2, m.agree))
