"""Parity with diffusers (slow: importing diffusers alone takes ~25 s on the 2-core CI machine)."""

import pytest
import torch

pytestmark = pytest.mark.slow


def test_linear_schedule_matches_ddpm_scheduler():
    from diffusers import DDIMScheduler, DDPMScheduler
    from weakprior.ddim import linear_alphas_cumprod, spaced_timesteps

    sched = DDPMScheduler(num_train_timesteps=1000, beta_schedule="linear")
    assert torch.allclose(linear_alphas_cumprod().float(), sched.alphas_cumprod, atol=1e-6)
    ddim = DDIMScheduler(num_train_timesteps=1000)
    ddim.set_timesteps(3)
    assert tuple(ddim.timesteps.tolist()) == spaced_timesteps(3) == (666, 333, 0)


def test_diffusers_backbone_trains_one_step(tmp_path):
    from weakprior.prior_module import DDPMPriorModule

    m = DDPMPriorModule(image_size=8, width=8, backbone="diffusers")
    assert m(torch.zeros(2, 1, 8, 8), torch.tensor([3, 900])).shape == (2, 1, 8, 8)
