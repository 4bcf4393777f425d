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


def _dwsnets_release(root, sizes=(4, 2, 2), arch=(2, 5, 5, 1)):
    """A tiny folder in the DWSNets layout: one state dict per INR plus a splits JSON."""
    import json

    from torch import nn

    table, k = {}, 0
    for split, n in zip(("train", "val", "test"), sizes, strict=True):
        table[split] = {"path": [], "label": []}
        for _ in range(n):
            torch.manual_seed(k)
            net = nn.Sequential(
                *[nn.Linear(i, o) for i, o in zip(arch[:-1], arch[1:], strict=True)]
            )
            f = root / f"inr_{k}.pth"
            torch.save(net.state_dict(), f)
            table[split]["path"].append(f.name)
            table[split]["label"].append(str(k % 10))
            k += 1
    (root / "splits.json").write_text(json.dumps(table))
    return root / "splits.json"


def test_dwsnets_split_folder_loads_with_its_own_splits(tmp_path):
    from wsnets.lightning import DWSNetsSplitDataModule

    splits = _dwsnets_release(tmp_path)
    dm = DWSNetsSplitDataModule(str(splits), variant="dwsnets", batch_size=3)
    dm.setup()
    assert dm.meta["arch"] == [2, 5, 5, 1] and dm.meta["variant"] == "dwsnets"
    assert [len(dm.idx[s]) for s in ("train", "val", "test")] == [4, 2, 2]
    assert dm.zoo.targets["label"].tolist() == [k % 10 for k in range(8)]
    torch.manual_seed(6)
    ref = torch.nn.Linear(2, 5).weight  # first layer of INR 6 (test split, first item)
    assert torch.equal(dm.zoo.params.weights[0][6, :, :, 0], ref.detach())
    batch = next(iter(dm.test_dataloader()))
    assert batch["weights"][0].shape == (2, 5, 2, 1)


def test_dwsnets_split_folder_bad_input(tmp_path):
    from wsnets.lightning import DWSNetsSplitDataModule

    with pytest.raises(ValueError, match="does not exist"):
        DWSNetsSplitDataModule(str(tmp_path / "none.json"), variant="dwsnets").setup()
    splits = _dwsnets_release(tmp_path)
    with pytest.raises(ValueError, match="unknown SIREN variant"):
        DWSNetsSplitDataModule(str(splits), variant="").setup()
    (tmp_path / "bad.json").write_text('{"train": {}}')
    with pytest.raises(ValueError, match="not a DWSNets splits file"):
        DWSNetsSplitDataModule(str(tmp_path / "bad.json"), variant="dwsnets").setup()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _dwsnets_release(mixed, arch=(2, 5, 5, 1))
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3)).state_dict(), mixed / "inr_7.pth")
    with pytest.raises(ValueError, match="different architecture"):
        DWSNetsSplitDataModule(str(mixed / "splits.json"), variant="dwsnets").setup()


def test_image_inr_datamodule_fits_rows_of_an_image_dataset(tmp_path, monkeypatch):
    """The HF path without internet: fake rows (colour PIL images) stand in for load_dataset."""
    import numpy as np
    from PIL import Image
    from wsnets.lightning import ImageINRDataModule
    from wsnets.zoo_data import images_from_rows

    rng = np.random.default_rng(0)
    rows = [
        {"img": Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)), "label": k % 3}
        for k in range(10)
    ]
    images, labels = images_from_rows(rows, 6, n=8)
    assert images.shape == (8, 6, 6) and images.min() >= 0 and images.max() <= 1
    assert labels.tolist() == [k % 3 for k in range(8)]
    dm = ImageINRDataModule(
        "fake/colour",
        "edit",
        n_images=8,
        image_size=6,
        hidden=4,
        fit_steps=2,
        batch_size=4,
        cache_dir=str(tmp_path),
    )
    monkeypatch.setattr(dm, "load_rows", lambda: rows)
    dm.setup()
    assert dm.meta["variant"] == "dwsnets" and dm.meta["hf_id"] == "fake/colour"
    assert len(dm.zoo) == 8 and dm.zoo.params.arch == (2, 4, 4, 1)
    with pytest.raises(ValueError, match="PIL 'image'"):
        images_from_rows([{"text": "x"}], 6)
    with pytest.raises(ValueError, match="task must be"):
        ImageINRDataModule("fake/colour", "segment")
