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
