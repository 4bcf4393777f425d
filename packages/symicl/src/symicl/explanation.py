"""``symicl explain``: the paper's mechanism analysis of one trained model, and its study over seeds.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613), Sec. 4.

* a symmetric copy of any model (``none``/``augment`` are Reynolds-projected) whose
  parameters are the six commutant coefficients per matrix       -> :func:`as_tied`
* one model explained: the extracted recursion with its inert coefficients pruned
  (:mod:`.mechanism`), the per-layer split of every update into true-class, other-class and
  residual terms, and k-step GD / label-aware mean shift fitted to its logits
  (:mod:`.rule_matching`)                                          -> :func:`explain_model`
* the same over seeds and tasks, as result tables with mean +- sd, and an untrained model
  of the same seed as the control of the rule fits                  -> :func:`mechanism_study`

What this does and does not show: the extracted recursion is an algebraic rewrite of the
forward pass of a symmetric model, so its agreement with the model (``recursion err``) holds
for *any* weights, trained or not; it is a check of the code, not a finding. The findings are
the fitted-rule agreements (compared with the same fits on an untrained model) and how the
trained model weights the true-class, other-class and residual terms.
"""

from __future__ import annotations

import copy
import statistics
from dataclasses import dataclass

import numpy as np
import torch
from icml26_shared.results import Table

from symicl import symmetry as sym
from symicl.episodes import one_hot_labels
from symicl.mechanism import decomposition_summary, inert_parameters, prune_recursion
from symicl.recursion import Recursion, extract_recursion
from symicl.rule_matching import RuleMatch, best_match, centred, match_rules
from symicl.transformer import EquivariantICLTransformer


def as_tied(model: EquivariantICLTransformer) -> EquivariantICLTransformer:
    """A ``tied`` copy of ``model`` holding the commutant coefficients of its (projected) weights.

    A ``tied`` model is copied; for ``none``/``augment`` the copy equals the Reynolds
    projection of the model (what :func:`symicl.recursion.extract_recursion` reads with
    ``project=True``).
    """
    if model.symmetry == "tied":
        return copy.deepcopy(model)
    out = EquivariantICLTransformer(
        model.d, model.n_classes, model.n_layers, model.n_heads, "tied", model.attention
    )
    with torch.no_grad():
        qk = sym.coefficients(sym.project(model.qk.detach(), model.d, model.n_classes),
                              model.d, model.n_classes)  # fmt: skip
        ov = sym.coefficients(sym.project(model.ov.detach(), model.d, model.n_classes),
                              model.d, model.n_classes)  # fmt: skip
        out.qk_coef.copy_(qk)
        out.ov_coef.copy_(ov)
    return out


@dataclass
class Explanation:
    """What :func:`explain_model` found for one model."""

    recursion: Recursion  # pruned: inert coefficients zeroed and marked
    decomposition: list[dict]  # rows of :func:`symicl.mechanism.decomposition_summary`
    rules: list[RuleMatch]  # fitted candidate rules, held-out agreement
    recursion_err: float  # max |centred logit| difference, pruned recursion vs model
    accuracy: float  # the model's probe accuracy on the held-out episodes

    @property
    def best(self) -> RuleMatch:
        """The candidate rule that reproduces the model's logits best (held-out R^2)."""
        return best_match(self.rules)

    def to_dict(self) -> dict:
        """Plain-JSON form (``symicl explain --out``)."""
        return {
            "recursion": self.recursion.to_dict(),
            "recursion_err": self.recursion_err,
            "accuracy": self.accuracy,
            "decomposition": self.decomposition,
            "rules": [
                {
                    "rule": m.label,
                    "n_params": m.n_params,
                    "params": m.params,
                    "agree": m.agree,
                    "r2": m.r2,
                    "accuracy": m.accuracy,
                }
                for m in self.rules
            ],  # fmt: skip
            "best_rule": self.best.label,
        }


def explain_model(
    model: EquivariantICLTransformer,
    fit_batch: dict[str, torch.Tensor],
    test_batch: dict[str, torch.Tensor],
    gd_steps: tuple[int, ...] = (1, 2, 4),
    fit_steps: int = 400,
) -> Explanation:
    """Explain one model: prune inert coefficients, decompose its updates, fit candidate rules.

    ``fit_batch`` (with ``x``, ``y``, ``xq``, ``yq``) is where inertness is probed and the rules
    are fitted; ``test_batch`` is where the decomposition and every agreement are measured.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> _ = torch.manual_seed(0)
    >>> model = EquivariantICLTransformer(4, 2, n_layers=1, n_heads=1, init_scale=0.5)
    >>> s = LinearTaskSampler(4, 2, 8, seed=0)
    >>> ex = explain_model(model, s.sample(32), s.sample(32, 32), gd_steps=(1,), fit_steps=20)
    >>> ex.recursion.inert["ov"][0][0][:3], ex.recursion_err < 1e-10
    ([True, True, True], True)
    """
    tied = as_tied(model)
    masks = inert_parameters(tied, fit_batch)
    rec = prune_recursion(extract_recursion(tied), masks)
    y1 = one_hot_labels(test_batch["y"], model.n_classes)
    got = torch.from_numpy(rec.run(test_batch["x"], y1, test_batch["xq"]))
    with torch.no_grad():
        ref = copy.deepcopy(tied).double().eval()
        expect = ref(test_batch["x"].double(), y1.double(), test_batch["xq"].double())
    err = float((centred(got) - centred(expect)).abs().max())
    accuracy = float((expect.argmax(-1) == test_batch["yq"]).double().mean())
    decomposition = decomposition_summary(
        rec, test_batch["x"], test_batch["y"], test_batch["xq"], test_batch["yq"]
    )
    rules = match_rules(tied, fit_batch, test_batch, gd_steps, fit_steps)
    return Explanation(rec, decomposition, rules, err, accuracy)


