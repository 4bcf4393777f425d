"""How much gradient torchao's QAT backward blocks, against ours (investigation script).

Builds the s16 model (width 16) of configs/sweep-2k.yaml, quantises it W4A4 at G = 16 with
torchao's QAT flow (qat_scaling.torchao_qat.prepare) and with our QuantLinear at torchao's scale
convention (the two forward passes agree bit for bit, tests/test_sweep.py), runs one forward /
backward pass of the language-model loss on random bytes and prints, for the first quantised
linear layers, the fraction of exactly-zero gradient entries of the layer's input (activations)
and of its weight. torchao's straight-through estimator is zero where its clamp is active; at
its scale convention (absmax / 7.5 on [-8, 7]) that includes the largest positive entry of
every group (7.5 rounds to 8 and is clamped to 7), about 1 / G of the entries.

    OMP_NUM_THREADS=1 python docs/torchao_gradient_mask.py > docs/torchao_gradient_mask.txt
"""

import copy

import torch
from qat_scaling.quant_linear import QATScheme, apply_qat
from qat_scaling.tiny_llama import SIZES, tiny_llama
from qat_scaling.torchao_qat import prepare

LAYERS = ("self_attn.q_proj", "mlp.up_proj", "mlp.down_proj")


def main() -> None:
    size, G = SIZES["s16"], 16
    base = tiny_llama(size.hidden, size.layers, size.ffn, size.heads, seed=0)
    x = torch.randint(0, 256, (8, 128), generator=torch.Generator().manual_seed(0))
    models = {
        "torchao": prepare(copy.deepcopy(base), "W4A4", G),
        "ours": apply_qat(
            copy.deepcopy(base), QATScheme.preset("W4A4", group_size=G, scale_rule="torchao")
        ),
    }
    print(f"s16 (hidden {size.hidden}), W4A4, G = {G}, one batch of 8 x 128 random bytes")
    print("trainer  layer                      zero input grad  zero weight grad")
    for name, model in models.items():
        inputs = {}
        hooks = []
        for layer in LAYERS:
            mod = model.get_submodule(f"model.layers.0.{layer}")

            def keep(m, args, layer=layer, inputs=inputs):
                args[0].retain_grad()
                inputs[layer] = args[0]

            hooks.append(mod.register_forward_pre_hook(keep))
        model(input_ids=x, labels=x).loss.backward()
        for layer in LAYERS:
            mod = model.get_submodule(f"model.layers.0.{layer}")
            w = mod.weight if hasattr(mod, "weight") else mod.linear.weight
            a = (inputs[layer].grad == 0).float().mean().item()
            print(
                f"{name:8} layers.0.{layer:18} {a:15.3f}  {(w.grad == 0).float().mean().item():16.3f}"
            )
        for h in hooks:
            h.remove()


if __name__ == "__main__":
    main()
