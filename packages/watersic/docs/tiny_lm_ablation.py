"""Why WaterSIC trails Huffman-GPTQ on the tiny Llama: one quantize_model option at a time.

The quick tiny Llama of ``watersic reproduce --quick`` (section (c): 2 layers, hidden 64, FFN
176, 200 pretraining steps, seed 0), quantized at 2 bits with Huffman-GPTQ and with WaterSIC
under its defaults and with one option changed at a time; held-out perplexity and KL
(bits/token) as in section (c). Run: ``OMP_NUM_THREADS=1 python docs/tiny_lm_ablation.py``.
"""

import warnings

import torch
from watersic.evaluation import lm_report
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
print("| variant | rate (bits/w) | perplexity | KL (bits/token) |\n|---|---|---|---|")
base = lm_report(fp, fp, ev)
print(f"| full precision | 32 | {base['perplexity']:.4f} | 0 |")
variants = [
    ("huffman-gptq", dict(method="huffman-gptq")),
    ("watersic (defaults: pooled entropy, damping 1e-4, drift + residual)", dict(method="watersic")),
    ("watersic, no drift correction, no residual compensation",
     dict(method="watersic", drift_correction=False, residual_compensation=False)),
    ("watersic, no residual compensation", dict(method="watersic", residual_compensation=False)),
    ("watersic, damping 1e-2", dict(method="watersic", damping=1e-2)),
    ("watersic, per-column entropy", dict(method="watersic", accounting="per_column")),
    ("watersic, no global rate control", dict(method="watersic", rate_control=False)),
]  # fmt: skip
for name, kw in variants:
    method = kw.pop("method")
    art = quantize_model(fp, cal, 2.0, method, **kw)
    r = lm_report(fp, art.model, ev)
    print(f"| {name} | {art.rate:.4f} | {r['perplexity']:.4f} | {r['kl_bits']:.5f} |", flush=True)
