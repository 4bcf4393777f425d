"""Metrics against scikit-image, local correlation of white noise, the LPIPS guard."""

import numpy as np
import pytest
import torch
from skimage.metrics import peak_signal_noise_ratio as sk_psnr
from skimage.metrics import structural_similarity as sk_ssim
from weakprior.image_quality import psnr, psnr_masked, require_lpips, ssim
from weakprior.local_correlation import distance_to_observed, local_correlation


def _pair(seed=0):
    gen = torch.Generator().manual_seed(seed)
    ref = torch.rand(3, 1, 16, 16, generator=gen) * 2 - 1
    x = (ref + 0.1 * torch.randn(ref.shape, generator=gen)).clamp(-1, 1)
    return x, ref


def test_psnr_matches_skimage():
    x, ref = _pair()
    ours = psnr(x, ref)
    for i in range(3):
        want = sk_psnr(ref[i, 0].double().numpy(), x[i, 0].double().numpy(), data_range=2.0)
        assert float(ours[i]) == pytest.approx(want, abs=1e-3)


def test_masked_psnr_equals_psnr_with_full_mask_and_ignores_observed_pixels():
    x, ref = _pair(1)
    assert torch.allclose(psnr_masked(x, ref, torch.ones_like(x)), psnr(x, ref), atol=1e-4)
    mask = torch.zeros_like(x)
    mask[..., :8] = 1
    y = x.clone()
    y[..., 8:] = 5.0  # outside the mask: must not matter
    assert torch.allclose(psnr_masked(y, ref, mask), psnr_masked(x, ref, mask))
    with pytest.raises(ValueError, match="mask shape"):
        psnr_masked(x, ref, mask[:1])


def test_ssim_sanity_and_close_to_skimage():
    x, ref = _pair(2)
    assert torch.allclose(ssim(ref, ref), torch.ones(3), atol=1e-5)
    assert (ssim(x, ref) < 1).all() and (ssim(x, ref) > ssim(torch.zeros_like(x), ref)).all()
    sk = np.mean([sk_ssim(ref[i, 0].numpy(), x[i, 0].numpy(), data_range=2.0, win_size=7,
                          gaussian_weights=True, sigma=1.5, use_sample_covariance=False)
                  for i in range(3)])  # fmt: skip
    assert float(ssim(x, ref).mean()) == pytest.approx(sk, abs=0.05)


def test_local_correlation_white_noise_and_smooth_images():
    noise = torch.randn(128, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    c = local_correlation(noise, 4)
    assert c[0] == pytest.approx(1.0) and c[1:].abs().max() < 0.03
    smooth = torch.nn.functional.avg_pool2d(noise, 3, stride=1, padding=1)
    cs = local_correlation(smooth, 4)
    assert cs[1] > 0.5 and cs[1] > cs[2] > cs[3]
    with pytest.raises(ValueError):
        local_correlation(noise, 16)


def test_distance_to_observed():
    miss = torch.zeros(1, 1, 9, 9)
    miss[..., 2:7, 2:7] = 1  # 5x5 box: rings at distance 1, 2, 3
    want = (16 * 1 + 8 * 2 + 1 * 3) / 25
    assert float(distance_to_observed(miss)[0]) == pytest.approx(want)


def test_lpips_without_cached_weights_names_the_download(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    with pytest.raises(RuntimeError, match="vgg16-397923af.pth"):
        require_lpips()


def test_lpips_message_shows_a_home_cache_path_with_a_tilde(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    with pytest.raises(RuntimeError, match="under ~/torch/hub/checkpoints") as err:
        require_lpips()
    assert str(tmp_path) not in str(err.value)
