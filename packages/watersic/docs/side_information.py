"""Where WaterSIC loses on the tiny Llama: side information, layer width and entropy coding.

Two measurements on the quick tiny Llama of ``watersic reproduce --preset quick`` (section
(c): 2 layers, hidden 64, FFN 176, 200 pretraining steps, seed 0):

1. one layer (block 0 ``q_proj``, 64 x 64, its calibration second moment): relative output
   error of WaterSIC and Huffman-GPTQ at equal rate, for the real weights, for the same rows
   stacked 32 times (2048 x 64: the side information per weight shrinks as in a wide model),
   for iid Gaussian weights of the same size, and for the real rows at equal norms;
2. the whole model at 2 and 4 bits under each rate accounting, with the size of the real
   bitstream next to the accounted rate.

Run: ``OMP_NUM_THREADS=1 python docs/side_information.py`` (a few minutes on 2 cores).
"""

import warnings

import torch
from watersic.evaluation import lm_report
from watersic.gptq import huffman_gptq
from watersic.layer_quantizer import quantize_matrix
from watersic.lightning import train_tiny_llama
from watersic.model_quantization import quantize_model
from watersic.text_corpus import byte_sequences, stdlib_text
from watersic.tiny_llm import TinyLlamaSpec

warnings.simplefilter("ignore")
torch.set_num_threads(1)
spec = TinyLlamaSpec(
    hidden_size=64, intermediate_size=176, num_layers=2, num_heads=2, seq_len=64,
    train_steps=200, batch_size=16, lr=3e-3, train_bytes=500_000,
)  # fmt: skip
fp = train_tiny_llama(spec, 0)
cal = byte_sequences(stdlib_text("train", spec.train_bytes), 64, 64)
ev = byte_sequences(stdlib_text("heldout"), 64, 64)

inputs = []
layer = fp.model.layers[0].self_attn.q_proj
hook = layer.register_forward_pre_hook(lambda m, a: inputs.append(a[0].reshape(-1, 64).double()))
with torch.no_grad():
    fp(input_ids=cal)
hook.remove()
X = torch.cat(inputs)
S = X.T @ X / len(X)  # (64, 64)
W = layer.weight.detach().double()  # (64, 64)
iid = torch.randn(W.shape, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
equal_rows = W / W.norm(dim=1, keepdim=True) * W.norm() / W.shape[0] ** 0.5
print("## 1. One layer (block 0 q_proj), relative output error at equal rate\n")
print(
    "| weights | rows | rate | WaterSIC side bits/w | WaterSIC rel. error "
    "| Huffman-GPTQ side bits/w | Huffman-GPTQ rel. error | ratio |"
)
print("|---|---|---|---|---|---|---|---|")
for name, M in [
    ("real", W), ("real, rows x32", W.repeat(32, 1)),
    ("iid Gaussian, x32", (iid * W.std()).repeat(32, 1)),
    ("real, equal row norms, x32", equal_rows.repeat(32, 1)),
]:  # fmt: skip
    for rate in (1.0, 2.0, 3.0, 4.0):
        a, b = quantize_matrix(M, S, rate=rate), huffman_gptq(M, S, rate=rate)
        print(
            f"| {name} | {M.shape[0]} | {rate:g} | {a.side_bits / M.numel():.3f} "
            f"| {a.relative_distortion:.3g} | {b.side_bits / M.numel():.3f} "
            f"| {b.relative_distortion:.3g} | {a.relative_distortion / b.relative_distortion:.2f} |"
        )

print("\n## 2. Whole model: accounted rate, real bitstream size and KL\n")
print(
    "| rate | method | accounting | damping | accounted (bits/w) | bitstream (bits/w) "
    "| KL (bits/token) |"
)
print("|---|---|---|---|---|---|---|")
for rate in (2.0, 4.0):
    for method, acc, damping in [
        ("huffman-gptq", "pooled", None), ("watersic", "pooled", None),
        ("watersic", "coded", None), ("watersic", "coded", 1e-2),
    ]:  # fmt: skip
        art = quantize_model(fp, cal, rate, method, accounting=acc, damping=damping)
        kl = lm_report(fp, art.model, ev)["kl_bits"]
        print(
            f"| {rate:g} | {method} | {acc} | {damping or 'default'} | {art.rate:.3f} "
            f"| {art.coded_rate():.3f} | {kl:.5f} |"
        )
