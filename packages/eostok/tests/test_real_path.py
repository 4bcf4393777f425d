"""The real path's code on local stand-ins: an imagefolder dataset and a tiny random DINOv2."""

import numpy as np
import pytest
import torch


def test_hf_image_datamodule_on_a_local_imagefolder(tmp_path):
    pytest.importorskip("datasets")
    from eostok.lightning import HFImageDataModule
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    for c in ("cat", "dog"):
        (root / c).mkdir(parents=True)
        for i in range(6):
            arr = rng.integers(0, 255, (20 + i, 30, 3), dtype=np.uint8)  # non-square, odd sizes
            Image.fromarray(arr).save(root / c / f"{i}.png")
    dm = HFImageDataModule(
        str(root), image_size=16, batch_size=4, test_fraction=0.25,
        cache_dir=str(tmp_path / "cache"),  # not the user's datasets cache
    )  # fmt: skip
    dm.setup("fit")
    assert dm.num_classes == 2
    assert len(dm.train_set) + len(dm.test_set) == 12
    x, y = next(iter(dm.train_dataloader()))
    assert x.shape == (4, 3, 16, 16) and y.shape == (4,)
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0


def test_to_tensor_image_resizes_short_side_and_centre_crops():
    from eostok.imagenet import to_tensor_image
    from PIL import Image

    arr = np.zeros((40, 80, 3), dtype=np.uint8)
    arr[:, 20:60] = 255  # a white centre band of half the width
    x = to_tensor_image(Image.fromarray(arr), 20)  # -> 20x40, crop the centre 20x20
    assert x.shape == (3, 20, 20)
    assert float(x[:, :, 2:-2].min()) > 0.95  # the crop lies inside the white band


@pytest.mark.slow  # importing transformers' DINOv2 takes longer than the rest of the suite
def test_dinov2_teacher_feature_map_shapes_with_a_tiny_random_model():
    transformers = pytest.importorskip("transformers")
    from eostok.alignment import ImplicitAlignment
    from eostok.imagenet import DINOv2Teacher

    cfg = transformers.Dinov2Config(
        hidden_size=24, num_hidden_layers=1, num_attention_heads=2, intermediate_size=48,
        patch_size=7, image_size=28,
    )  # fmt: skip
    torch.manual_seed(0)
    teacher = DINOv2Teacher(transformers.Dinov2Model(cfg), input_size=28)
    fmap, emb, logits = teacher(torch.rand(3, 1, 16, 16))
    assert fmap.shape == (3, 24, 4, 4) and emb.shape == (3, 24) and logits is None
    assert teacher.feature_dim == 24
    assert not any(p.requires_grad for p in teacher.parameters())
    loss = ImplicitAlignment(width=8, teacher_dim=24, grid=4)(torch.randn(3, 16, 8), fmap)
    assert -1.0 <= float(loss) <= 1.0
    with pytest.raises(ValueError, match="multiple"):
        DINOv2Teacher(transformers.Dinov2Model(cfg), input_size=30)


def test_inception_fid_offline_is_a_clear_error(monkeypatch):
    """The paper's Inception gFID without its downloaded weights: one clear error."""
    from eostok.frechet import inception_fid

    with pytest.raises(ValueError, match="images must be"):
        inception_fid(torch.rand(1, 3, 8, 8), torch.rand(4, 3, 8, 8))
    # no weights offline (the download is made to fail as it does without network):
    # one RuntimeError naming the offline alternative
    pytest.importorskip("torch_fidelity")
    from urllib.error import URLError

    import torch_fidelity.feature_extractor_inceptionv3 as fe

    def offline(*_a, **_k):
        raise URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr(fe, "load_state_dict_from_url", offline)
    with pytest.raises(RuntimeError, match="offline, use proxy_fid"):
        inception_fid(torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16))