# ---------------------------------------------------------------- study over seeds


def mean_sd(values: list[float], digits: int = 3) -> str:
    """``"mean ± sd"`` over seeds (sample sd; a single value is shown alone).

    >>> mean_sd([0.9, 0.8, 1.0])
    '0.900 ± 0.100'
    """
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return ""
    if len(vals) == 1:
        return f"{vals[0]:.{digits}f}"
    return f"{statistics.mean(vals):.{digits}f} ± {statistics.stdev(vals):.{digits}f}"


def inert_names(rec: Recursion, layer: int, key: str) -> str:
    """Names of the coefficients inert in every head of ``layer`` (``qk`` or ``ov``)."""
    mask = np.asarray(rec.inert[key][layer], dtype=bool).all(0)  # over heads
    prime = "'" if key == "ov" else ""
    names = [n + prime for n, m in zip(sym.COEFFICIENT_NAMES, mask, strict=True) if m]
    return ", ".join(names) or "none"


def mechanism_study(
    tasks: list[tuple[int, int, int]],
    depth: int,
    n_heads: int,
    steps: int,
    episodes: int,
    gd_steps: list[int],
    fit_steps: int,
    seeds: list[int],
    batch_size: int = 64,
    lr: float = 1e-2,
) -> tuple[list[Table], list[str]]:
    """Train a ``tied`` model per task and seed, explain it, and tabulate mean ± sd over seeds.

    Every seed trains its own model (:func:`symicl.lightning.train_classifier`) and draws its
    own fit/test banks of ``episodes`` episodes each; the untrained model of the same seed
    (the initial weights) gets the same rule fits as a control.
    """
    from icml26_shared.progress import progress

    from symicl.episodes import LinearTaskSampler
    from symicl.lightning import ICLClassifierModule, train_classifier

    found: dict = {}
    jobs = [(tuple(t), s) for t in tasks for s in seeds]
    for task, seed in progress(jobs, desc="explain", total=len(jobs)):
        import lightning.pytorch as pl

        pl.seed_everything(seed, verbose=False)
        untrained = ICLClassifierModule(*task[:2], n_layers=depth, n_heads=n_heads).model
        module = train_classifier(
            *task, n_layers=depth, n_heads=n_heads, symmetry="tied", steps=steps,
            batch_size=batch_size, lr=lr, seed=seed,
        )  # fmt: skip
        sampler = LinearTaskSampler(*task, seed=seed + 3000)
        fit, test = sampler.sample(episodes), sampler.sample(episodes, start=episodes)
        ex = explain_model(module.model, fit, test, tuple(gd_steps), fit_steps)
        control = match_rules(untrained, fit, test, tuple(gd_steps), fit_steps)
        found[task, seed] = (ex, control)
    return _tables(tasks, seeds, depth, steps, episodes, found)


def _task_text(task) -> str:
    return f"d={task[0]} C={task[1]} N={task[2]}"


