"""How the defaults of ``quantize_model`` were chosen: one-seed diagnostic on the full tiny Llama.

The tiny Llama of ``watersic reproduce --preset full`` (section tiny_lm: 4 layers, hidden 128,
FFN 352, 400 pretraining steps, seed 0), quantized at rates 1-4 by Huffman-GPTQ and by
WaterSIC with one or two options changed; held-out perplexity and KL (bits/token) as in the
section, plus the real size of the stored files. ``--layers`` also prints every layer's
relative output error. Run (about 10 CPU-minutes):

    OMP_NUM_THREADS=1 python docs/recipe_defaults.py 1,2,3,4 hgptq,coded-d2,...

Output laid out in docs/recipe_defaults.md.
"""

import sys
import warnings

import torch
from watersic.evaluation import layer_relative_mse, lm_report
from watersic.model_benchmarks import tiny_lm_data, trained_tiny_llama
from watersic.model_quantization import quantize_model
from watersic.tiny_llm import TinyLlamaSpec

warnings.simplefilter("ignore")
torch.set_num_threads(1)
SPEC = TinyLlamaSpec(
    hidden_size=128, intermediate_size=352, num_layers=4, num_heads=4, seq_len=128,
    train_steps=400, batch_size=16, lr=3e-3, train_bytes=2_000_000,
)  # fmt: skip
OFF = {"attention_weighted": False, "adaptive_blend": False}
VARIANTS = {
    "hgptq": {"method": "huffman-gptq"},
    "old-defaults": {"accounting": "pooled", "damping": 1e-4, **OFF},
    "pooled-d2": {"accounting": "pooled", "damping": 1e-2, **OFF},
    "per_column-d2": {"accounting": "per_column", "damping": 1e-2, **OFF},
    "coded-d4": {"accounting": "coded", "damping": 1e-4, **OFF},
    "coded-d2": {"accounting": "coded", "damping": 1e-2, **OFF},
    "coded-d3e2": {"accounting": "coded", "damping": 3e-2, **OFF},
    "coded-d1": {"accounting": "coded", "damping": 1e-1, **OFF},
    "coded-d2-attn": {"accounting": "coded", "damping": 1e-2, "attention_weighted": True,
                      "adaptive_blend": False},
    "coded-d2-blend": {"accounting": "coded", "damping": 1e-2, "attention_weighted": False,
                       "adaptive_blend": True},
    "coded-d2-attn-blend": {"accounting": "coded", "damping": 1e-2, "attention_weighted": True,
                            "adaptive_blend": True},
    "coded-d2-nodrift": {"accounting": "coded", "damping": 1e-2, "drift_correction": False,
                         "residual_compensation": False, **OFF},
}  # fmt: skip

if __name__ == "__main__":
    rates = [float(r) for r in sys.argv[1].split(",")]
    names = sys.argv[2].split(",")
    fp, _ = trained_tiny_llama(SPEC, 0)
    _, cal, ev = tiny_lm_data(SPEC, 128, 128)
    print("| rate | variant | rate (bits/w) | file (bits/w) | perplexity | KL (bits/token) |")
    print("|---|---|---|---|---|---|")
    for rate in rates:
        for name in names:
            kw = dict(VARIANTS[name])
            method = kw.pop("method", "watersic")
            art = quantize_model(fp, cal, rate, method, **kw)
            r = lm_report(fp, art.model, ev)
            print(f"| {rate:g} | {name} | {art.rate:.4f} | {art.coded_rate():.4f} | "
                  f"{r['perplexity']:.4f} | {r['kl_bits']:.5f} |", flush=True)  # fmt: skip
            if "--layers" in sys.argv:
                mse = layer_relative_mse(fp, art.model, [ev[:32]], list(art.layers))
                print("  " + " ".join(f"{k.split('.', 2)[2]}:{v:.2e}" for k, v in mse.items()))
