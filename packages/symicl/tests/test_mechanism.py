"""The mechanism analysis: exact update decomposition, inert coefficients, pruning, rule fits."""

import numpy as np
import pytest
import torch
from symicl.baselines import gd_scores
from symicl.episodes import LinearTaskSampler, one_hot_labels
from symicl.explanation import as_tied, explain_model
from symicl.mechanism import (
    decompose_updates,
    inert_parameters,
    prune_recursion,
    trained_defects,
)
from symicl.recursion import Recursion, extract_recursion
from symicl.rule_matching import (
    agreement,
    centred,
    fit_rule,
    gd_rule_logits,
    mean_shift_logits,
    model_logits,
)
from symicl.transformer import EquivariantICLTransformer


def _episodes(d=5, c=3, n=12, b=48, seed=0, unlabeled=0.0):
    return LinearTaskSampler(d, c, n, unlabeled=unlabeled, seed=seed).sample(b)


@pytest.mark.parametrize("unlabeled", [0.0, 0.3])
def test_decomposition_terms_sum_to_the_models_layer_updates(unlabeled):
    torch.manual_seed(0)
    model = EquivariantICLTransformer(5, 3, 3, 2, init_scale=0.5).double()
    ep = _episodes(unlabeled=unlabeled)
    y = one_hot_labels(ep["y"], 3).double()
    _, states = model(ep["x"].double(), y, ep["xq"].double(), return_trajectory=True)
    parts = decompose_updates(extract_recursion(model), ep["x"], ep["y"], ep["xq"], ep["yq"])
    for layer, p in enumerate(parts):
        change = (states[layer + 1] - states[layer]).detach().numpy()
        assert np.allclose(p["update"], change, atol=1e-12)
        assert np.allclose(p["true"] + p["other"] + p["residual"], change, atol=1e-12)


def test_label_copying_layer_puts_the_probe_update_on_attended_classes():
    # planted: one head, value copies labels only (f' = 1), uniform attention (all scores 0);
    # the probe's label update is then the class frequencies: true term = share of class c*
    rec = Recursion(4, 2, "softmax", [[[0.0] * 6]], [[[0, 0, 0, 0, 1.0, 0]]])
    ep = _episodes(4, 2, 10, b=16)
    (p,) = decompose_updates(rec, ep["x"], ep["y"], ep["xq"], ep["yq"])
    counts = (ep["y"] == ep["yq"][:, None]).double().mean(1).numpy()
    assert np.allclose(p["true"][:, -1, 4 + 0] + p["true"][:, -1, 4 + 1], counts)
    assert np.allclose(p["attn_true"][:, -1], counts)
    assert np.allclose(p["residual"], 0.0)


def test_one_layer_inert_set_is_the_analytic_one():
    # L = 1: the probe's features are never read (a', b', c'), constant logit shifts (e', h')
    # cancel in the softmax, the probe's label row is zero (score f, e, h) and
    # c s(x_q) t(y_i) is the same for every labelled i (score c)
    torch.manual_seed(1)
    model = EquivariantICLTransformer(6, 3, 1, 2, init_scale=0.3)
    masks = inert_parameters(model, _episodes(6, 3, 10))
    assert masks["qk"][0].tolist() == [[False, False, True, True, True, True]] * 2
    assert masks["ov"][0].tolist() == [[True, True, True, True, False, True]] * 2
    full = inert_parameters(EquivariantICLTransformer(6, 3, 1, 1, "none"), _episodes(6, 3, 10))
    assert float(full["ov"].float().mean()) == pytest.approx(6 / 9 * 1 + 0)  # feature rows
    assert float(full["qk"].float().mean()) == pytest.approx(3 / 9)  # the probe's label rows


def test_inert_coefficients_do_not_change_the_probabilities_but_others_do():
    torch.manual_seed(2)
    model = EquivariantICLTransformer(5, 3, 2, 2, init_scale=0.4)
    ep = _episodes()
    masks = inert_parameters(model, ep)
    base = centred(model_logits(model, ep))
    for key, param in (("qk", "qk_coef"), ("ov", "ov_coef")):
        for idx in zip(*torch.nonzero(masks[key], as_tuple=True), strict=True):
            changed = as_tied(model)
            with torch.no_grad():
                getattr(changed, param)[idx] += 0.7
            assert torch.allclose(centred(model_logits(changed, ep)), base, atol=1e-10)
    live = torch.nonzero(~masks["ov"], as_tuple=True)
    changed = as_tied(model)
    with torch.no_grad():
        changed.ov_coef[tuple(i[0] for i in live)] += 0.7
    assert not torch.allclose(centred(model_logits(changed, ep)), base, atol=1e-6)


