"""Command line of wsnets: ``wsnets --help``.

``fit/validate/test/predict`` are LightningCLI over the task modules
(:class:`~wsnets.lightning.INRClassifier`, :class:`~wsnets.lightning.INREditor`,
:class:`~wsnets.lightning.WeightRegressor`) and the zoo data modules, chosen with
``--model.class_path`` / ``--data.class_path`` (see ``configs/``); ``reproduce``; and the
package commands ``make-zoo``, ``edit``, ``predict-zoo`` (a trained model on a folder of
checkpoints, MLPs or CNNs), ``check-equivariance``, ``benchmark`` and ``f-sweep``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError
from icml26_shared.progress import quiet_lightning

from .paper import PAPER


def make_zoo(
    out: Path,
    kind: Literal["digits", "sine", "mlp", "cnn"] = "digits",
    n: int = 200,
    hidden: int = 16,
    variant: Literal["dwsnets", "sitzmann"] = "dwsnets",
    steps: int = 300,
    seed: int = 0,
) -> None:
    """Generate a weight-space zoo offline and write zoo.pt + meta.json to a folder.

    Args:
        out: Output folder.
        kind: ``digits`` (SIRENs of scikit-learn digits), ``sine`` (1-D sine SIRENs) or
            ``mlp`` (trained MLP classifiers labelled with their test accuracy) or ``cnn``
            (a model-zoo folder of small CNNs + ``labels.csv``, labelled with test accuracy).
        n: Number of networks.
        hidden: Hidden width of the networks (``mlp``: 8 is the default zoo).
        variant: SIREN variant (``digits``/``sine``).
        steps: Fitting steps per INR.
        seed: Seed.
    """
    from wsnets.inr_zoo import make_digits_zoo, make_sine_zoo
    from wsnets.mlp_zoo import make_mlp_zoo

    if n < 1:
        raise UsageError(f"n must be >= 1, got {n}")
    if kind == "cnn":
        from wsnets.model_zoo import make_cnn_zoo

        make_cnn_zoo(out, n=n, seed=seed)
        print(f"wrote {n} CNNs and labels.csv to {out}")
        return
    if kind == "digits":
        zoo = make_digits_zoo(n, hidden=hidden, variant=variant, steps=steps, seed=seed)
    elif kind == "sine":
        zoo = make_sine_zoo(n, hidden=hidden, variant=variant, steps=steps, seed=seed)
    else:
        zoo = make_mlp_zoo(n, hidden=hidden, seed=seed)
    zoo.save(out)
    print(f"wrote {len(zoo)} networks {list(zoo.params.arch)} to {out} ({zoo.meta})")


def load_editor(checkpoint: Path):
    """An :class:`~wsnets.lightning.INREditor` checkpoint on the CPU, in eval mode.

    A missing or unreadable file is one :class:`~icml26_shared.cli.UsageError` line.
    """
    from icml26_shared.cli import load_checkpoint

    from wsnets.lightning import INREditor

    return load_checkpoint(INREditor, checkpoint)


def edit(ckpt: Path, inr: Path, out: Path | None = None) -> None:
    """Edit the INRs of a zoo folder with a trained editor; print (and save) the rendered edits.

    Args:
        ckpt: Checkpoint of an ``INREditor`` written by ``wsnets fit``.
        inr: Zoo folder (``zoo.pt`` + ``meta.json``) with INRs of the editor's architecture.
        out: Optional ``.pt`` file for the edited parameters and rendered images.
    """
    import torch

    from wsnets.inr_zoo import load_zoo

    zoo = load_zoo(inr)
    editor = load_editor(ckpt)
    v = zoo.params.check_arch(editor.arch)
    if float(zoo.meta.get("offset", editor.hparams.offset)) != float(editor.hparams.offset):
        raise UsageError("the zoo's SIREN variant (output offset) differs from the editor's")
    with torch.no_grad():
        edited = editor.edit(v)
        images = editor.render(edited)
    size = editor.hparams.image_size
    print(f"edited {v.batch} INRs with F={edited.channels}; rendered {size}x{size} images")
    for i, img in enumerate(images[:10]):
        print(f"  INR {i}: mean {float(img.mean()):.4f}  max {float(img.max()):.4f}")
    if out is not None:
        torch.save(
            {
                "weights": edited.weights,
                "biases": edited.biases,
                "images": images.reshape(-1, size, size),
            },
            out,
        )
        print(f"wrote {out}")


def load_zoo_model(checkpoint: Path):
    """A :class:`~wsnets.lightning.WeightRegressor` or :class:`~wsnets.lightning.INRClassifier`
    checkpoint (told apart by its hyperparameters), on the CPU, in eval mode."""
    import torch
    from icml26_shared.cli import load_checkpoint

    from wsnets.lightning import INRClassifier, WeightRegressor

    path = Path(checkpoint)
    if not path.is_file():
        raise UsageError(f"checkpoint {str(path)!r} does not exist")
    try:
        hp = torch.load(path, map_location="cpu", weights_only=False).get("hyper_parameters", {})
    except Exception as err:  # noqa: BLE001 - an unreadable file is one clear line
        raise UsageError(f"cannot read checkpoint {str(path)!r}: {type(err).__name__}") from None
    cls = INRClassifier if "n_classes" in hp else WeightRegressor
    return load_checkpoint(cls, path)


def predict_zoo(ckpt: Path, zoo: Path, out: Path | None = None) -> None:
    """Predict every network of a model-zoo folder with a trained weight-space model.

    Writes ``predictions.csv`` (file, prediction, label) and ``result.json`` (the metrics
    against the folder's labels: R^2 and Kendall tau for regression, accuracy for classes)
    into ``out`` (atomically); prints the metrics.

    Args:
        ckpt: Checkpoint written by ``wsnets fit`` (``WeightRegressor`` or ``INRClassifier``).
        zoo: Model-zoo folder (checkpoints + ``labels.csv``; see ``wsnets.model_zoo``).
        out: Output folder (default: print only).
    """
    import csv
    import io
    import json

    import torch
    from icml26_shared.results import atomic_write_text
    from torchmetrics.functional import kendall_rank_corrcoef, r2_score

    from wsnets.model_zoo import load_model_zoo

    try:
        data = load_model_zoo(zoo)
    except ValueError as err:
        raise UsageError(str(err)) from None
    model = load_zoo_model(ckpt)
    if model.arch is None or tuple(data.params.arch) != tuple(model.arch):
        raise UsageError(
            f"the zoo's networks are {list(data.params.arch)}, the model was trained on "
            f"{None if model.arch is None else list(model.arch)}"
        )
    want = int(model.hparams.get("in_channels", 1))
    if data.params.channels != want:
        raise UsageError(f"the zoo has {data.params.channels} kernel channels, the model {want}")
    with torch.no_grad():
        pred = model(data.params.weights, data.params.biases)
    y = data.targets["label"]
    if pred.dim() == 2:  # classifier logits
        pred = pred.argmax(-1)
        metrics = {"accuracy": float((pred == y).float().mean())}
    else:
        metrics = {"r2": float(r2_score(pred, y.float())),
                   "kendall_tau": float(kendall_rank_corrcoef(pred, y.float()))}  # fmt: skip
    metrics["n"] = len(y)
    print(
        "  ".join(
            f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items()
        )
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["file", "prediction", "label"])
        for name, p, t in zip(data.meta["files"], pred.tolist(), y.tolist(), strict=True):
            writer.writerow([name, f"{p:.6g}" if isinstance(p, float) else p, t])
        atomic_write_text(out / "predictions.csv", buf.getvalue())
        result = {"checkpoint": str(ckpt), "zoo": str(zoo), "metrics": metrics,
                  "arch": list(data.params.arch), "layers": data.meta["layers"]}  # fmt: skip
        atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")
        print(f"wrote {out / 'predictions.csv'} and {out / 'result.json'}")


def check_equivariance(
    arch: list[int] | None = None,
    model: Literal["dws", "np", "np_pe", "gmn", "mlp", "mlp_aug", "canon", "all"] = "all",
    trials: int = 5,
    seed: int = 0,
) -> None:
    """Check (in)variance of every architecture under random hidden-neuron permutations.

    Args:
        arch: Architecture of the input MLPs (default 2 16 16 1).
        model: One family or ``all``.
        trials: Random permutations per model.
        seed: Seed.
    """
    import torch

    from wsnets.architectures import MODELS, build_model
    from wsnets.weight_space import WeightSpace

    arch = list(arch or [2, 16, 16, 1])
    if len(arch) < 3 or min(arch) < 1:
        raise UsageError(f"arch needs at least one hidden layer and positive sizes, got {arch}")
    names = MODELS if model == "all" else (model,)
    torch.manual_seed(seed)
    v = WeightSpace.random(arch, batch=4)
    for name in names:
        errs = {}
        for head in ("invariant", "equivariant"):
            net = build_model(
                name, arch, 4 if name not in ("mlp", "mlp_aug", "canon") else 32, 2, head, 3
            )
            worst = 0.0
            with torch.no_grad():
                for t in range(trials):
                    tau = v.batch_random_permutation(torch.Generator().manual_seed(seed + t))
                    a, b = net(v.permute(tau)), net(v)
                    if head == "equivariant":
                        a, b = a.flatten(), b.permute(tau).flatten()
                    worst = max(worst, float((a - b).abs().max() / b.abs().max().clamp_min(1e-12)))
            errs[head] = worst
        verdict = "symmetric" if max(errs.values()) < 1e-4 else "NOT symmetric"
        print(
            f"{name:8s} invariant err {errs['invariant']:.2e}  equivariant err {errs['equivariant']:.2e}  {verdict}"
        )


def benchmark(
    arch: list[int] | None = None, batch: int = 32, F: int = 1, repeats: int = 3, seed: int = 0
) -> None:
    """Parameters and forward/backward time of every architecture's editor on one batch.

    Args:
        arch: Architecture of the input MLPs (default 2 16 16 1).
        batch: Networks per batch.
        F: Output-ensemble size (widths matched to the F=1 budget).
        repeats: Timing repeats (median reported).
        seed: Seed.
    """
    import torch
    from icml26_shared.bench import time_it

    from wsnets.architectures import MODELS, build_model, matched_hidden
    from wsnets.weight_space import WeightSpace

    if F < 1:
        raise UsageError(f"the number of ensemble members F must be >= 1, got {F}")
    arch = list(arch or [2, 16, 16, 1])
    torch.manual_seed(seed)
    v = WeightSpace.random(arch, batch=batch)
    widths = {"dws": 16, "np": 16, "np_pe": 16, "gmn": 32, "mlp": 128, "mlp_aug": 128, "canon": 128}
    for name in MODELS:
        depth = 2 if name in ("mlp", "mlp_aug", "canon") else 3
        h = matched_hidden(name, arch, widths[name], depth, F)
        net = build_model(name, arch, h, depth, "equivariant", F)

        def step(net=net):
            out = net(v)
            out.flatten().square().mean().backward()

        t = time_it(step, 1, repeats)
        print(
            f"{name:8s} width {h:4d}  params {net.n_params():7d}  fwd+bwd {t.median * 1e3:8.1f} ms"
        )


def f_sweep(
    model: str = "gmn",
    F: list[int] | None = None,
    epochs: int = 60,
    width: int | None = None,
    seeds: list[int] | None = None,
    n_images: int = 160,
    fit_steps: int = 100,
    cache_dir: Path | None = None,
    lr: float = 3e-3,
) -> None:
    """Output-ensemble sweep of one family's editor, trained for longer than ``reproduce``.

    The editing setting of ``reproduce`` (shared-initialisation digit SIRENs 2-16-16-1,
    3x3-dilation target, AdamW (lr 3e-3 as in the full ``reproduce``), batch 16, width reduced for F > 1 until the parameter
    count is at most the F = 1 editor's), with ``epochs`` editing epochs; test MSE at the
    best-validation epoch. Prints a Markdown table.

    Args:
        model: Editor family (flat MLP ``mlp``, ``mlp_aug``, ``canon``, ``dws``, ``np_pe``,
            ``nft``, ``gmn``).
        F: Output-ensemble sizes (default 1 2 4 8).
        epochs: Editing epochs.
        width: Width of the F = 1 editor (default: ``reproduce``'s for the family).
        seeds: Split / initialisation seeds (the zoo is fixed, seed 0).
        n_images: Digit SIRENs in the editing zoo.
        fit_steps: Fitting steps per SIREN.
        cache_dir: Zoo cache folder (default: the user cache).
        lr: AdamW learning rate of the editors (``reproduce``: 3e-3; the authors: 1e-3 for
            150 epochs on ~45k INRs).
    """

    import torch

    from wsnets.comparison import DEFAULT_WIDTHS, EDIT_MODELS, mean_std
    from wsnets.lightning import DigitsINRDataModule, INREditor
    from wsnets.training import fit_and_test

    F_values, seeds = list(F or [1, 2, 4, 8]), list(seeds or [0])
    if model not in EDIT_MODELS:
        raise UsageError(f"model must be one of {', '.join(EDIT_MODELS)}, got {model!r}")
    if min(F_values) < 1:
        raise UsageError(f"the number of ensemble members F must be >= 1, got {min(F_values)}")
    if epochs < 1 or n_images < 10 or fit_steps < 1:
        raise UsageError("epochs and fit_steps must be >= 1 and n_images >= 10")
    if not lr > 0:
        raise UsageError(f"lr must be > 0, got {lr}")
    with quiet_lightning():
        width = width or DEFAULT_WIDTHS[model]
        depth = 2 if model in ("mlp", "mlp_aug", "canon") else 3
        print("| model | F | width | params | edit MSE | best epoch | seeds | epochs |")
        print("|---|---|---|---|---|---|---|---|")
        for f in F_values:
            mses, best = [], []
            for s in seeds:
                dm = DigitsINRDataModule(
                    "edit", n_images=n_images, fit_steps=fit_steps, init="shared", zoo_seed=0,
                    seed=s, batch_size=16, cache_dir=None if cache_dir is None else str(cache_dir),
                )  # fmt: skip
                meta = dm.meta
                torch.manual_seed(s)
                mod = INREditor(
                    meta["arch"], model, width, depth, F=f, image_size=meta["size"],
                    w0=meta["w0"], offset=meta["offset"], lr=lr,
                )  # fmt: skip
                res = fit_and_test(mod, dm, epochs)
                mses.append(res["test/loss"])
                best.append(res["best_epoch"])
            mse = mean_std(mses)
            mse = f"{mse:.4g}" if isinstance(mse, float) else mse
            print(
                f"| {model} | {f} | {mod.width} | {mod.n_params()} | {mse} | "
                f"{', '.join(map(str, best))} | {len(seeds)} | {epochs} |",
                flush=True,
            )


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="wsnets.lightning:WeightSpaceTask",
        datamodule_class="wsnets.lightning:ZooDataModule",
        subclass_mode_model=True,
        subclass_mode_data=True,
        commands={
            "make-zoo": "wsnets.cli:make_zoo",
            "edit": "wsnets.cli:edit",
            "predict-zoo": "wsnets.cli:predict_zoo",
            "check-equivariance": "wsnets.cli:check_equivariance",
            "benchmark": "wsnets.cli:benchmark",
            "f-sweep": "wsnets.cli:f_sweep",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``wsnets`` console script."""
    return build_cli().main(args)
