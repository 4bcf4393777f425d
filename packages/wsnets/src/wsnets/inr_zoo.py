"""Weight-space datasets the package generates offline: image INRs and 1-D sine INRs.

* :func:`fit_inrs`: fits ``B`` SIRENs at once (one Adam state per entry, so the batch is B
  independent fits) to targets on shared coordinates, minimising the per-network pixel MSE;
* :func:`digits_images`: scikit-learn's bundled 8x8 digits (1,797 images) upsampled with
  ``scipy.ndimage.zoom`` to ``size x size`` in ``[0, 1]``; :func:`dilate` is the editing
  target of the paper's INR-editing task (grey dilation with a 3x3 window);
* :func:`make_digits_zoo` / :func:`make_sine_zoo` build a :class:`Zoo`; zoos are cached to a
  folder with ``zoo.pt`` plus ``meta.json`` recording the SIREN variant, ``w0``, offset,
  architecture and seed (:meth:`Zoo.save`, :func:`load_zoo`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wsnets.siren import check_variant, siren_init
from wsnets.weight_space import WeightSpace, image_coords

INITS = ("independent", "shared")


@dataclass
class Zoo:
    """A weight-space dataset: networks, labels and how to render them.

    Parameters
    ----------
    params:
        The networks (``C = 1``).
    targets:
        ``{name: tensor}`` with the batch as first axis (``label``, ``image``, ``edit``,
        ``omega``, ``accuracy`` ...).
    meta:
        ``kind``, ``variant``, ``activation``, ``w0``, ``offset``, ``arch``, ``seed`` ...

    Examples
    --------
    >>> z = make_sine_zoo(4, steps=5, seed=0)
    >>> z.params.arch, sorted(z.targets), z.meta["variant"]
    ((1, 16, 16, 1), ['omega', 'signal'], 'sitzmann')
    """

    params: WeightSpace
    targets: dict[str, torch.Tensor]
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return self.params.batch

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(
            {"weights": self.params.weights, "biases": self.params.biases, "targets": self.targets},
            folder / "zoo.pt",
        )
        (folder / "meta.json").write_text(json.dumps(self.meta, indent=2) + "\n")
        return folder


def load_zoo(folder: str | Path) -> Zoo:
    """Read a zoo written by :meth:`Zoo.save`; ``ValueError`` if its metadata is incomplete."""
    folder = Path(folder)
    if not (folder / "zoo.pt").is_file() or not (folder / "meta.json").is_file():
        raise ValueError(f"{str(folder)!r} is not a zoo folder (needs zoo.pt and meta.json)")
    meta = json.loads((folder / "meta.json").read_text())
    if meta.get("kind") != "mlp-zoo":
        if "variant" not in meta:
            raise ValueError(
                f"zoo {str(folder)!r}: meta.json does not name its SIREN variant "
                "('variant': 'sitzmann' or 'dwsnets')"
            )
        check_variant(meta["variant"])
    data = torch.load(folder / "zoo.pt", map_location="cpu", weights_only=True)
    params = WeightSpace(data["weights"], data["biases"]).check_finite()
    return Zoo(params, data["targets"], meta)


def fit_inrs(
    coords: torch.Tensor,
    targets: torch.Tensor,
    arch: list[int],
    variant: str = "sitzmann",
    w0: float = 30.0,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    chunk: int = 512,
    init: str = "independent",
) -> tuple[WeightSpace, torch.Tensor]:
    """Fit one SIREN per row of ``targets`` (``(B, N)``) at ``coords`` (``(N, d_0)``).

    ``init``: ``"independent"`` (a fresh initialisation per network) or ``"shared"`` (one
    initialisation for all, then a random hidden-neuron permutation per fitted network).
    Returns the parameters and the per-network final MSE.
    """
    offset = check_variant(variant)
    if init not in INITS:
        raise ValueError(f"unknown INR initialisation {init!r}; choose from {INITS}")
    gen = torch.Generator().manual_seed(seed)
    shared = siren_init(arch, 1, variant, w0, gen) if init == "shared" else None
    outs, errs = [], []
    for start in range(0, targets.shape[0], chunk):
        y = targets[start : start + chunk]
        if shared is None:
            v = siren_init(arch, y.shape[0], variant, w0, gen)
        else:
            n = y.shape[0]
            v = WeightSpace(
                [w.expand(n, *w.shape[1:]).clone() for w in shared.weights],
                [b.expand(n, *b.shape[1:]).clone() for b in shared.biases],
            )
        leaves = [t.clone().requires_grad_(True) for t in v.weights + v.biases]
        opt = torch.optim.Adam(leaves, lr=lr)
        L = len(v.weights)
        for _ in range(steps):
            cur = WeightSpace(leaves[:L], leaves[L:])
            pred = cur.render(coords, "sine", w0, offset)[..., 0, 0]
            loss = ((pred - y) ** 2).mean(dim=1).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            cur = WeightSpace([t.detach() for t in leaves[:L]], [t.detach() for t in leaves[L:]])
            errs.append(((cur.render(coords, "sine", w0, offset)[..., 0, 0] - y) ** 2).mean(1))
        if shared is not None:
            cur = cur.permute(cur.batch_random_permutation(gen))
        outs.append(cur)
    params = WeightSpace(
        [torch.cat([o.weights[i] for o in outs]) for i in range(len(arch) - 1)],
        [torch.cat([o.biases[i] for o in outs]) for i in range(len(arch) - 1)],
    )
    return params, torch.cat(errs)


def digits_images(size: int = 16, n: int | None = None, seed: int = 0):
    """``(images (n, size, size) in [0, 1], labels (n,))`` from scikit-learn's digits."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    data = load_digits()
    images, labels = data.images / 16.0, data.target
    idx = np.random.default_rng(seed).permutation(len(labels))[: n or len(labels)]
    out = np.stack([np.clip(zoom(images[i], size / 8, order=1), 0, 1) for i in idx])
    return torch.tensor(out, dtype=torch.float32), torch.tensor(labels[idx])


