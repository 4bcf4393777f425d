"""``wsnets reproduce``: the paper's comparison at CPU scale, anchors in the same run.

Paper: "On the Expressive Power of Permutation-Equivariant Weight-Space Networks"
(Dayan, Eitan, Maron; ICML 2026, arXiv 2602.01083).

One run, on zoos the package generates offline (digits SIRENs, sine SIRENs, trained MLPs):

1. invariant tasks for every family (flat MLP, flat MLP + permutation augmentation,
   canonicalise-then-MLP, DWS, HNP-NFN, NP-NFN+PE, NF-Transformer, GMN): digit-INR classification accuracy, sine
   frequency R^2, zoo generalisation Kendall tau -- all at the best-validation epoch;
2. INR editing (dilation) with the output ensemble, ``F`` in {1, 2, 4, 8} (quick: {1, 8}),
   meta-network width reduced for ``F > 1`` so parameters never exceed the ``F = 1`` model;
   test MSE / PSNR at the best-validation epoch; the "no edit" anchor (render the input INR);
3. exact checks on the same models: max equivariance / invariance error under random
   hidden-neuron permutations, and the DWS layer's parameter count vs the numerical
   commutant dimension.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.progress import progress
from icml26_shared.results import Report, Table

from wsnets.architectures import build_model
from wsnets.commutant import commutant_dim, invariant_dim
from wsnets.equivariant_linear import EquivariantLinear
from wsnets.tasks import INRClassifier, INREditor, WeightRegressor
from wsnets.training import fit_and_test
from wsnets.weight_space import WeightSpace, image_coords
from wsnets.zoo_data import DigitsINRDataModule, MLPZooDataModule, SineINRDataModule


@dataclass(frozen=True)
class Setting:
    n_images: int
    fit_steps: int
    n_sine: int
    n_zoo: int
    epochs: int
    edit_epochs: int
    F_values: tuple[int, ...]
    edit_models: tuple[str, ...]
    widths: dict
    batch_size: int = 16


QUICK = Setting(
    n_images=200,
    fit_steps=100,
    n_sine=160,
    n_zoo=160,
    epochs=6,
    edit_epochs=6,
    F_values=(1, 8),
    edit_models=("dws", "gmn"),
    widths={
        "dws": 6,
        "hnp": 6,
        "np_pe": 6,
        "nft": 6,
        "gmn": 12,
        "mlp": 64,
        "mlp_aug": 64,
        "canon": 64,
    },
)
FULL = Setting(
    n_images=400,
    fit_steps=200,
    n_sine=320,
    n_zoo=320,
    epochs=12,
    edit_epochs=10,
    F_values=(1, 2, 4, 8),
    edit_models=("dws", "gmn"),
    widths={
        "dws": 8,
        "hnp": 8,
        "np_pe": 8,
        "nft": 8,
        "gmn": 16,
        "mlp": 96,
        "mlp_aug": 96,
        "canon": 96,
    },
)
MODELS = ("mlp", "mlp_aug", "canon", "dws", "hnp", "np_pe", "nft", "gmn")
LABELS = {
    "mlp": "flat MLP",
    "mlp_aug": "flat MLP + perm. aug.",
    "canon": "canonicalise + MLP",
    "dws": "DWS",
    "hnp": "HNP-NFN",
    "np_pe": "NP-NFN+PE",
    "nft": "NF-Transformer",
    "gmn": "GMN (neural graph)",
}


def _depth(name: str) -> int:
    return 2 if name in ("mlp", "mlp_aug", "canon") else 3


def _equivariance_error(name: str, arch, width: int, head: str, seed: int) -> float:
    torch.manual_seed(seed)
    net = build_model(name, arch, width, _depth(name), head, 3).eval()
    v = WeightSpace.random(arch, batch=4)
    tau = v.batch_random_permutation(torch.Generator().manual_seed(seed))
    with torch.no_grad():
        a, b = net(v.permute(tau)), net(v)
    if head == "equivariant":
        a, b = a.flatten(), b.permute(tau).flatten()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-12))


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train every family on every task (plus the output-ensemble sweep) and report."""
    torch.set_num_threads(1)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    st = QUICK if quick else FULL
    out = Path(out)
    cache = out / "zoo-cache"
    report = Report("wsnets", out)
    t0 = time.perf_counter()
    common = dict(batch_size=st.batch_size, seed=seed, cache_dir=str(cache))
    digits = dict(n_images=st.n_images, fit_steps=st.fit_steps, **common)
    dm_cls = DigitsINRDataModule("classify", **digits)
    dm_edit = DigitsINRDataModule("edit", **digits)
    dm_sine = SineINRDataModule(n=st.n_sine, **common)
    dm_zoo = MLPZooDataModule(n=st.n_zoo, **common)
    for dm in (dm_cls, dm_edit, dm_sine, dm_zoo):
        dm.setup()
    meta = dm_cls.meta
    zoo_time = time.perf_counter() - t0

    jobs = [(m, task) for m in MODELS for task in ("cls", "sine", "zoo")]
    jobs += [(m, F) for m in st.edit_models for F in st.F_values]
    jobs += [("mlp", "edit1")]
    results: dict = {}
    for name, task in progress(jobs, desc="wsnets reproduce", total=len(jobs)):
        w = st.widths[name]
        torch.manual_seed(seed)
        if task == "cls":
            mod = INRClassifier(meta["arch"], name, w, _depth(name), 10)
            results[(name, task)] = (fit_and_test(mod, dm_cls, st.epochs), mod.n_params(), w)
        elif task == "sine":
            mod = WeightRegressor(dm_sine.meta["arch"], name, w, _depth(name))
            results[(name, task)] = (fit_and_test(mod, dm_sine, st.epochs), mod.n_params(), w)
        elif task == "zoo":
            mod = WeightRegressor(dm_zoo.meta["arch"], name, w, _depth(name))
            results[(name, task)] = (fit_and_test(mod, dm_zoo, st.epochs), mod.n_params(), w)
        else:
            F = 1 if task == "edit1" else int(task)
            mod = INREditor(
                meta["arch"],
                name,
                w,
                _depth(name),
                F=F,
                image_size=meta["size"],
                w0=meta["w0"],
                offset=meta["offset"],
            )
            res = fit_and_test(mod, dm_edit, st.edit_epochs)
            results[(name, ("edit", F))] = (res, mod.n_params(), mod.width)

    # no-edit anchor: the input INR rendered against the dilated target
    idx = dm_edit.idx["test"]
    zoo = dm_edit.zoo
    v = WeightSpace([w[idx] for w in zoo.params.weights], [b[idx] for b in zoo.params.biases])
    with torch.no_grad():
        rend = v.render(image_coords(meta["size"]), "sine", meta["w0"], meta["offset"])[..., 0, 0]
    target = zoo.targets["edit"][idx].reshape(len(idx), -1)
    no_edit_mse = float(((rend - target) ** 2).mean())

    table = Table(
        "Weight-space architectures and the output ensemble (best-validation epoch, test split)",
        [
            "model",
            "F",
            "width",
            "params (edit)",
            "digit-INR acc",
            "edit MSE",
            "edit PSNR",
            "sine R2",
            "zoo Kendall tau",
            "params (cls)",
            "s/epoch (cls)",
            "s/epoch (edit)",
        ],
        units={"edit PSNR": "dB"},
        notes=(
            f"Digits SIRENs 2-16-16-1 ({meta['variant']} variant, w0={meta['w0']}, "
            f"{st.n_images} scikit-learn digits upsampled to {meta['size']}x{meta['size']}, "
            f"{st.fit_steps} Adam steps, mean fit PSNR {meta['fit_psnr_db']:.1f} dB); sine "
            f"SIRENs 1-16-16-1 ({st.n_sine}, label omega in [1, 8]); MLP zoo 2-8-8-2 "
            f"({st.n_zoo} trained classifiers, label test accuracy). Split 70/15/15, AdamW "
            f"lr 1e-3 wd 1e-3, batch {st.batch_size}, {st.epochs} epochs (editing "
            f"{st.edit_epochs}); all test numbers at the best-validation epoch. F>1 rows: "
            "width reduced until params <= the F=1 editor. Editing target: 3x3 grey "
            f"dilation; 'no edit' anchor = input INR vs target, MSE {no_edit_mse:.4g}."
        ),
    )
    for name in MODELS:
        cls, np_cls, _ = results[(name, "cls")]
        sine, _, _ = results[(name, "sine")]
        zoo_r, _, _ = results[(name, "zoo")]
        edit = results.get((name, ("edit", 1)))
        row = dict(
            model=LABELS[name],
            F=1 if edit else None,
            width=st.widths[name],
            **{
                "digit-INR acc": cls["test/acc"],
                "sine R2": sine["test/r2"],
                "zoo Kendall tau": zoo_r["test/kendall"],
                "params (cls)": np_cls,
                "s/epoch (cls)": cls["s_per_epoch"],
            },
        )
        if edit:
            row.update(
                {
                    "params (edit)": edit[1],
                    "edit MSE": edit[0]["test/loss"],
                    "edit PSNR": edit[0]["test/psnr"],
                    "s/epoch (edit)": edit[0]["s_per_epoch"],
                }
            )
        table.add_row(**row)
        for F in st.F_values[1:]:
            if (name, ("edit", F)) in results:
                res, npar, width = results[(name, ("edit", F))]
                table.add_row(
                    model=LABELS[name],
                    F=F,
                    width=width,
                    **{
                        "params (edit)": npar,
                        "edit MSE": res["test/loss"],
                        "edit PSNR": res["test/psnr"],
                        "s/epoch (edit)": res["s_per_epoch"],
                    },
                )
    table.add_row(model="no edit (anchor)", **{"edit MSE": no_edit_mse})
    report.add_table(table)

    # ------------------------------------------------------------ exact checks
    checks = Table(
        "Exact symmetry checks on the trained architectures (random hidden-neuron permutations)",
        ["model", "invariant head rel. error", "equivariant head rel. error"],
        notes="max |f(rho(tau) v) - f(v)| / max |f(v)| (equivariant: against rho(tau) f(v)), float32.",
    )
    for name in MODELS:
        checks.add_row(
            model=LABELS[name],
            **{
                "invariant head rel. error": _equivariance_error(
                    name, meta["arch"], 4, "invariant", seed
                ),
                "equivariant head rel. error": _equivariance_error(
                    name, meta["arch"], 4, "equivariant", seed
                ),
            },
        )
    report.add_table(checks)
    comm = Table(
        "DWS / NP layer parameters vs the numerical commutant (SVD), architecture [2, 3, 4, 2]",
        ["group", "layer linear params", "commutant dim", "layer bias params", "invariant dim"],
    )
    for group, fixed in (("hidden neurons (DWS)", None), ("all neurons (NP)", ())):
        layer = EquivariantLinear([2, 3, 4, 2], 1, 1, fixed)
        comm.add_row(
            group=group,
            **{
                "layer linear params": layer.n_basis(),
                "commutant dim": commutant_dim([2, 3, 4, 2], fixed),
                "layer bias params": layer.n_bias_basis(),
                "invariant dim": invariant_dim([2, 3, 4, 2], fixed),
            },
        )
    report.add_table(comm)

    # ------------------------------------------------------------ figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for name in st.edit_models:
        Fs = [F for F in st.F_values if (name, ("edit", F)) in results]
        ax.plot(
            Fs, [results[(name, ("edit", F))][0]["test/loss"] for F in Fs], "o-", label=LABELS[name]
        )
    ax.axhline(no_edit_mse, color="grey", ls="--", label="no edit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("output-ensemble size F (matched parameters)")
    ax.set_ylabel("test MSE (dilation)")
    ax.legend(fontsize=8)
    report.save_figure(fig, "edit_mse_vs_F.png")
    report.note(
        f"Zoo generation took {zoo_time:.0f} s (cached in {cache.name}/ next to the results). "
        "Quick runs use fewer INRs, fewer epochs and F in {1, 8} only."
        if quick
        else f"Zoo generation took {zoo_time:.0f} s (cached in {cache.name}/ next to the results)."
    )
    return report
