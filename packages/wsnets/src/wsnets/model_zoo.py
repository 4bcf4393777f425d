"""Model zoos of any architecture: a folder of checkpoints plus a labels file (MLPs or CNNs).

The symmetry of the paper (Dayan, Eitan, Maron, ICML 2026, Sec. 2) is the permutation of
hidden neurons, ``G_A = S_{d_1} x ... x S_{d_{L-1}}``. For a CNN whose convolutions are
followed by global pooling and then linear layers (the Small CNN Zoo architecture of
Unterthiner et al., 2020), the "neurons" of a layer are its output channels, and permuting
the hidden channels leaves the network's function unchanged. The activation plays no role
in the symmetry, so these zoos need no SIREN variant or activation setting.

Folder layout (:func:`load_model_zoo`):

* ``labels.csv`` with a header ``file,label``: one row per network; ``label`` is a number
  (a property to regress, e.g. test accuracy) or, if every label is an integer, a class;
* one ``torch.save``-d state dict per row (``*.pt``), parameters in layer order alternating
  ``*.weight`` / ``*.bias``: ``nn.Linear`` weights ``(d_out, d_in)`` or ``nn.Conv2d`` kernels
  ``(d_out, d_in, k_h, k_w)``.

Weight-space encoding (:func:`encode_state_dict`): kernel positions become channels, so
``W_l`` of shape ``(d_out, d_in, k_h k_w)``, zero-padded to ``K = max k_h k_w`` channels
(linear layers use channel 0), biases ``(d_out, K)`` with the bias in channel 0. The encoding
commutes with every hidden-channel permutation, so a :data:`~wsnets.architectures.MULTI_CHANNEL`
family on it keeps its exact ``G_A`` (in)variance.

:func:`make_cnn_zoo` writes such a folder: small CNNs trained for different numbers of steps
on a generated bar-orientation task, labelled with their test accuracy.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

from wsnets.inr_zoo import Zoo
from wsnets.weight_space import WeightSpace

LABELS_FILE = "labels.csv"


def encode_state_dict(state: Mapping[str, torch.Tensor], channels: int | None = None):
    """``(weights, biases, kernel_areas)`` of one network; ``channels`` pads to ``K`` channels.

    Raises ``ValueError`` for missing biases, blocks that are neither 2-D nor 4-D, or layers
    whose shapes do not chain (``d_in`` of layer ``l+1`` = ``d_out`` of layer ``l``).
    """
    ws = [t for n, t in state.items() if n.endswith("weight")]
    bs = [t for n, t in state.items() if n.endswith("bias")]
    if not ws or len(ws) != len(bs):
        raise ValueError("needs matching '*.weight' and '*.bias' entries, in layer order")
    areas = []
    for k, (w, b) in enumerate(zip(ws, bs, strict=True)):
        if w.dim() not in (2, 4):
            raise ValueError(
                f"layer {k}: weight of shape {tuple(w.shape)} is neither linear nor conv2d"
            )
        if b.shape != (w.shape[0],):
            raise ValueError(
                f"layer {k}: bias of shape {tuple(b.shape)} does not match {w.shape[0]} outputs"
            )
        if k and w.shape[1] != ws[k - 1].shape[0]:
            raise ValueError(
                f"layer {k} takes {w.shape[1]} inputs but layer {k - 1} has {ws[k - 1].shape[0]} "
                "outputs (the layers must chain; CNNs need global pooling before the linear head)"
            )
        areas.append(int(math.prod(w.shape[2:])))
    K = channels or max(areas)
    if max(areas) > K:
        raise ValueError(f"a kernel has {max(areas)} entries, more than the zoo's {K} channels")
    enc_w, enc_b = [], []
    for w, b in zip(ws, bs, strict=True):
        flat = w.detach().float().reshape(w.shape[0], w.shape[1], -1)
        enc_w.append(nn.functional.pad(flat, (0, K - flat.shape[-1])))
        enc_b.append(nn.functional.pad(b.detach().float()[:, None], (0, K - 1)))
    return enc_w, enc_b, areas


def read_labels(folder: Path) -> list[tuple[str, str]]:
    """Rows ``(file, label)`` of ``folder/labels.csv`` (``ValueError`` naming what is wrong)."""
    path = folder / LABELS_FILE
    if not path.is_file():
        raise ValueError(f"{str(folder)!r} is not a model-zoo folder: it has no {LABELS_FILE}")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"file", "label"} <= set(reader.fieldnames):
            raise ValueError(f"{path} needs a header with the columns 'file' and 'label'")
        rows = [(r["file"], r["label"]) for r in reader]
    if not rows:
        raise ValueError(f"{path} lists no networks")
    return rows


def load_model_zoo(folder: str | Path) -> Zoo:
    """Read a model-zoo folder (see the module docstring) into a :class:`~wsnets.inr_zoo.Zoo`.

    Examples
    --------
    >>> import tempfile
    >>> zoo = load_model_zoo(make_cnn_zoo(tempfile.mkdtemp(), n=4, steps=(1, 2)))
    >>> zoo.params.arch, zoo.params.channels, zoo.meta["layers"]
    ((1, 4, 4, 2), 9, ['conv3x3', 'conv3x3', 'linear'])
    """
    folder = Path(folder)
    rows = read_labels(folder)
    states = []
    for name, _ in rows:
        f = folder / name
        if not f.is_file():
            raise ValueError(f"{LABELS_FILE} names {name!r}, which is not in {str(folder)!r}")
        try:
            sd = torch.load(f, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - any unreadable file is one clear line
            raise ValueError(
                f"{f} is not a readable torch state dict ({type(err).__name__})"
            ) from None
        if not isinstance(sd, Mapping):
            raise ValueError(f"{f} holds a {type(sd).__name__}, not a state dict")
        states.append(sd)
    K = 1
    for sd in states:
        K = max(K, *(int(math.prod(t.shape[2:])) for n, t in sd.items() if n.endswith("weight")))
    enc = []
    for (name, _), sd in zip(rows, states, strict=True):
        try:
            enc.append(encode_state_dict(sd, K))
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
    shapes = [tuple(w.shape) for w in enc[0][0]]
    for (name, _), (w, _, _) in zip(rows, enc, strict=True):
        if [tuple(t.shape) for t in w] != shapes:
            raise ValueError(f"{name} has a different architecture from {rows[0][0]}")
    params = WeightSpace(
        [torch.stack([e[0][i] for e in enc]) for i in range(len(shapes))],
        [torch.stack([e[1][i] for e in enc]) for i in range(len(shapes))],
    ).check_finite()
    labels = [lab for _, lab in rows]
    try:
        values = [float(x) for x in labels]
    except ValueError:
        raise ValueError(f"{folder / LABELS_FILE}: every label must be a number") from None
    if all(v.is_integer() and "." not in x for v, x in zip(values, labels, strict=True)):
        target = torch.tensor([int(v) for v in values])
    else:
        target = torch.tensor(values, dtype=torch.float32)
    areas = enc[0][2]
    kinds = ["linear" if a == 1 and w.ndim == 2 else f"conv{int(math.isqrt(a))}x{int(math.isqrt(a))}"
             for a, w in zip(areas, [t for n, t in states[0].items() if n.endswith("weight")], strict=True)]  # fmt: skip
    meta = {"kind": "model-zoo", "arch": list(params.arch), "channels": K, "layers": kinds,
            "files": [name for name, _ in rows], "source": folder.name}  # fmt: skip
    return Zoo(params, {"label": target}, meta)


class SmallCNN(nn.Module):
    """``conv3x3 -> ReLU -> conv3x3 -> ReLU -> global average pool -> linear`` (Small CNN Zoo style)."""

    def __init__(self, channels: int = 4, n_classes: int = 2) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.head = nn.Linear(channels, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.head(h.mean(dim=(2, 3)))


def bar_images(n: int, size: int, generator: torch.Generator):
    """Noisy images of a horizontal (class 0) or vertical (class 1) bar."""
    y = torch.randint(0, 2, (n,), generator=generator)
    pos = torch.randint(1, size - 1, (n,), generator=generator)
    x = 0.3 * torch.randn(n, 1, size, size, generator=generator)
    for k in range(n):
        if y[k] == 0:
            x[k, 0, pos[k], :] += 1.0
        else:
            x[k, 0, :, pos[k]] += 1.0
    return x, y


def make_cnn_zoo(
    out: str | Path,
    n: int = 24,
    channels: int = 4,
    steps: tuple[int, ...] = (0, 5, 10, 20, 40, 80),
    size: int = 8,
    seed: int = 0,
) -> Path:
    """Write a model-zoo folder of ``n`` :class:`SmallCNN` s labelled with their test accuracy.

    Network ``k`` is trained with Adam (lr 0.03, batch 32) for ``steps[k % len(steps)]`` steps
    from its own initialisation on :func:`bar_images`; its label is the accuracy on 256
    held-out images. Returns the folder.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    x_test, y_test = bar_images(256, size, gen)
    rows = []
    for k in range(n):
        torch.manual_seed(seed * 100_003 + k)
        net = SmallCNN(channels)
        opt = torch.optim.Adam(net.parameters(), lr=0.03)
        for _ in range(steps[k % len(steps)]):
            x, y = bar_images(32, size, gen)
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
        with torch.no_grad():
            acc = float((net(x_test).argmax(-1) == y_test).float().mean())
        name = f"cnn_{k:03d}.pt"
        torch.save(net.state_dict(), out / name)
        rows.append((name, f"{acc:.4f}"))
    with (out / LABELS_FILE).open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["file", "label"])
        writer.writerows(rows)
    return out


def example_cnn_zoo(cache_dir: str | Path | None = None, n: int = 24, seed: int = 0) -> Path:
    """The folder of :func:`make_cnn_zoo` ``(n, seed)`` in the zoo cache, generated once.

    Written into a temporary sibling folder and renamed, so an interrupted run leaves no
    half-written zoo behind.
    """
    import shutil
    import tempfile

    from wsnets.zoo_data import default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    folder = root / f"make_cnn_zoo-n{n}-seed{seed}"
    if (folder / LABELS_FILE).is_file():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=".partial-cnn-zoo-"))
    try:
        make_cnn_zoo(tmp, n=n, seed=seed)
        tmp.rename(folder)
    except OSError:
        if not (folder / LABELS_FILE).is_file():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
