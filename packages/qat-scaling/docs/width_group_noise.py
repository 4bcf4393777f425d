"""Does the per-element quantisation noise at a fixed group size grow with the model's width?

Investigation script for the negative gN of results/sweep-2k (issue #33). The sizes of the
sweep differ in width (s16: hidden 16, FFN 32; s32: hidden 32, FFN 64), so at G = 16 one
activation group is a whole token vector of s16 and half of one of s32. If the relative error
that 4-bit per-group quantisation injects per element were larger at s32 than at s16 for the
same G, delta could grow with N through the grid's width-G layout rather than through what the
larger model has learned (a width-G confound).

For each size, the script builds the model of configs/sweep-2k.yaml (seed 0) at initialisation,
trains it with the sweep's own trainer (qat_scaling.grid.train_run: same weights, batches,
schedule, 2000 steps) as the FP run and, with ``--qat``, as the W4A4 G = 16 run, and measures
with qat_scaling.activation_outliers.quantisation_errors, per linear layer and averaged over the
two blocks, the relative squared errors of the weight, of the input and of the layer output
under 4-bit per-group quantisation at G = 4, 8 and 16 (the sweep's torchao scale rule), on the
first 4 validation batches (32 x 128 byte tokens). The validation loss of each retrained run is
printed next to the committed record of the same run, to show these are the sweep's models.

    OMP_NUM_THREADS=1 nice python docs/width_group_noise.py --qat > docs/width_group_noise.txt
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import yaml
from qat_scaling.activation_outliers import quantisation_errors
from qat_scaling.grid import GridSpec, train_run
from qat_scaling.lightning import QATLanguageModel, TextDataModule
from qat_scaling.quant_linear import LLAMA_LINEARS
from qat_scaling.tiny_llama import SIZES

HERE = Path(__file__).resolve().parent
GROUPS = (4, 8, 16)
SHORT = {n: n.split(".")[-1].replace("_proj", "") for n in LLAMA_LINEARS}


def measure(model, tokens, scale_rule) -> dict[int, dict]:
    return {g: quantisation_errors(model, tokens, 4, g, scale_rule) for g in GROUPS}


def table(label: str, errs: dict[int, dict]) -> list[str]:
    lines = []
    for kind in ("weight", "input", "output"):
        for g in GROUPS:
            vals = [errs[g][n][kind] for n in LLAMA_LINEARS]
            cells = " ".join(f"{v:8.5f}" for v in vals)
            lines.append(f"{label:24s} {kind:6s} G={g:<3d} {cells} {sum(vals) / len(vals):8.5f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="s16,s32")
    ap.add_argument("--qat", action="store_true", help="also the W4A4 G = 16 QAT-trained model")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = yaml.safe_load((HERE.parent / "configs" / "sweep-2k.yaml").read_text())
    spec = GridSpec(**{**cfg, "seeds": [0]})
    data = TextDataModule(
        spec.corpus,
        spec.seq_len,
        spec.batch_size,
        train_batches=spec.budgets[-1],
        val_batches=spec.val_batches,
        seed=0,
        corpus_kwargs=dict(spec.corpus_kwargs),
    )
    data.setup("fit")
    val = data.val_batches()
    tokens = torch.cat(val[:4])[:, :-1]
    committed = {}
    for line in (HERE.parent / "results" / "sweep-2k" / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["steps"] == spec.budgets[-1]:
            committed[r["run"]] = r["val_loss"]
    header = (
        f"{'model':24s} {'error':6s} {'G':5s} "
        + " ".join(f"{SHORT[n]:>8s}" for n in LLAMA_LINEARS)
        + f" {'mean':>8s}"
    )
    print("Relative squared error of 4-bit per-group quantisation (torchao scale rule), per")
    print("linear layer, mean over the 2 blocks; weight: ||Q(W)-W||^2/||W||^2, input:")
    print(
        "||Q(x)-x||^2/||x||^2 (per token, per group), output: ||Q(x)Q(W)^T - xW^T||^2/||xW^T||^2."
    )
    print(f"Inputs: 4 validation batches of configs/sweep-2k.yaml ({tuple(tokens.shape)} tokens).")
    print()
    jobs = [("FP", 0)] + ([("W4A4", 16)] if args.qat else [])
    for name in args.sizes.split(","):
        size = SIZES[name]
        init = QATLanguageModel(
            size.hidden,
            size.layers,
            size.ffn,
            size.heads,
            data.corpus.vocab_size,
            spec.seq_len,
            scheme="FP",
            group_size=16,
            seed=0,
        )
        print(f"== {name}: hidden {size.hidden}, FFN {size.ffn}, N = {init.n_params}")
        print(header)
        for line in table(f"{name} init", measure(init.model, tokens, spec.scale_rule)):
            print(line)
        for scheme, g in jobs:
            job = {"size": name, "scheme": scheme, "G": g, "seed": 0}
            got: dict = {}
            recs = train_run(spec, job, data, on_trained=lambda m, got=got: got.update(m=m))
            run = recs[-1]["run"]
            label = f"{name} {scheme}{f' G={g}' if g else ''} trained"
            for line in table(label, measure(got["m"].model, tokens, spec.scale_rule)):
                print(line)
            print(
                f"   {run}: val loss {recs[-1]['val_loss']:.6f} here, "
                f"{committed.get(run, float('nan')):.6f} in results/sweep-2k/runs.jsonl "
                f"({recs[-1]['seconds']:.0f} s)"
            )
            sys.stdout.flush()
        print()


if __name__ == "__main__":
    main()