def test_pruned_recursion_keeps_the_centred_logits_and_marks_inert():
    torch.manual_seed(3)
    model = EquivariantICLTransformer(5, 3, 2, 2, init_scale=0.4)
    ep = _episodes()
    rec = extract_recursion(model)
    pruned = prune_recursion(rec, inert_parameters(model, ep))
    y = one_hot_labels(ep["y"], 3)
    a, b = rec.run(ep["x"], y, ep["xq"]), pruned.run(ep["x"], y, ep["xq"])
    assert np.abs((a - a.mean(-1, keepdims=True)) - (b - b.mean(-1, keepdims=True))).max() < 1e-12
    assert "inert" in pruned.describe() and Recursion.from_json(pruned.to_json()) == pruned
    assert "inert" not in rec.describe()


def test_trained_defect_ignores_inert_entries():
    torch.manual_seed(4)
    model = EquivariantICLTransformer(5, 2, 1, 1, "none")
    masks = inert_parameters(model, _episodes(5, 2))
    with torch.no_grad():  # symmetric on the live entries, random on the inert ones
        model.ov.copy_(torch.where(masks["ov"], torch.randn_like(model.ov), 0.0))
        model.ov[0, 0, 5:, 5:] = torch.eye(2)
    out = trained_defects(model, masks)
    assert out["ov_mean"] < 1e-6 and out["ov_inert"] == pytest.approx(5 / 7)


def test_gd_rule_agrees_with_the_gd_anchor():
    ep = _episodes()
    y = one_hot_labels(ep["y"], 3).double()
    x, xq = ep["x"].double(), ep["xq"].double()
    ours = gd_rule_logits(x, y, xq, torch.tensor([1.0, 0.3, 0.3, 0.3], dtype=torch.float64))
    assert torch.allclose(ours, gd_scores(x, y, xq, 3, 0.3), atol=1e-12)


def test_mean_shift_rule_is_a_one_head_symmetric_model():
    # planted: the tied model with only a, f (scores) and a', f' (values) nonzero is the mean shift
    torch.manual_seed(5)
    model = EquivariantICLTransformer(5, 3, 2, 1, init_scale=0.0).double()
    params = [1.0]
    with torch.no_grad():
        for layer, (beta, phi, gamma, lam) in enumerate(
            [(0.4, 0.3, 0.2, 1.1), (0.2, -0.5, 0.1, 0.7)]
        ):
            model.qk_coef[layer, 0, 0], model.qk_coef[layer, 0, 4] = beta, phi
            model.ov_coef[layer, 0, 0], model.ov_coef[layer, 0, 4] = gamma, lam
            params += [beta, phi, gamma, lam]
    ep = _episodes()
    y = one_hot_labels(ep["y"], 3).double()
    ours = mean_shift_logits(ep["x"].double(), y, ep["xq"].double(), torch.tensor(params).double())
    assert torch.allclose(ours, model_logits(model, ep), atol=1e-12)


def test_fit_recovers_a_planted_rule_and_prefers_it():
    # planted ground truth: logits made by 2-step GD; the GD fit reproduces them (R2 ~ 1) and
    # beats the mean shift fitted to the same logits
    ep, test = _episodes(b=128), _episodes(b=128, seed=1)
    truth = torch.tensor([2.0, 0.4, 0.6], dtype=torch.float64)

    def logits(batch, rule, params):
        y = one_hot_labels(batch["y"], 3).double()
        fn = gd_rule_logits if rule == "gd" else mean_shift_logits
        return fn(batch["x"].double(), y, batch["xq"].double(), params)

    target = logits(ep, "gd", truth)
    gd = fit_rule("gd", 2, ep, target, steps=300)
    ms = fit_rule("mean_shift", 1, ep, target, steps=300)
    r2_gd = agreement(logits(test, "gd", gd), logits(test, "gd", truth))["r2"]
    r2_ms = agreement(logits(test, "mean_shift", ms), logits(test, "gd", truth))["r2"]
    assert r2_gd > 0.999 and r2_ms < r2_gd


def test_explain_model_on_an_unconstrained_model_uses_its_projection():
    torch.manual_seed(6)
    model = EquivariantICLTransformer(4, 2, 1, 1, "none", init_scale=0.3)
    s = LinearTaskSampler(4, 2, 8, seed=0)
    ex = explain_model(model, s.sample(32), s.sample(32, 32), gd_steps=(1,), fit_steps=5)
    assert ex.recursion_err < 1e-10 and {m.label for m in ex.rules} == {"GD k=1", "mean shift L=1"}
    assert ex.to_dict()["best_rule"] in {"GD k=1", "mean shift L=1"}
