"""Parity with diffusers: the schedule, the DDIM timesteps and the default UNet2DModel backbone."""

import pytest
import torch


def test_linear_schedule_matches_ddpm_scheduler():
    from diffusers import DDIMScheduler, DDPMScheduler
    from weakprior.ddim import linear_alphas_cumprod, spaced_timesteps

    sched = DDPMScheduler(num_train_timesteps=1000, beta_schedule="linear")
    assert torch.allclose(linear_alphas_cumprod().float(), sched.alphas_cumprod, atol=1e-6)
    ddim = DDIMScheduler(num_train_timesteps=1000)
    ddim.set_timesteps(3)
    assert tuple(ddim.timesteps.tolist()) == spaced_timesteps(3) == (666, 333, 0)


def test_default_backbone_is_a_small_unet2dmodel_with_one_attention_block():
    from diffusers import UNet2DModel
    from diffusers.models.attention_processor import Attention
    from weakprior.lightning import DDPMPriorModule, diffusers_unet

    m = DDPMPriorModule()  # the reproduce prior: 24 px, width 16
    unet = m.net.unet
    assert isinstance(unet, UNet2DModel)
    assert tuple(unet.config.block_out_channels) == (16, 32, 32)
    assert unet.config.layers_per_block == 1 and unet.config.norm_num_groups == 8
    assert sum(isinstance(mod, Attention) for mod in unet.modules()) == 1
    assert 250_000 < sum(p.numel() for p in unet.parameters()) < 300_000
    out = m(torch.zeros(2, 1, 24, 24), torch.tensor([3, 900]))
    assert out.shape == (2, 1, 24, 24)  # (B, C, H, W) in, eps of the same shape out
    with pytest.raises(ValueError, match="multiple of 4"):
        diffusers_unet(1, 16, 26)


def test_tiny_backbone_still_available():
    from weakprior.lightning import DDPMPriorModule, TinyUNet

    m = DDPMPriorModule(image_size=8, width=8, backbone="tiny")
    assert isinstance(m.net, TinyUNet)
    assert m(torch.zeros(2, 1, 8, 8), torch.tensor([3, 900])).shape == (2, 1, 8, 8)
    with pytest.raises(ValueError, match="backbone"):
        DDPMPriorModule(backbone="resnet")
