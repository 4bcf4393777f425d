"""Per-layer check behind the README's MiniLM note: calibration size vs held-out error.

For three linears of block 1 of all-MiniLM-L6-v2 (full-precision inputs, no drift), quantize
at 2 bits with the second moment of N calibration tokens and report the relative output error
tr(E S E^T) / tr(W S W^T) under the calibration S and under the held-out S (512 other stdlib
docstrings, padding left out). Run: python docs/minilm_calibration_size.py  (bench extra).
"""

import warnings

import torch
from watersic import minilm
from watersic.gptq import huffman_gptq
from watersic.layer_quantizer import quantize_matrix
from watersic.text_corpus import stdlib_docstrings

torch.set_num_threads(1)
warnings.simplefilter("ignore")
NAMES = [
    "encoder.layer.1.attention.self.query",
    "encoder.layer.1.intermediate.dense",
    "encoder.layer.1.output.dense",
]


def moments(model, batches):
    mods = dict(model.named_modules())
    acc = {n: [0.0, 0] for n in NAMES}
    mask = [None]

    def hook(m, args, n):
        x = args[0].reshape(-1, args[0].shape[-1]).double()
        if mask[0] is not None:
            x = x[mask[0].reshape(-1).bool()]
        acc[n][0] = acc[n][0] + x.T @ x
        acc[n][1] += x.shape[0]

    hs = [mods[n].register_forward_pre_hook(lambda m, a, n=n: hook(m, a, n)) for n in NAMES]
    with torch.no_grad():
        for b in batches:
            mask[0] = b.get("attention_mask") if isinstance(b, dict) else None
            model(**b) if isinstance(b, dict) else model(input_ids=b)
    for h in hs:
        h.remove()
    return {n: acc[n][0] / acc[n][1] for n in NAMES}


def rel(W, What, S):
    E = W - What
    return float(((E @ S) * E).sum() / ((W @ S) * W).sum())


def main():
    model, tok = minilm.load_minilm()
    docs = list(stdlib_docstrings())
    held = moments(model, minilm.encoder_batches(tok, docs[-512:]))
    mods = dict(model.named_modules())
    print("| calibration | layer (out x in) | method | cal. rel. error | held-out rel. error |")
    print("|---|---|---|---|---|")
    for n_docs, seq in ((48, 32), (512, 128), (2048, 128)):
        cal = minilm.calibration_windows(tok, docs[:n_docs], seq)
        S = moments(model, cal.split(16))
        for n in NAMES:
            W = mods[n].weight.detach().double()
            for label, q in (
                ("watersic", quantize_matrix(W, S[n], rate=2.0)),
                ("watersic, damping 1e-2", quantize_matrix(W, S[n], rate=2.0, damping=1e-2)),
                ("huffman-gptq", huffman_gptq(W, S[n], rate=2.0)),
            ):
                Wh = q.dequantize(torch.float64)
                print(
                    f"| {cal.numel()} tokens | {n.split('layer.1.')[1]} {tuple(W.shape)} | "
                    f"{label} | {rel(W, Wh, S[n]):.4f} | {rel(W, Wh, held[n]):.4f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
