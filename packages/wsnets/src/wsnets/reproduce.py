"""``wsnets reproduce``: the paper's comparison at CPU scale, anchors in the same run.

Paper: "On the Expressive Power of Permutation-Equivariant Weight-Space Networks"
(Dayan, Eitan, Maron; ICML 2026, arXiv 2602.01083).

One run, on zoos the package generates offline (digits SIRENs, sine SIRENs, trained MLPs):

1. invariant tasks for every family (flat MLP, flat MLP + permutation augmentation,
   canonicalise-then-MLP, StatNN, DWS (= HNP-NFN here), NP-NFN+PE, NF-Transformer, GMN):
   digit-INR classification accuracy, sine frequency R^2, zoo generalisation Kendall tau --
   all at the best-validation epoch;
2. INR editing (dilation) with the output ensemble for every family with an equivariant
   head x ``F`` in {1, 2, 4, 8} (quick: {1, 8}), meta-network width reduced for ``F > 1`` so
   parameters never exceed the ``F = 1`` model; test MSE / PSNR at the best-validation
   epoch; the "no edit" anchor (render the input INR);
   every cell is mean ± std over the setting's seeds (full: 3; quick: 1);
3. a learnability anchor: StatNN features / flat weights + logistic regression on the same
   digits fitted from independent vs shared initialisations;
4. exact checks on the same models: max equivariance / invariance error under random
   hidden-neuron permutations, and the DWS layer's parameter count vs the numerical
   commutant dimension.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.progress import progress, quiet_lightning
from icml26_shared.results import Report, Table

from wsnets.architectures import build_model
from wsnets.baselines import block_statistics
from wsnets.commutant import commutant_dim, invariant_dim
from wsnets.equivariant_linear import EquivariantLinear
from wsnets.inr_zoo import make_digits_zoo
from wsnets.tasks import INRClassifier, INREditor, WeightRegressor
from wsnets.training import fit_and_test
from wsnets.weight_space import WeightSpace, image_coords
from wsnets.zoo_data import (
    DigitsINRDataModule,
    MLPZooDataModule,
    SineINRDataModule,
    cached_zoo,
)


@dataclass(frozen=True)
class Setting:
    n_images: int
    fit_steps: int
    n_edit: int
    n_sine: int
    n_zoo: int
    epochs: int
    edit_epochs: int
    F_values: tuple[int, ...]
    widths: dict
    seeds: tuple[int, ...] = (0,)
    batch_size: int = 16
    init: str = "shared"
    lr: float = 5e-3  # invariant tasks: DWSNets' classification recipe (AdamW, lr 5e-3)
    edit_lr: float = 3e-3  # editors (the authors use 1e-3 for 150 epochs on ~45k INRs)


WIDTHS_QUICK = {"dws": 6, "np_pe": 6, "nft": 6, "gmn": 12, "mlp": 64, "mlp_aug": 64,
                "canon": 64, "statnn": 64}  # fmt: skip
WIDTHS_FULL = {"dws": 8, "np_pe": 8, "nft": 8, "gmn": 16, "mlp": 96, "mlp_aug": 96,
               "canon": 96, "statnn": 96}  # fmt: skip
QUICK = Setting(  # a smoke run of the full setting: one seed, F in {1, 8}, short training
    n_images=300,
    fit_steps=100,
    n_edit=160,
    n_sine=160,
    n_zoo=160,
    epochs=8,
    edit_epochs=8,
    F_values=(1, 8),
    widths=WIDTHS_QUICK,
    seeds=(0,),
)
# Sized for a shared 2-core CPU (about 40 CPU-minutes idle). Training length matters more
# than seeds here: with 5 editing epochs (35 optimiser steps) no family showed the output-
# ensemble gain; with 30 epochs at lr 3e-3 it shows (``wsnets f-sweep`` measures longer runs).
FULL = Setting(
    n_images=300,
    fit_steps=100,
    n_edit=160,
    n_sine=160,
    n_zoo=160,
    epochs=20,
    edit_epochs=30,
    F_values=(1, 2, 4, 8),
    widths=WIDTHS_QUICK,
    seeds=(0,),
)
# invariant tasks: every family; HNP-NFN is built from the DWS layer (same commutant), so at
# the same seed it *is* the DWS network -- it is not trained twice (tests check the identity).
INVARIANT_MODELS = ("mlp", "mlp_aug", "canon", "statnn", "dws", "np_pe", "nft", "gmn")
EDIT_MODELS = ("mlp", "mlp_aug", "canon", "dws", "np_pe", "nft", "gmn")  # StatNN cannot edit
LABELS = {
    "mlp": "flat MLP",
    "mlp_aug": "flat MLP + perm. aug.",
    "canon": "canonicalise + MLP",
    "statnn": "StatNN (block statistics + MLP)",
    "dws": "DWS (= HNP-NFN)",
    "hnp": "HNP-NFN",
    "np_pe": "NP-NFN+PE",
    "nft": "NF-Transformer",
    "gmn": "GMN (neural graph)",
}
PARTIAL_EVERY = 6  # runs between partial reports during a long reproduce
CHECKED = ("mlp", "mlp_aug", "canon", "statnn", "dws", "hnp", "np_pe", "nft", "gmn")


def mean_std(values: list[float]):
    """One seed: the value; several: ``"mean ± std"`` (sample std) as a string cell."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    if len(vals) == 1:
        return vals[0]
    t = torch.tensor(vals, dtype=torch.float64)
    return f"{float(t.mean()):.4g} ± {float(t.std()):.2g}"


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


