"""POETLinear: identity at init, fast == naive == mem (values and gradients), merge, spectrum."""

import pytest
import torch
import torch.nn.functional as F
from poet_x.config import POETConfig
from poet_x.memory_accounting import SavedTensorMeter
from poet_x.poet_linear import POETLinear
from poet_x.quantized_base import dequantize_int8, quantize_int8

D = torch.float64


def _layer(
    mode="fast", path="input", cayley="exact", m=8, n=12, b=4, seed=0, q=0.3, dtype=D,
    bias_placement="before_rotation", base_quant="none", group=16,
):  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(m, n, generator=g, dtype=dtype)
    bias = torch.randn(m, generator=g, dtype=dtype)
    cfg = POETConfig(
        block_size=b, mode=mode, path=path, cayley=cayley, bias_placement=bias_placement,
        base_quant=base_quant, quant_group_size=group,
    )  # fmt: skip
    layer = POETLinear(w, bias, cfg, torch.Generator().manual_seed(seed + 1))
    with torch.no_grad():
        layer.q_in.copy_(torch.randn(layer.q_in.shape, generator=g, dtype=dtype) * q)
        layer.q_out.copy_(torch.randn(layer.q_out.shape, generator=g, dtype=dtype) * q)
    return layer


def test_identity_at_init_equals_row_normalised_linear():
    w = torch.randn(8, 12, dtype=D)
    layer = POETLinear(w, None, POETConfig(block_size=4), torch.Generator().manual_seed(0))
    x = torch.randn(3, 12, dtype=D)
    w0 = w / w.norm(dim=1, keepdim=True)
    assert torch.allclose(layer(x), F.linear(x, w0), atol=1e-14)
    assert layer.orthogonality_error() == 0.0


PATHS = [("fast", "input"), ("fast", "weight"), ("mem", "input"), ("naive", "input")]


@pytest.mark.parametrize("placement", ["before_rotation", "after_rotation"])
@pytest.mark.parametrize(("mode", "path"), PATHS)
def test_all_paths_equal_materialised_r_w0_p(mode, path, placement):
    layer = _layer(mode, path, bias_placement=placement)
    r, p = layer.dense_rotations()
    assert torch.allclose(r @ r.t(), torch.eye(8, dtype=D), atol=1e-12)
    x = torch.randn(2, 5, 12, dtype=D, requires_grad=True)
    y = layer(x)
    ref_w = r @ layer.base_weight() @ p
    if placement == "before_rotation":  # the authors' placement: y = R (W0 P x + b0)
        ref = (x @ (layer.base_weight() @ p).t() + layer.bias) @ r.t()
    else:  # y = R W0 P x + b0
        ref = x @ ref_w.t() + layer.bias
    assert torch.allclose(y, ref, atol=1e-12)
    assert torch.allclose(y, x @ ref_w.t() + layer.effective_bias(), atol=1e-12)
    # gradients against the naive dense computation of the same parameters
    gy = torch.randn_like(y)
    grads = torch.autograd.grad(y, [x, layer.q_in, layer.q_out, layer.bias], gy)
    naive = _layer("naive", bias_placement=placement)
    yn = naive(x)
    grads_n = torch.autograd.grad(yn, [x, naive.q_in, naive.q_out, naive.bias], gy)
    for a, c in zip(grads, grads_n, strict=True):
        assert torch.allclose(a, c, atol=1e-11)


def test_float32_input_centric_matches_materialised():
    layer = _layer("fast", "input", cayley="neumann", m=32, n=64, b=8, q=0.05, dtype=torch.float32)
    x = torch.randn(7, 64)
    assert torch.allclose(
        layer(x), F.linear(x, layer.effective_weight(), layer.effective_bias()), atol=1e-5
    )


@pytest.mark.parametrize("placement", ["before_rotation", "after_rotation"])
@pytest.mark.parametrize("mode", ["fast", "mem"])
def test_gradcheck_float64(mode, placement):
    layer = _layer(mode, m=8, n=8, b=4, bias_placement=placement)
    x = torch.randn(3, 8, dtype=D, requires_grad=True)
    bias = layer.bias.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda bias: torch.func.functional_call(layer, {"bias": bias}, (x,)), (bias,)
    )

    qi = layer.q_in.detach().clone().requires_grad_()
    qo = layer.q_out.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: layer(x), (x,))
    assert torch.autograd.gradcheck(
        lambda qi, qo: _functional(layer, x, qi, qo), (qi, qo), atol=1e-7
    )


def _functional(layer, x, qi, qo):
    return torch.func.functional_call(layer, {"q_in": qi, "q_out": qo}, (x,))


def test_mem_mode_gives_identical_gradients_to_fast_mode():
    fast, mem = _layer("fast", cayley="neumann", q=0.1), _layer("mem", cayley="neumann", q=0.1)
    x = torch.randn(6, 12, dtype=D, requires_grad=True)
    gy = torch.randn(6, 8, dtype=D)
    ga = torch.autograd.grad(fast(x), [x, fast.q_in, fast.q_out, fast.bias], gy)
    gb = torch.autograd.grad(mem(x), [x, mem.q_in, mem.q_out, mem.bias], gy)
    for a, c in zip(ga, gb, strict=True):
        assert torch.allclose(a, c, atol=1e-12)


