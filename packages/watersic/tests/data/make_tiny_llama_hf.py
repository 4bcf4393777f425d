"""Regenerate ``tiny-llama-hf/``: a small Llama-style Hugging Face folder for the own-model test.

It stands in for a user's local checkpoint (``config.json``, ``model.safetensors`` and a
tokenizer), so ``watersic quantize --model tests/data/tiny-llama-hf`` runs offline. The model is
the package's quick tiny Llama (hidden 64, 2 blocks, byte vocabulary), pretrained for 40 steps
on CPython's sources with seed 0; the tokenizer is a byte-level BPE without merges whose id of
byte ``b`` is ``b``, the vocabulary the model was trained on.

Run from the package folder: ``python tests/data/make_tiny_llama_hf.py``.
"""

from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from watersic.lightning import train_tiny_llama
from watersic.tiny_llm import TinyLlamaSpec


def byte_alphabet() -> dict[int, str]:
    """GPT-2's printable stand-in character for every byte (the ByteLevel pre-tokenizer's)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def byte_tokenizer() -> PreTrainedTokenizerFast:
    vocab = {c: b for b, c in byte_alphabet().items()}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok)


if __name__ == "__main__":
    spec = TinyLlamaSpec(
        hidden_size=64, intermediate_size=176, num_layers=2, num_heads=2, seq_len=64,
        train_steps=40, train_bytes=200_000,
    )  # fmt: skip
    out = Path(__file__).parent / "tiny-llama-hf"
    model = train_tiny_llama(spec, seed=0)
    model.save_pretrained(out, safe_serialization=True)
    byte_tokenizer().save_pretrained(out)
    print(f"wrote {out}")