def learnability(zoo, seed: int = 0) -> dict:
    """Test accuracy of StatNN features + logistic regression, and of logistic regression on
    the raw flattened parameters, on a seeded 70/30 split of a digits zoo."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = zoo.targets["label"].numpy()
    perm = np.random.default_rng(seed).permutation(len(y))
    te, tr = perm[: int(0.3 * len(y))], perm[int(0.3 * len(y)) :]
    out = {}
    for key, X in (
        ("statnn", block_statistics(zoo.params).numpy()),
        ("flat", zoo.params.flatten().numpy()),
    ):
        clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000, C=0.5))
        out[key] = float(clf.fit(X[tr], y[tr]).score(X[te], y[te]))
    return out


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Train every family on every task (plus the output-ensemble sweep) and report.

    ``seed`` offsets the setting's training seeds (split + initialisation); the zoos are
    generated once with ``seed``.
    """
    torch.set_num_threads(1)
    with quiet_lightning():
        st = QUICK if quick else FULL
        out = Path(out)
        cache = out / "zoo-cache"
        t0 = time.perf_counter()
        zc = dict(cache_dir=str(cache), zoo_seed=seed, batch_size=st.batch_size)
        digits = dict(n_images=st.n_images, fit_steps=st.fit_steps, init=st.init, **zc)
        edit_kw = dict(n_images=st.n_edit, fit_steps=st.fit_steps, init=st.init, **zc)

        def modules(s: int):
            dms = (
                DigitsINRDataModule("classify", seed=s, **digits),
                DigitsINRDataModule("edit", seed=s, **edit_kw),
                SineINRDataModule(n=st.n_sine, seed=s, init=st.init, **zc),
                MLPZooDataModule(n=st.n_zoo, seed=s, **zc),
            )
            for dm in dms:
                dm.setup()
            return dms

        dms0 = modules(seed)
        meta, meta_edit = dms0[0].meta, dms0[1].meta
        # learnability anchor: the same digits, fitted from independent initialisations
        indep = cached_zoo(
            make_digits_zoo,
            str(cache),
            n=st.n_images,
            size=meta["size"],
            hidden=meta["arch"][1],
            variant=meta["variant"],
            w0=meta["w0"],
            steps=st.fit_steps,
            lr=meta["lr"],
            seed=seed,
        )
        learn = {"independent": learnability(indep, seed), st.init: learnability(dms0[0].zoo, seed)}
        zoo_time = time.perf_counter() - t0

        # the output-ensemble sweep first (the headline), then the invariant tasks
        jobs: list = [(m, F) for m in EDIT_MODELS for F in st.F_values]
        jobs += [(m, task) for m in INVARIANT_MODELS for task in ("cls", "sine", "zoo")]
        results: dict = {}
        dms: dict = {}

        def run(name, task, s: int) -> None:
            if s not in dms:
                dms.clear()
                dms[s] = modules(seed + s)
            dm_cls, dm_edit, dm_sine, dm_zoo = dms[s]
            w = st.widths[name]
            torch.manual_seed(seed + s)
            if task == "cls":
                mod = INRClassifier(meta["arch"], name, w, _depth(name), 10, lr=st.lr)
                res = fit_and_test(mod, dm_cls, st.epochs)
            elif task == "sine":
                mod = WeightRegressor(dm_sine.meta["arch"], name, w, _depth(name), lr=st.lr)
                res = fit_and_test(mod, dm_sine, st.epochs)
            elif task == "zoo":
                mod = WeightRegressor(dm_zoo.meta["arch"], name, w, _depth(name), lr=st.lr)
                res = fit_and_test(mod, dm_zoo, st.epochs)
            else:
                mod = INREditor(
                    meta_edit["arch"],
                    name,
                    w,
                    _depth(name),
                    F=int(task),
                    image_size=meta_edit["size"],
                    w0=meta_edit["w0"],
                    offset=meta_edit["offset"],
                    lr=st.edit_lr,
                )
                res = fit_and_test(mod, dm_edit, st.edit_epochs)
                task = ("edit", int(task))
            results.setdefault((name, task), []).append(
                (res, mod.n_params(), getattr(mod, "width", w))
            )

        def emit(seeds_done: tuple[int, ...], jobs_left: int = 0) -> Report:
            """The report over the runs finished so far (written during the run, too)."""
            report = Report("wsnets", out)
            # no-edit anchor: the input INR rendered against the dilated target (per seed's test split)
            no_edit = []
            for s in seeds_done:
                dm_edit = modules(seed + s)[1]
                idx, zoo = dm_edit.idx["test"], dm_edit.zoo
                v = WeightSpace(
                    [w[idx] for w in zoo.params.weights], [b[idx] for b in zoo.params.biases]
                )
                with torch.no_grad():
                    rend = v.render(
                        image_coords(meta_edit["size"]),
                        "sine",
                        meta_edit["w0"],
                        meta_edit["offset"],
                    )[..., 0, 0]
                target = zoo.targets["edit"][idx].reshape(len(idx), -1)
                no_edit.append(float(((rend - target) ** 2).mean()))
            no_edit_mse = float(sum(no_edit) / len(no_edit))

            def col(key, metric):
                runs = results.get(key)
                return None if runs is None else mean_std([r[0][metric] for r in runs])

            def avg(key, i, metric=None):
                runs = results.get(key)
                if runs is None:
                    return None
                vals = [r[0][metric] if metric else r[i] for r in runs]
                return sum(vals) / len(vals)

            nseeds = len(seeds_done)
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
                    f"{'mean ± std over ' + str(nseeds) + ' seeds' if nseeds > 1 else 'one seed'} "
                    f"(split + initialisation; zoos fixed). Digits SIRENs 2-16-16-1 ({meta['variant']} "
                    f"variant, w0={meta['w0']}, {st.init} initialisation + a random hidden permutation "
                    f"per INR, {st.n_images} scikit-learn digits upsampled to {meta['size']}x"
                    f"{meta['size']} for classification and {st.n_edit} for editing, {st.fit_steps} "
                    f"Adam steps, mean fit PSNR {meta['fit_psnr_db']:.1f} dB); sine SIRENs 1-16-16-1 "
                    f"({st.n_sine}, label omega in [1, 8]); MLP zoo 2-8-8-2 ({st.n_zoo} trained "
                    f"classifiers, label test accuracy). Split 70/15/15, AdamW wd 1e-3, batch "
                    f"{st.batch_size}, {st.epochs} epochs at lr {st.lr:g} (editing {st.edit_epochs} "
                    f"epochs at lr {st.edit_lr:g}), ReduceLROnPlateau; test numbers at "
                    "the best-validation epoch. F>1 rows: width reduced until params <= the F=1 "
                    "editor. Editing target: 3x3 grey dilation; 'no edit' anchor = input INR vs "
                    f"target, MSE {no_edit_mse:.4g}. Chance accuracy 0.1."
                ),
            )
            for name in INVARIANT_MODELS + tuple(
                m for m in EDIT_MODELS if m not in INVARIANT_MODELS
            ):
                inv = (name, "cls") in results
                for F in st.F_values:
                    ek = (name, ("edit", F))
                    if st.F_values[0] != F and ek not in results:
                        continue
                    row = {"model": LABELS[name], "F": F if ek in results else None}
                    row["width"] = avg(ek, 2) if ek in results else st.widths[name]
                    if ek in results:
                        row["width"] = int(row["width"])
                        row.update(
                            {
                                "params (edit)": int(avg(ek, 1)),
                                "edit MSE": col(ek, "test/loss"),
                                "edit PSNR": col(ek, "test/psnr"),
                                "s/epoch (edit)": avg(ek, 0, "s_per_epoch"),
                            }
                        )
                    if inv and st.F_values[0] == F:
                        row.update(
                            {
                                "digit-INR acc": col((name, "cls"), "test/acc"),
                                "sine R2": col((name, "sine"), "test/r2"),
                                "zoo Kendall tau": col((name, "zoo"), "test/kendall"),
                                "params (cls)": int(avg((name, "cls"), 1)),
                                "s/epoch (cls)": avg((name, "cls"), 0, "s_per_epoch"),
                            }
                        )
                    table.add_row(**row)
            table.add_row(model="no edit (anchor)", **{"edit MSE": mean_std(no_edit)})
            report.add_table(table)

            lt = Table(
                "Is the digit class learnable from the weights? (logistic regression, same digits)",
                [
                    "zoo initialisation",
                    "StatNN features + logistic regression acc",
                    "flat weights + logistic regression acc",
                    "chance",
                ],
                notes=(
                    f"{st.n_images} digit SIRENs, seeded 70/30 split, scikit-learn LogisticRegression "
                    "(C=0.5) on standardised features. 'shared' = every INR fitted from one "
                    "initialisation, then a random hidden-neuron permutation per INR (the function is "
                    "unchanged, the G_A symmetry of the data is kept)."
                ),
            )
            for key, acc in learn.items():
                lt.add_row(
                    **{
                        "zoo initialisation": key,
                        "StatNN features + logistic regression acc": acc["statnn"],
                        "flat weights + logistic regression acc": acc["flat"],
                        "chance": 0.1,
                    }
                )
            report.add_table(lt)

            # ------------------------------------------------------------ exact checks
            checks = Table(
                "Exact symmetry checks on the trained architectures (random hidden-neuron permutations)",
                ["model", "invariant head rel. error", "equivariant head rel. error"],
                notes="max |f(rho(tau) v) - f(v)| / max |f(v)| (equivariant: against rho(tau) f(v)), float32.",
            )
            for name in CHECKED:
                row = {
                    "invariant head rel. error": _equivariance_error(
                        name, meta["arch"], 4, "invariant", seed
                    )
                }
                if name != "statnn":
                    row["equivariant head rel. error"] = _equivariance_error(
                        name, meta["arch"], 4, "equivariant", seed
                    )
                checks.add_row(model=LABELS[name].replace(" (= HNP-NFN)", ""), **row)
            report.add_table(checks)
            comm = Table(
                "DWS / NP layer parameters vs the numerical commutant (SVD), architecture [2, 3, 4, 2]",
                [
                    "group",
                    "layer linear params",
                    "commutant dim",
                    "layer bias params",
                    "invariant dim",
                ],
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
            for name in EDIT_MODELS:
                Fs = [F for F in st.F_values if (name, ("edit", F)) in results]
                vals = [
                    torch.tensor([r[0]["test/loss"] for r in results[(name, ("edit", F))]])
                    for F in Fs
                ]
                ax.errorbar(
                    Fs,
                    [float(v.mean()) for v in vals],
                    yerr=[float(v.std()) if len(v) > 1 else 0.0 for v in vals],
                    fmt="o-",
                    capsize=2,
                    label=LABELS[name],
                )
            ax.axhline(no_edit_mse, color="grey", ls="--", label="no edit")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("output-ensemble size F (matched parameters)")
            ax.set_ylabel("test MSE (dilation)")
            ax.legend(fontsize=6)
            report.save_figure(fig, "edit_mse_vs_F.png")
            report.note(
                f"Zoo generation took {zoo_time:.0f} s (cached in {cache.name}/ next to the results). "
                f"The quick run is a smoke run of the full setting: F in {{1, 8}}, {st.epochs} "
                f"epochs (editing {st.edit_epochs})."
                if quick
                else f"Zoo generation took {zoo_time:.0f} s (cached in {cache.name}/ next to the results)."
            )
            if len(seeds_done) < len(st.seeds) or jobs_left:
                report.note(
                    f"PARTIAL: seeds {list(seeds_done)} of {list(st.seeds)} started, "
                    f"{jobs_left} runs of the last one left."
                )
            return report

        for i, s in enumerate(st.seeds):
            desc = f"wsnets reproduce (seed {s})"
            for j, (name, task) in enumerate(progress(jobs, desc=desc, total=len(jobs))):
                run(name, task, s)
                left = len(jobs) - j - 1
                if (
                    left and (j + 1) % PARTIAL_EVERY == 0
                ):  # a usable partial report during long runs
                    emit(st.seeds[: i + 1], left).write()
            if i < len(st.seeds) - 1:
                emit(st.seeds[: i + 1]).write()
        return emit(st.seeds)
