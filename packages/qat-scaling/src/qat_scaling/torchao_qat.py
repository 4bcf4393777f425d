"""torchao's QAT flow (``prepare`` / ``convert``) as an alternative trainer of the grid.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (W4A4
QAT: per-group symmetric integer weights, dynamic per-token per-group activations, STE).
torchao (the ``bench`` extra) is PyTorch's maintained QAT library; a grid entry of
``torchao_runs`` trains the same tiny Llama (same initial weights, same batches as the paired
runs of our trainer) after torchao's own ``prepare`` step, so its delta can be compared with
ours cell by cell (:func:`qat_scaling.sweep.torchao_agreement_table`).

- :func:`prepare`: ``quantize_(model, QATConfig(activation_config, weight_config,
  step="prepare"))`` on every linear layer of the decoder blocks (embeddings and LM head stay
  in full precision, as in our schemes); torchao swaps them for ``FakeQuantizedLinear``.
- :func:`convert`: ``quantize_(model, QATConfig(step="convert"))``: back to ``nn.Linear`` with
  the QAT-trained weights. torchao has no 4-bit-activation kernel to convert to, so no base
  config is applied; the loss that enters delta is the fake-quantised one, measured before
  the conversion, as in the paper (and as for our trainer).

torchao's scale is ``absmax / 7.5`` on ``[-8, 7]`` (our default is ``absmax / 7`` on
``[-7, 7]``; ``scale_rule="torchao"`` matches torchao bit for bit, see
:mod:`qat_scaling.torchao_parity`).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["TokenRows", "convert", "prepare"]

#: (weight bits, activation bits) of the schemes torchao trains here; 16 = full precision.
BITS = {"W4A4": (4, 4), "W4A16": (4, 16), "W16A4": (16, 4)}


def _is_block_linear(module: nn.Module, fqn: str) -> bool:
    return isinstance(module, nn.Linear) and ".layers." in f".{fqn}"


def prepare(model: nn.Module, scheme: str, group_size: int) -> nn.Module:
    """torchao's QAT ``prepare`` step on the decoder linears of ``model`` (in place).

    Args:
        model: A ``transformers`` Llama (e.g. :func:`qat_scaling.tiny_llama.tiny_llama`).
        scheme: ``W4A4``, ``W4A16`` or ``W16A4``.
        group_size: G of weights and activations.

    Returns:
        ``model`` with torchao ``FakeQuantizedLinear`` layers.

    Examples:
        >>> from qat_scaling.tiny_llama import tiny_llama
        >>> m = prepare(tiny_llama(32, 1, 64, 2), "W4A4", 16)  # doctest: +SKIP
        >>> type(m.model.layers[0].mlp.down_proj).__name__  # doctest: +SKIP
        'FakeQuantizedLinear'
    """
    from torchao.quantization import quantize_
    from torchao.quantization.qat import IntxFakeQuantizeConfig, QATConfig

    if scheme not in BITS:
        raise ValueError(f"torchao trainer: scheme {scheme!r} not in {sorted(BITS)}")
    w_bits, a_bits = BITS[scheme]

    def config(bits: int):
        if bits == 16:
            return None
        return IntxFakeQuantizeConfig(
            getattr(torch, f"int{bits}"), group_size=group_size, is_symmetric=True
        )

    quantize_(
        model,
        QATConfig(activation_config=config(a_bits), weight_config=config(w_bits), step="prepare"),
        filter_fn=_is_block_linear,
    )
    # torchao's per-group activation quantiser takes 2-D inputs: give it (tokens, features)
    for child in list(model.modules()):
        for attr, sub in list(child.named_children()):
            if _is_fake(sub):
                setattr(child, attr, TokenRows(sub))
    return model


class TokenRows(nn.Module):
    """Calls a linear layer on its input flattened to ``(tokens, features)`` rows.

    torchao's per-group activation fake quantiser accepts 2-D inputs only; per-token
    quantisation is the same on ``(B, T, h)`` and on its ``(B T, h)`` rows.
    """

    def __init__(self, linear: nn.Module) -> None:
        super().__init__()
        self.linear = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x.reshape(-1, x.shape[-1]))
        return y.reshape(*x.shape[:-1], y.shape[-1])


def _is_fake(module: nn.Module) -> bool:
    from torchao.quantization.qat import FakeQuantizedLinear

    return isinstance(module, FakeQuantizedLinear)


def convert(model: nn.Module) -> nn.Module:
    """torchao's QAT ``convert`` step: fake-quantised linears back to ``nn.Linear`` (in place)."""
    from torchao.quantization import quantize_
    from torchao.quantization.qat import QATConfig

    for child in list(model.modules()):
        for attr, sub in list(child.named_children()):
            if isinstance(sub, TokenRows):
                sub = sub.linear
                setattr(child, attr, sub)
            # torchao 0.18's convert reads the weight quantiser's config and fails on an
            # activation-only layer (W16A4): that swap is done with the layer's own to_linear
            if _is_fake(sub) and sub.weight_fake_quantizer is None:
                setattr(child, attr, sub.to_linear())
    quantize_(model, QATConfig(step="convert"), filter_fn=lambda m, fqn: _is_fake(m))
    return model
