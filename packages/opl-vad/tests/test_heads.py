"""MIL and RTFM losses, the frame protocol, and AUC against scikit-learn."""

import numpy as np
import pytest
import torch
from opl_vad.frame_protocol import snippet_to_frame
from opl_vad.mil import MILHead, mil_ranking_loss
from opl_vad.rtfm import RTFMHead, rtfm_loss
from sklearn.metrics import roc_auc_score
from torchmetrics.classification import BinaryAUROC


def test_mil_loss_zero_on_separated_bags_and_order_invariant():
    s = torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    y = torch.tensor([1, 0, 1])
    assert float(mil_ranking_loss(s, y, 0.0, 0.0)) == 0.0
    rng = np.random.default_rng(0)
    s = torch.rand(4, 8, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([1, 0, 1, 0])
    hinge = mil_ranking_loss(s, y, 0.0, 0.0)
    perm = torch.as_tensor(rng.permutation(8))
    s2 = s.clone()
    s2[1] = s[1, perm]  # shuffle the snippets of a normal bag
    assert float(mil_ranking_loss(s2, y, 0.0, 0.0)) == pytest.approx(float(hinge))


def test_mil_hinge_value():
    s = torch.tensor([[0.2, 0.6], [0.1, 0.3]])
    assert float(mil_ranking_loss(s, torch.tensor([1, 0]), 0.0, 0.0)) == pytest.approx(0.7)


def test_batch_needs_both_kinds_of_bags():
    with pytest.raises(ValueError, match="both normal and abnormal"):
        mil_ranking_loss(torch.rand(2, 4), torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="0 \\(normal\\) or 1"):
        mil_ranking_loss(torch.rand(2, 4), torch.tensor([1, 2]))


def test_rtfm_prefers_large_abnormal_magnitudes():
    scores = torch.full((2, 6), 0.5)
    good = torch.tensor([[100.0] * 3 + [1.0] * 3, [0.0] * 6])
    bad = torch.tensor([[0.0] * 6, [100.0] * 3 + [1.0] * 3])
    y = torch.tensor([1, 0])
    assert float(rtfm_loss(scores, good, y)) < float(rtfm_loss(scores, bad, y))


def test_heads_shapes_and_gradients():
    z = torch.randn(4, 10, 16, requires_grad=True)
    y = torch.tensor([1, 0, 1, 0])
    for head in (MILHead(16), RTFMHead(16)):
        loss, scores = head.loss(z, y)
        assert scores.shape == (4, 10) and bool(((scores > 0) & (scores < 1)).all())
        loss.backward()
        assert z.grad is not None and bool(torch.isfinite(z.grad).all())


def test_frame_expansion_and_auc_equal_sklearn():
    rng = np.random.default_rng(1)
    scores = torch.as_tensor(rng.random(12), dtype=torch.float32)
    labels = torch.as_tensor(rng.integers(0, 2, 12))
    frames = snippet_to_frame(scores)
    assert frames.shape == (12 * 16,)
    assert torch.equal(frames.reshape(12, 16), scores[:, None].expand(12, 16))
    frame_labels = labels.repeat_interleave(16)
    got = float(BinaryAUROC()(frames, frame_labels))
    assert got == pytest.approx(roc_auc_score(frame_labels.numpy(), frames.numpy()), abs=1e-6)
    assert got == pytest.approx(roc_auc_score(labels.numpy(), scores.numpy()), abs=1e-6)
    assert snippet_to_frame(scores, n_frames=200).shape == (200,)
    assert snippet_to_frame(scores, n_frames=5).tolist() == [float(scores[0])] * 5


def test_mgfn_magnitude_contrastive_closed_form_and_shapes():
    import torch.nn.functional as F
    from opl_vad.mgfn import (
        MARGIN,
        MC_WEIGHT,
        SEP_WEIGHT,
        SMOOTHNESS,
        SPARSITY,
        MGFNHead,
        mgfn_loss,
    )

    labels = torch.tensor([1, 1, 0, 0])
    scores = torch.tensor([[0.9, 0.9, 0.9, 0.1], [0.9, 0.9, 0.9, 0.1],
                           [0.2, 0.2, 0.2, 0.2], [0.2, 0.2, 0.2, 0.2]])  # fmt: skip
    far = torch.tensor([[300.0, 300, 300, 1], [300, 300, 300, 1], [1, 1, 1, 0], [1, 1, 1, 0]])
    video = torch.tensor([0.9, 0.9, 0.2, 0.2])  # mean score of the top-3 magnitudes
    smooth = float(((scores[:, 1:] - scores[:, :-1]) ** 2).sum())
    rest = F.binary_cross_entropy(video, labels.float()) + SMOOTHNESS * smooth
    rest = rest + SPARSITY * scores[2:].reshape(-1).norm()
    # classes more than the margin apart, identical within a class: the MC term vanishes
    assert float(mgfn_loss(scores, far, labels)) == pytest.approx(float(rest), rel=1e-6)
    # equal magnitudes everywhere: only the separation term, (margin - 0)^2, is left
    same = torch.tensor([[1.0, 1, 1, 0]]).repeat(4, 1)  # same top-3 snippets as above
    extra = MC_WEIGHT * SEP_WEIGHT * MARGIN**2
    assert float(mgfn_loss(scores, same, labels)) == pytest.approx(float(rest) + extra, rel=1e-6)
    head = MGFNHead(12, hidden=8, heads=2)
    z = torch.randn(4, 6, 12, requires_grad=True)
    loss, s = head.loss(z, labels)
    loss.backward()
    assert s.shape == (4, 6) and torch.isfinite(z.grad).all() and ((s > 0) & (s < 1)).all()
    with pytest.raises(ValueError, match="both normal and abnormal"):
        head.loss(z, torch.ones(4, dtype=torch.long))


def test_mgfn_through_the_lightning_module_behind_gopl():
    from opl_vad.lightning import VADModule

    module = VADModule(12, head="mgfn", projection="gopl", rank_task=2, rank_face=2)
    batch = {"x": torch.randn(4, 6, 12), "y": torch.tensor([1, 0, 1, 0]),
             "face": torch.rand(4, 6)}  # fmt: skip
    loss = module.training_step(batch, 0)
    loss.backward()
    assert torch.isfinite(loss) and module(batch["x"]).shape == (4, 6)