def test_saved_activation_bytes_mem_below_fast_below_naive():
    sizes = {}
    x = torch.randn(4, 64, requires_grad=True)
    for mode in ("mem", "fast", "naive"):
        layer = _layer(mode, m=64, n=64, b=8, q=0.05, dtype=torch.float32)
        with SavedTensorMeter(layer) as meter:
            layer(x).sum()
        sizes[mode] = meter.bytes
    assert sizes["mem"] < sizes["fast"] < sizes["naive"]


def _saved(layer, x):
    """Every tensor autograd saves for the layer's backward (parameters and buffers included)."""
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        layer(x)
    return saved


def test_xq_saves_only_the_uint8_base_and_fewer_bytes_than_mem():
    m, n = 64, 128
    x = torch.randn(16, n, requires_grad=True)
    kw = dict(m=m, n=n, b=8, q=0.05, dtype=torch.float32, group=64)
    mem, xq = _layer("mem", **kw), _layer("mem", base_quant="int8", **kw)
    sizes = {}
    for name, layer in (("mem", mem), ("xq", xq)):
        with SavedTensorMeter(layer, count_resident=True) as meter:
            layer(x)
        sizes[name] = meter.bytes
    # mem holds the fp32 W~0 (4 mn bytes), XQ the uint8 codes (mn) + per-group scale/zero
    groups = m * n // 64
    assert sizes["mem"] - sizes["xq"] == 4 * m * n - (m * n + 2 * 4 * groups)
    big = [t for t in _saved(xq, x) if t.shape == (m, n)]
    assert len(big) == 1 and big[0].dtype == torch.uint8 and big[0] is xq.w_q
    assert not any(t.is_floating_point() and t.numel() >= m * n for t in _saved(xq, x))
    # excluding resident tensors, XQ saves exactly what mem saves (x only)
    with SavedTensorMeter(mem) as a:
        mem(x)
    with SavedTensorMeter(xq) as c:
        xq(x)
    assert a.bytes == c.bytes


def test_mem_saves_only_x_the_rotation_parameters_the_base_and_the_permutations():
    layer = _layer("mem", cayley="neumann", m=64, n=32, b=8, q=0.05, dtype=torch.float32)
    x = torch.randn(16, 32, requires_grad=True)
    expected = [x, layer.q_in, layer.q_out, layer.bias, layer.perm_in, layer.perm_out,
                layer.inv_perm_out, layer.w_tilde]  # fmt: skip
    saved = _saved(layer, x)
    assert len(saved) == len(expected)
    assert all(any(t is e for e in expected) for t in saved)
    assert not any(t.dim() == 3 for t in saved)  # no G blocks, no powers of Q
    with SavedTensorMeter(layer, count_resident=True) as meter:
        layer(x)
    assert meter.bytes == sum(t.numel() * t.element_size() for t in expected)


@pytest.mark.parametrize("cayley", ["neumann", "exact"])
@pytest.mark.parametrize("mode", ["fast", "mem"])
def test_analytic_cayley_backward_equals_naive_autograd_through_the_layer(mode, cayley):
    kw = dict(m=16, n=24, b=4, q=0.3, cayley=cayley)
    layer, naive = _layer(mode, **kw), _layer("naive", **kw)  # naive: plain-autograd map
    x = torch.randn(5, 24, dtype=D, requires_grad=True)
    gy = torch.randn(5, 16, dtype=D)
    ga = torch.autograd.grad(layer(x), [x, layer.q_in, layer.q_out, layer.bias], gy)
    gb = torch.autograd.grad(naive(x), [x, naive.q_in, naive.q_out, naive.bias], gy)
    for a, c in zip(ga, gb, strict=True):
        assert torch.allclose(a, c, atol=1e-11)


def test_xq_recompute_gradients_equal_autograd_through_the_dequantised_base():
    kw = dict(m=16, n=24, b=4, q=0.1, cayley="neumann", base_quant="int8", group=8)
    xq, ref = _layer("mem", **kw), _layer("fast", **kw)  # fast: autograd on dequantised W~0
    assert torch.equal(xq.w_q, ref.w_q)
    x = torch.randn(5, 24, dtype=D, requires_grad=True)
    gy = torch.randn(5, 16, dtype=D)
    ga = torch.autograd.grad(xq(x), [x, xq.q_in, xq.q_out, xq.bias], gy)
    gb = torch.autograd.grad(ref(x), [x, ref.q_in, ref.q_out, ref.bias], gy)
    for a, c in zip(ga, gb, strict=True):
        assert torch.allclose(a, c, atol=1e-12)


