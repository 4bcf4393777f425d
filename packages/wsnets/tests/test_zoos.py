"""Zoo generators: fits are real, labels are right, metadata is required."""

import json

import pytest
import torch
from wsnets.inr_zoo import digits_images, dilate, load_zoo, make_digits_zoo, make_sine_zoo
from wsnets.mlp_zoo import make_mlp_zoo
from wsnets.siren import siren_init
from wsnets.weight_space import image_coords


def test_digits_zoo_fits_the_images_and_round_trips(tmp_path):
    zoo = make_digits_zoo(6, size=8, hidden=8, steps=200, lr=3e-3, variant="sitzmann")
    imgs = zoo.targets["image"]
    rend = zoo.params.render(image_coords(8), "sine", 30.0, zoo.meta["offset"])[..., 0, 0]
    fit = ((rend - imgs.reshape(6, -1)) ** 2).mean()
    assert fit < 0.5 * imgs.var()  # far better than a constant
    assert zoo.meta["variant"] == "sitzmann" and zoo.meta["seed"] == 0
    again = load_zoo(zoo.save(tmp_path / "z"))
    assert torch.equal(again.params.flatten(), zoo.params.flatten())
    assert again.meta == zoo.meta


def test_dilation_target_is_a_3x3_max_filter():
    img = torch.zeros(1, 5, 5)
    img[0, 2, 2] = 1.0
    out = dilate(img)[0]
    assert out.sum() == 9 and out[1:4, 1:4].eq(1).all()
    images, labels = digits_images(8, n=5)
    assert images.shape == (5, 8, 8) and labels.shape == (5,)
    assert (dilate(images) >= images).all()


def test_siren_variants_differ_as_documented():
    g = torch.Generator().manual_seed(0)
    dws = siren_init([2, 8, 8, 1], 3, "dwsnets", generator=g)
    sitz = siren_init([2, 8, 8, 1], 3, "sitzmann", generator=g)
    assert all((b == 0).all() for b in dws.biases)
    assert sitz.weights[0].abs().max() > dws.weights[0].abs().max()  # special first layer
    with pytest.raises(ValueError, match="unknown SIREN variant"):
        siren_init([2, 4, 1], 1, "other")


def test_sine_zoo_labels_are_the_frequencies():
    zoo = make_sine_zoo(5, steps=3, seed=1)
    x = torch.linspace(-1, 1, 64)
    om = zoo.targets["omega"]
    sig = zoo.targets["signal"]
    # the stored signal is a sinusoid of the stored frequency: fit phase/amplitude by LSQ
    basis = torch.stack([torch.sin(om[:, None] * x), torch.cos(om[:, None] * x)], -1)
    coef = torch.linalg.lstsq(basis, sig[..., None]).solution
    assert torch.allclose((basis @ coef)[..., 0], sig, atol=1e-4)


def test_mlp_zoo_accuracy_labels_are_reproducible():
    a = make_mlp_zoo(6, points=50, seed=3)
    b = make_mlp_zoo(6, points=50, seed=3)
    assert torch.equal(a.targets["accuracy"], b.targets["accuracy"])
    assert a.targets["accuracy"].max() > 0.6  # some networks learned their task


def test_zoo_without_variant_metadata_is_rejected(tmp_path):
    zoo = make_sine_zoo(2, steps=1)
    folder = zoo.save(tmp_path / "z")
    meta = json.loads((folder / "meta.json").read_text())
    del meta["variant"]
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not name its SIREN variant"):
        load_zoo(folder)
    with pytest.raises(ValueError, match="not a zoo folder"):
        load_zoo(tmp_path / "missing")
