"""Where does the noise of delta = L_QAT - L_FP come from? (investigation script, not shipped)

Trains one paired FP / W4A4 run of the grid runner at one size and seed and evaluates both on
every validation window of the corpus, keeping the loss of each window. Prints delta on all
windows and on the first 128 (the old sweep's 16 batches of 8), the standard error of each
from the per-window paired differences, and the unigram and bigram entropy of the training
bytes (a model above the unigram entropy has learned nothing in its blocks, so quantising the
blocks costs nothing).

    OMP_NUM_THREADS=1 nice python docs/paired_delta_noise.py s32 1260 32 0 0.01
    OMP_NUM_THREADS=1 nice python docs/paired_delta_noise.py s32 420 32 0 0.003

(arguments: size, steps, G, seed, lr; batch 8 x 128 byte tokens, WSD with a decay branch at
half the steps, torchao's scale convention, as in configs/sweep-long.yaml).

    python docs/paired_delta_noise.py --entropy > docs/corpus_entropy.txt

prints only the entropies of the training bytes (the committed docs/corpus_entropy.txt).
"""

import sys

import qat_scaling.grid as grid
import torch
from qat_scaling.lightning import TextDataModule


def entropies(train: torch.Tensor) -> tuple[float, float]:
    """Unigram entropy and conditional bigram entropy of a byte tensor (nats)."""
    uni = torch.bincount(train, minlength=256).double()
    p = uni / uni.sum()
    h1 = float(-(p[p > 0] * p[p > 0].log()).sum())
    pair = torch.bincount(train[:-1] * 256 + train[1:], minlength=65536).double().view(256, 256)
    joint, cond = pair / pair.sum(), pair / pair.sum(1, keepdim=True).clamp(min=1)
    m = joint > 0
    return h1, float(-(joint[m] * cond[m].log()).sum())


def main() -> None:
    if sys.argv[1:] == ["--entropy"]:
        from qat_scaling.corpora import build_corpus

        corpus = build_corpus("stdlib")
        h1, h2 = entropies(corpus.train)
        print(f"stdlib corpus, {len(corpus.train)} training bytes")
        print(f"unigram entropy {h1:.4f} nats per byte")
        print(f"conditional bigram entropy {h2:.4f} nats per byte")
        return
    size, steps, G, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    lr = float(sys.argv[5])
    torch.set_num_threads(1)
    per_window: list[torch.Tensor] = []

    @torch.no_grad()
    def evaluate(module, batches):  # the grid's evaluation, keeping every window's loss
        module.eval()
        losses = []
        for b in batches:
            logits = module(b[:, :-1]).transpose(1, 2).float()
            losses.append(torch.nn.functional.cross_entropy(logits, b[:, 1:], reduction="none"))
        module.train()
        v = torch.cat(losses).mean(1)
        per_window.append(v)
        return float(v.mean())

    grid.evaluate = evaluate
    spec = grid.GridSpec(
        sizes=(size,),
        budgets=(steps // 2, steps),
        runs=(("FP", 0), ("W4A4", G)),
        val_batches=10**6,  # every window
        lr=lr,
        scale_rule="torchao",
    )
    dm = TextDataModule(spec.corpus, spec.seq_len, spec.batch_size, steps, spec.val_batches, seed)
    dm.setup("fit")
    h1, h2 = entropies(dm.corpus.train)
    print(f"training bytes: unigram entropy {h1:.3f}, bigram conditional entropy {h2:.3f} nats")
    losses = {}
    for scheme, g in spec.runs:
        per_window.clear()
        recs = grid.train_run(spec, {"size": size, "scheme": scheme, "G": g, "seed": seed}, dm)
        losses[scheme] = list(per_window)
        print(scheme, "val loss per budget", [round(r["val_loss"], 4) for r in recs])
    for k, budget in enumerate(spec.budgets):
        d = losses["W4A4"][k] - losses["FP"][k]
        n = len(d)
        print(
            f"{budget} steps: delta {d.mean():.5f} (SE {d.std() / n**0.5:.5f}, {n} windows); "
            f"first 128 windows {d[:128].mean():.5f} (SE {d[:128].std() / 128**0.5:.5f})"
        )


if __name__ == "__main__":
    main()