@pytest.mark.parametrize("placement", ["before_rotation", "after_rotation"])
def test_merge_keeps_function_with_either_bias_placement(placement):
    layer = _layer("mem", cayley="neumann", q=0.1, bias_placement=placement)
    x = torch.randn(5, 12, dtype=D)
    before, b0 = layer(x).detach(), layer.bias.detach().clone()
    lin = layer.to_linear()
    layer.merge_and_reinit()
    assert torch.allclose(layer(x), before, atol=1e-12)
    assert torch.allclose(lin(x), before, atol=1e-12)
    moved = not torch.allclose(layer.bias, b0)
    assert moved == (placement == "before_rotation")  # b0 <- R b0 only when placed before R


def test_merge_keeps_function_resets_q_and_draws_new_permutations():
    layer = _layer("fast", cayley="neumann", q=0.1)
    x = torch.randn(5, 12, dtype=D)
    before = layer(x).detach()
    perms = layer.perm_in.clone(), layer.perm_out.clone()
    layer.merge_and_reinit()
    assert torch.allclose(layer(x), before, atol=1e-12)
    assert layer.q_in.abs().max() == 0 and layer.q_out.abs().max() == 0
    assert not (torch.equal(perms[0], layer.perm_in) and torch.equal(perms[1], layer.perm_out))
    assert layer.n_merges == 1


def test_merge_with_pending_gradients_is_refused():
    layer = _layer()
    layer(torch.randn(2, 12, dtype=D)).sum().backward()
    with pytest.raises(RuntimeError, match="pending gradients"):
        layer.merge_and_reinit()


def test_spectrum_invariant_through_steps_and_merges_in_exact_mode():
    layer = _layer("fast", cayley="exact", m=16, n=24, b=4, q=0.0)
    s0 = torch.linalg.svdvals(layer.base_weight())
    opt = torch.optim.SGD([layer.q_in, layer.q_out], lr=0.05)
    x, t = torch.randn(32, 24, dtype=D), torch.randn(32, 16, dtype=D)
    for step in range(1, 61):
        loss = (layer(x) - t).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 12 == 0:
            opt.zero_grad(set_to_none=True)
            layer.merge_and_reinit()
    assert layer.n_merges == 5
    s1 = layer.singular_values()
    assert float(((s1 - s0).abs() / s0).max()) < 1e-10
    assert (
        float((layer(x) - t).pow(2).mean().detach()) < float(loss.detach()) + 1e-9
    )  # it did train


def test_quantised_base_within_half_a_step_and_smaller():
    w = torch.randn(16, 64)
    q, scale, zero = quantize_int8(w, 32)
    err = (dequantize_int8(q, scale, zero, 32) - w).abs().reshape(-1, 32)
    assert bool((err <= scale[:, None] / 2 + 1e-6).all())
    assert q.element_size() * q.numel() * 2 == w.to(torch.bfloat16).numel() * 2
    cfg = POETConfig(block_size=8, base_quant="int8", quant_group_size=32)
    layer = POETLinear(w, None, cfg, torch.Generator().manual_seed(0))
    assert layer.w_q.dtype == torch.uint8 and layer.w_tilde.numel() == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"block_size": 1}, "block_size must be >= 2"),
        ({"merge_interval": 0}, "merge_interval must be > 0"),
        ({"neumann_terms": 0}, "neumann_terms must be >= 1"),
    ],
)
def test_bad_config_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        POETConfig(**kwargs)


def test_bad_layers_rejected():
    with pytest.raises(ValueError, match="larger than"):
        POETLinear(torch.randn(4, 4), None, POETConfig(block_size=8))
    with pytest.raises(ValueError, match="not divisible"):
        POETLinear(torch.randn(6, 8), None, POETConfig(block_size=4))
    with pytest.raises(TypeError, match="floating-point"):
        POETLinear(torch.ones(4, 4, dtype=torch.int64), None, POETConfig(block_size=2))


def test_two_sided_procrustes_floor_is_never_beaten_fitting_a_linear_teacher():
    # min over orthogonal R, P of ||R W0 P - T||_F^2 = sum_i (sigma_i(W0) - sigma_i(T))^2
    # (von Neumann trace inequality); POET can only approach it, never go below.
    layer = _layer("mem", cayley="exact", m=8, n=8, b=4, q=0.0)
    layer.bias = None
    g = torch.Generator().manual_seed(7)
    teacher = torch.randn(8, 8, generator=g, dtype=D)
    floor = float(
        (torch.linalg.svdvals(layer.base_weight()) - torch.linalg.svdvals(teacher)).pow(2).sum()
    )
    opt = torch.optim.Adam([layer.q_in, layer.q_out], lr=0.05)
    x = torch.randn(256, 8, generator=g, dtype=D)
    start = float((layer.effective_weight() - teacher).pow(2).sum().detach())
    dists = []
    for step in range(1, 201):
        loss = (layer(x) - x @ teacher.T).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 40 == 0:
            opt.zero_grad(set_to_none=True)
            layer.merge_and_reinit()
            opt = torch.optim.Adam([layer.q_in, layer.q_out], lr=0.05)
        dists.append(float((layer.effective_weight() - teacher).pow(2).sum().detach()))
    assert min(dists) >= floor - 1e-9
    assert dists[-1] < start  # it did fit towards the teacher