def dilate(images: torch.Tensor) -> torch.Tensor:
    """Grey dilation with a 3x3 window (the INR-editing target), per image."""
    from scipy.ndimage import grey_dilation

    arr = images.numpy()
    return torch.tensor(np.stack([grey_dilation(a, size=3) for a in arr]), dtype=torch.float32)


def make_digits_zoo(
    n: int | None = None,
    size: int = 16,
    hidden: int = 16,
    variant: str = "dwsnets",
    w0: float = 30.0,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    init: str = "independent",
) -> Zoo:
    """SIRENs ``2 -> hidden -> hidden -> 1`` fitted to upsampled digits (with labels and edits)."""
    images, labels = digits_images(size, n, seed)
    return make_image_zoo(
        images, labels, hidden, variant, w0, steps, lr, seed, "digits-inr", init=init
    )


def make_image_zoo(
    images: torch.Tensor,
    labels: torch.Tensor,
    hidden: int = 16,
    variant: str = "dwsnets",
    w0: float = 30.0,
    steps: int = 300,
    lr: float = 1e-3,
    seed: int = 0,
    kind: str = "image-inr",
    init: str = "independent",
) -> Zoo:
    """SIRENs ``2 -> hidden -> hidden -> 1`` fitted to grayscale square ``images`` in [0, 1]."""
    if images.dim() != 3 or images.shape[1] != images.shape[2]:
        raise ValueError("images must be grayscale and square, shape (n, size, size)")
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    size = images.shape[1]
    coords = image_coords(size)
    arch = [2, hidden, hidden, 1]
    params, mse = fit_inrs(
        coords, images.reshape(len(images), -1), arch, variant, w0, steps, lr, seed, init=init
    )
    meta = {
        "kind": kind,
        "variant": variant,
        "activation": "sine",
        "w0": w0,
        "offset": check_variant(variant),
        "arch": arch,
        "size": size,
        "steps": steps,
        "lr": lr,
        "seed": seed,
        "init": init,
        "fit_psnr_db": float((-10 * torch.log10(mse.clamp_min(1e-12))).mean()),
    }
    targets = {"label": labels, "image": images, "edit": dilate(images)}
    return Zoo(params, targets, meta)


def make_sine_zoo(
    n: int = 500,
    hidden: int = 16,
    points: int = 64,
    variant: str = "sitzmann",
    w0: float = 30.0,
    steps: int = 300,
    lr: float = 1e-3,
    omega_range: tuple[float, float] = (1.0, 8.0),
    seed: int = 0,
    init: str = "independent",
) -> Zoo:
    """1-D SIRENs of ``a sin(omega x + phi)`` on ``[-1, 1]``; the label is ``omega``."""
    g = torch.Generator().manual_seed(seed + 7)
    lo, hi = omega_range
    omega = lo + (hi - lo) * torch.rand(n, generator=g)
    amp = 0.5 + 0.5 * torch.rand(n, generator=g)
    phi = 2 * math.pi * torch.rand(n, generator=g)
    x = torch.linspace(-1, 1, points)[:, None]
    signal = amp[:, None] * torch.sin(omega[:, None] * x[None, :, 0] + phi[:, None])
    arch = [1, hidden, hidden, 1]
    params, mse = fit_inrs(x, signal, arch, variant, w0, steps, lr, seed, init=init)
    meta = {
        "kind": "sine-inr",
        "variant": variant,
        "activation": "sine",
        "w0": w0,
        "offset": check_variant(variant),
        "arch": arch,
        "points": points,
        "omega_range": list(omega_range),
        "steps": steps,
        "seed": seed,
        "init": init,
        "fit_mse": float(mse.mean()),
    }
    return Zoo(params, {"omega": omega, "signal": signal}, meta)