def _tables(tasks, seeds, depth, steps, episodes, found):
    setting = (
        f"tied L={depth} models, {steps} Adam steps, {len(seeds)} seeds (one model per seed); "
        f"{episodes} fit and {episodes} held-out test episodes per seed; mean ± sd over seeds."
    )
    rules = Table(
        "Which rule does the learned update match? (held-out logit agreement)",
        ["task", "rule", "params", "agree", "R2", "rule acc", "best in", "untrained R2"],
        notes=(
            setting + " Each rule's parameters are fitted (least squares on centred logits, "
            "Adam, float64, best of 2-3 starts) to the model's logits on the fit episodes; "
            "agree = fraction of test episodes where rule and model predict the same class; "
            "R2 = 1 - |l_rule - l_model|^2 / |l_model|^2 of the centred test logits; rule "
            "acc = the fitted rule's own accuracy; best in = seeds where this rule has the "
            "highest R2; untrained R2 = the same fit against the untrained model of the seed "
            "(control: a rule family that matched any weights would score high there too)."
        ),
    )
    summary = []
    for task in map(tuple, tasks):
        exs = [found[task, s][0] for s in seeds]
        controls = [found[task, s][1] for s in seeds]
        labels = [m.label for m in exs[0].rules]
        bests = [ex.best.label for ex in exs]
        rules.add_row(
            task=_task_text(task), rule="the model itself", params="",
            agree="", R2="", **{"rule acc": mean_sd([ex.accuracy for ex in exs])},
        )  # fmt: skip
        for k, label in enumerate(labels):
            rules.add_row(
                task=_task_text(task), rule=label, params=exs[0].rules[k].n_params,
                agree=mean_sd([ex.rules[k].agree for ex in exs]),
                R2=mean_sd([ex.rules[k].r2 for ex in exs]),
                **{"rule acc": mean_sd([ex.rules[k].accuracy for ex in exs]),
                   "best in": f"{bests.count(label)}/{len(seeds)}",
                   "untrained R2": mean_sd([c[k].r2 for c in controls])},
            )  # fmt: skip
        k = max(range(len(labels)), key=lambda i: statistics.mean(ex.rules[i].r2 for ex in exs))
        winner = labels[k]
        ms = labels.index(next(m for m in labels if m.startswith("mean shift")))
        gd_best = max(
            (i for i, m in enumerate(labels) if m.startswith("GD")),
            key=lambda i: statistics.mean(ex.rules[i].r2 for ex in exs),
        )
        summary.append(
            f"{_task_text(task)}: best rule (highest mean held-out R2) {winner}, best in "
            f"{bests.count(winner)}/{len(seeds)} seeds (R2 "
            f"{mean_sd([ex.rules[k].r2 for ex in exs])}, agree "
            f"{mean_sd([ex.rules[k].agree for ex in exs])}); best GD "
            f"{labels[gd_best]} R2 {mean_sd([ex.rules[gd_best].r2 for ex in exs])}, "
            f"label-aware mean shift R2 {mean_sd([ex.rules[ms].r2 for ex in exs])}"
        )

    decomp = Table(
        "Decomposition of each layer's update into true-class, other-class and residual terms",
        ["task", "layer", "token", "attn on true class", "chance", "true share",
         "other share", "residual share", "margin gain"],
        notes=(
            setting + " On the test episodes, with the pruned recursion. attn on true class "
            "= attention mass on context points of the token's true class (probe: its label; "
            "context point: its own label), mean over heads; chance = that class's share of "
            "the context (uniform attention); shares = |T|, |O|, |R| over |T|+|O|+|R| for "
            "T = sum over true-class points of A_ji [a' x_i; f' y_i], O = the same over the "
            "other classes, R = the class-blind part sum_i A_ji [(b's_i + c't_i) 1; (e's_i + "
            "h't_i) 1] (T + O + R = the layer's update, tested exactly); margin gain = the "
            "layer's change of the probe's logit margin y_q[c*] - max_{c != c*} y_q[c]."
        ),
    )  # fmt: skip
    for task in map(tuple, tasks):
        exs = [found[task, s][0] for s in seeds]
        for i, row in enumerate(exs[0].decomposition):
            rows = [ex.decomposition[i] for ex in exs]
            decomp.add_row(
                task=_task_text(task), layer=row["layer"], token=row["token"],
                **{"attn on true class": mean_sd([r["attn_true"] for r in rows]),
                   "chance": mean_sd([r["chance"] for r in rows]),
                   "true share": mean_sd([r["true_share"] for r in rows]),
                   "other share": mean_sd([r["other_share"] for r in rows]),
                   "residual share": mean_sd([r["residual_share"] for r in rows]),
                   "margin gain": mean_sd([r["margin_gain"] for r in rows])
                   if row["token"] == "probe" else ""},
            )  # fmt: skip

    inert = Table(
        "Coefficients that never receive a gradient (pruned, not reported as learned)",
        ["task", "layer", "inert in score (W_QK)", "inert in value (W_OV)", "same in all seeds",
         "recursion err (pruned)"],
        notes=(
            "A coefficient is inert when the probe's cross-entropy has zero gradient with "
            "respect to it (max |grad| <= 1e-9 x the largest gradient, float64, at the trained "
            "weights and at 3 random weight draws, on the fit episodes): training cannot move "
            "it, so its value is its initialisation and is not reported. The pruned recursion "
            "(inert coefficients set to 0) gives the model's centred logits to the recursion "
            "err shown (max over test episodes, float64): an algebraic identity that holds "
            "for any weights, not evidence about training."
        ),
    )  # fmt: skip
    for task in map(tuple, tasks):
        exs = [found[task, s][0] for s in seeds]
        for layer in range(depth):
            names = [(inert_names(ex.recursion, layer, "qk"),
                      inert_names(ex.recursion, layer, "ov")) for ex in exs]  # fmt: skip
            inert.add_row(
                task=_task_text(task), layer=layer,
                **{"inert in score (W_QK)": names[0][0], "inert in value (W_OV)": names[0][1],
                   "same in all seeds": str(len(set(names)) == 1),
                   "recursion err (pruned)": max(ex.recursion_err for ex in exs)},
            )  # fmt: skip
    return [rules, decomp, inert], summary
