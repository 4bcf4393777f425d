"""Regenerate the example inputs of "On your own data": ``corpus.txt`` and ``tiny-llama/``.

* ``corpus.txt``: the first paragraph of the docstrings of some CPython standard-library
  modules (PSF licence), one paragraph per line: real English, shipped with every Python.
* ``tiny-llama/``: a randomly initialised 2-layer ``LlamaForCausalLM`` (hidden 64) with a
  byte-level BPE tokenizer (vocabulary 384) trained on ``corpus.txt`` by ``tokenizers``,
  saved with ``save_pretrained`` (safetensors), so ``transformers`` loads it offline.

Run from this folder: ``python make_tiny_llama.py`` (seeded; the files are committed).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = ("test", "idlelib", "tkinter", "turtle", "antigravity", "this", "__")


def corpus_lines(limit: int = 400) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules() if m.name in sys.stdlib_module_names)
    lines = []
    for name in names:
        if name.startswith(SKIP):
            continue
        try:
            doc = importlib.import_module(name).__doc__ or ""
        except Exception:  # noqa: BLE001 - platform-specific modules
            continue
        para = " ".join(doc.strip().split("\n\n")[0].split())
        if len(para) > 40 and para.isascii():
            lines.append(para)
        if len(lines) >= limit:
            break
    return lines


def main() -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    lines = corpus_lines()
    (HERE / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=384, special_tokens=["</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train_from_iterator(lines, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>")
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128,
        tie_word_embeddings=False, eos_token_id=fast.eos_token_id, bos_token_id=None,
    )  # fmt: skip
    model = LlamaForCausalLM(cfg)
    out = HERE / "tiny-llama"
    model.save_pretrained(out)
    fast.save_pretrained(out)
    print(f"{len(lines)} lines; vocab {len(fast)}; wrote {out}")


if __name__ == "__main__":
    main()
