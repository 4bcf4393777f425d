"""Shapes data, 2D-grid tokenizer, SSIM and precision/recall."""

import pytest
import torch
import torch.nn.functional as F
from eostok.evaluation import ssim
from eostok.grid_tokenizer import GridTokenizer
from eostok.precision_recall import knn_radii, precision_recall
from eostok.shapes_data import COLOURS, load_shapes_images, render_shapes, shape_classes


def test_shapes_are_balanced_seeded_and_in_range():
    xtr, ytr, xte, yte = load_shapes_images(72, 36, 32, seed=0)
    assert xtr.shape == (72, 3, 32, 32) and xte.shape == (36, 3, 32, 32)
    assert torch.bincount(ytr, minlength=18).tolist() == [4] * 18
    assert float(xtr.min()) >= 0.0 and float(xtr.max()) <= 1.0
    again = load_shapes_images(72, 36, 32, seed=0)
    assert torch.equal(again[0], xtr) and torch.equal(again[1], ytr)
    assert not torch.equal(load_shapes_images(72, 36, 32, seed=1)[0], xtr)


def test_shapes_planted_colour_and_size():
    """The most saturated pixels carry the class colour; large shapes cover more pixels."""
    classes = shape_classes()
    labels = torch.arange(18).repeat(3)
    x = render_shapes(labels, 32, seed=0)
    sat = x.max(1).values - x.min(1).values  # (N, H, W); the grey background has ~0
    for img, lab, s in zip(x, labels.tolist(), sat, strict=True):
        shape, colour, size = classes[lab]
        fg = s > 0.3
        assert fg.any()
        assert int(img[:, fg].mean(1).argmax()) == max(range(3), key=COLOURS[colour].__getitem__)
    area = (sat > 0.3).flatten(1).sum(1).float()
    small = [i for i, lab in enumerate(labels.tolist()) if classes[lab][2] == "small"]
    large = [i for i, lab in enumerate(labels.tolist()) if classes[lab][2] == "large"]
    assert area[large].min() > area[small].max() * 0.9
    assert area[large].mean() > 2 * area[small].mean()


def test_shapes_bad_labels():
    with pytest.raises(ValueError, match="labels"):
        render_shapes(torch.tensor([18]))


def test_grid_tokenizer_one_token_per_patch_and_decode_paths_agree():
    torch.manual_seed(0)
    t = GridTokenizer(16, 4, token_dim=4, codebook_size=16, width=32).eval()
    x = torch.rand(3, 1, 16, 16)
    z_q, codes, _ = t.encode(x)
    assert codes.shape == (3, 16) and z_q.shape == (3, 16, 4)
    a, mid = t.decode(codes=codes)
    b, _ = t.decode(embeddings=z_q)
    c, _ = t.decode(probs=F.one_hot(codes, 16).float())
    assert a.shape == x.shape and mid.shape == (3, 16, 32)
    assert torch.allclose(a, b, atol=1e-5) and torch.allclose(a, c, atol=1e-5)
    with pytest.raises(ValueError, match="1D tokens only"):
        t.decode(codes=codes, keep=torch.tensor([2, 2, 2]))
    with pytest.raises(ValueError, match="not divisible"):
        GridTokenizer(15, 4)


def test_grid_tokens_are_local_in_raster_order():
    """A 2D token sees the whole image (ViT), but its patch dominates: the planted locality."""
    torch.manual_seed(0)
    t = GridTokenizer(16, 4, token_dim=4, codebook_size=16, width=32, depth=0).eval()
    x = torch.rand(1, 1, 16, 16)
    z = t.encode_continuous(x)
    x2 = x.clone()
    x2[..., :4, 4:8] += 1.0  # patch 1 in raster order
    changed = (t.encode_continuous(x2) - z).abs().sum(-1)[0]
    assert int(changed.argmax()) == 1 and torch.count_nonzero(changed) == 1


def test_ssim_identity_and_ordering():
    torch.manual_seed(0)
    x = torch.rand(4, 3, 32, 32)
    assert ssim(x, x) == pytest.approx(1.0, abs=1e-6)
    assert ssim((x + 0.05 * torch.randn_like(x)).clamp(0, 1), x) > ssim(torch.rand_like(x), x)


def test_precision_recall_identical_disjoint_and_collapsed():
    torch.manual_seed(0)
    real = torch.randn(400, 3)
    assert precision_recall(real, real.clone()) == (1.0, 1.0)
    assert precision_recall(real, real + 100.0) == (0.0, 0.0)
    # mode collapse: samples on one real mode -> high precision, low recall
    p, r = precision_recall(real, real[:1] + 0.01 * torch.randn(400, 3))
    assert p > 0.9 and r < 0.1
    # symmetry: swapping the sets swaps precision and recall
    fake = torch.randn(300, 3) * 1.5
    p, r = precision_recall(real, fake)
    assert precision_recall(fake, real) == pytest.approx((r, p))


def test_knn_radii_closed_form_on_a_line():
    x = torch.tensor([[0.0], [1.0], [3.0], [6.0]])
    assert knn_radii(x, 1).tolist() == [1.0, 1.0, 2.0, 3.0]
    assert knn_radii(x, 2).tolist() == [3.0, 2.0, 3.0, 5.0]
    with pytest.raises(ValueError, match="k must"):
        knn_radii(x, 4)
    with pytest.raises(ValueError, match="feature sets"):
        precision_recall(torch.randn(5, 2), torch.randn(5, 3))
