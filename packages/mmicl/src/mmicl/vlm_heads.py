"""Induction-head ranking and head knockout in a pretrained (vision-)language model.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796),
the Qwen2.5-VL analysis: rank the attention heads of a pretrained model by previous-token and
induction strength on in-context prompts, then knock out the top heads and measure ICL.

1. induction prompts ``[x_1, y_1, ..., x_N, y_N, x_q]`` of token ids: ``N / B`` item tokens,
   each repeated ``B`` times with one label token drawn per prompt (a novel item -> label map,
   so only the context can solve it), the query item is one of the context items
   -> :func:`induction_prompts`;
2. per head ``(layer, h)``: IH strength of the query token's attention (mean on the label
   tokens equal to the target minus mean on the others) and previous-token strength (first
   subdiagonal), from ``output_attentions`` -> :func:`rank_heads`;
3. knockout: zero head ``h``'s slice of the input to the layer's output projection ``o_proj``
   (a forward pre-hook) -> :func:`knockout_heads`;
4. ICL accuracy: the arg-max over the label tokens of the next-token logits at the query
   equals the label paired with the query item in the context -> :func:`icl_accuracy`;
5. table: none / top-k induction heads / k random other heads / top-k previous-token heads
   -> :func:`vlm_knockout_table`.

Models come through ``transformers``: :func:`load_vlm` goes through
:func:`icml26_shared.hub.from_pretrained` (offline: only the local cache is tried, and a
missing model is one clear error); :func:`tiny_qwen2_5_vl` builds a randomly initialised
Qwen2.5-VL from a small config, for tests and a dry run (its numbers mean nothing).
The prompts are text-only token sequences; the VL-ICL Bench image prompts are not built here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from mmicl.progress_measures import final_row, induction_strength, previous_token_strength

DEFAULT_MODEL = "Qwen/Qwen2.5-VL-3B-Instruct"
OFFLINE_HINT = (
    "put the model in the local Hugging Face cache (or pass a local directory), or use "
    "`mmicl vlm-heads --tiny` / `mmicl knockout` on the synthetic testbed"
)


def _transformers():
    try:
        import transformers
    except ImportError as exc:
        raise ImportError(
            "the pretrained-model analysis needs 'transformers': pip install 'mmicl[bench]'"
        ) from exc
    return transformers


def load_vlm(model_id: str = DEFAULT_MODEL, dtype: Any = None) -> torch.nn.Module:
    """Load a pretrained (vision-)language model with eager attention, offline-aware.

    ``*VL*`` ids load with ``AutoModelForImageTextToText``, others with
    ``AutoModelForCausalLM``. Raises :class:`icml26_shared.hub.HubUnavailableError` naming the
    model when it is neither local nor reachable.
    """
    from icml26_shared.hub import from_pretrained

    tf = _transformers()
    cls = tf.AutoModelForImageTextToText if "vl" in model_id.lower() else tf.AutoModelForCausalLM
    kwargs: dict[str, Any] = {"attn_implementation": "eager"}
    if dtype is not None:
        kwargs["dtype"] = dtype
    model = from_pretrained(cls, model_id, offline_hint=OFFLINE_HINT, **kwargs)
    return model.eval()


def tiny_qwen2_5_vl(seed: int = 0, vocab_size: int = 256, n_layers: int = 2, n_heads: int = 4):
    """A randomly initialised Qwen2.5-VL built from a small config (no download).

    Examples
    --------
    >>> m = tiny_qwen2_5_vl()  # doctest: +SKIP
    >>> [a.num_heads for a in attention_layers(m)]  # doctest: +SKIP
    [4, 4]
    """
    tf = _transformers()
    hidden = 8 * n_heads
    cfg = tf.Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
            num_hidden_layers=n_layers, num_attention_heads=n_heads,
            num_key_value_heads=max(1, n_heads // 2), max_position_embeddings=512,
            rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
        ),
        vision_config=dict(
            depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
            fullatt_block_indexes=[0],
        ),
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(seed)
    return tf.Qwen2_5_VLForConditionalGeneration(cfg).eval()


class _HeadView:
    """One attention layer of a transformers model: its ``o_proj`` and head layout."""

    def __init__(self, name: str, module: torch.nn.Module, n_heads: int) -> None:
        self.name, self.module, self.num_heads = name, module, n_heads
        self.head_dim = module.o_proj.in_features // n_heads


def _text_config(model: torch.nn.Module):
    cfg = model.config
    return getattr(cfg, "text_config", None) or cfg


def attention_layers(model: torch.nn.Module) -> list[_HeadView]:
    """The language model's self-attention layers (vision tower excluded), in order."""
    n_heads = _text_config(model).num_attention_heads
    layers = [
        _HeadView(name, mod, n_heads)
        for name, mod in model.named_modules()
        if name.endswith("self_attn") and hasattr(mod, "o_proj") and "visual" not in name
    ]
    if not layers:
        raise ValueError(f"no self-attention layers with an o_proj in {type(model).__name__}")
    return layers


@contextlib.contextmanager
def knockout_heads(model: torch.nn.Module, heads: Iterable[tuple[int, int]]) -> Iterator[None]:
    """Zero the ``(layer, head)`` slices of the input to ``o_proj`` inside the ``with`` block."""
    layers = attention_layers(model)
    by_layer: dict[int, list[int]] = {}
    for layer, h in heads:
        if not (0 <= layer < len(layers) and 0 <= h < layers[layer].num_heads):
            raise ValueError(f"no head ({layer}, {h}) in a {len(layers)}-layer model")
        by_layer.setdefault(layer, []).append(h)
    handles = []

    def make_hook(view: _HeadView, hs: list[int]):
        def hook(_module, args):
            x = args[0]
            mask = torch.ones(view.num_heads, device=x.device, dtype=x.dtype)
            mask[hs] = 0
            x = (x.unflatten(-1, (view.num_heads, view.head_dim)) * mask[:, None]).flatten(-2)
            return (x, *args[1:])

        return hook

    try:
        for layer, hs in by_layer.items():
            view = layers[layer]
            handles.append(view.module.o_proj.register_forward_pre_hook(make_hook(view, hs)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def induction_prompts(
    n: int, N: int, B: int, item_ids: torch.Tensor, label_ids: torch.Tensor, seed: int = 0
) -> dict[str, torch.Tensor]:
    """Bursty token-level ICL prompts ``[x_1, y_1, ..., x_N, y_N, x_q]``.

    Returns ``input_ids`` (n, 2N+1), ``target`` (n,) index into ``label_ids``, and masks over
    positions: ``label_mask`` (label tokens) and ``match_label`` (label tokens equal to the
    target).

    Examples
    --------
    >>> p = induction_prompts(2, 4, 2, torch.arange(10, 20), torch.arange(20, 24))
    >>> p["input_ids"].shape, int(p["match_label"].sum())
    (torch.Size([2, 9]), 4)
    """
    if N % B or B >= N or B < 1:
        raise ValueError(f"N={N} must be a multiple of the burst size B={B} and B < N")
    n_cls = N // B
    if len(item_ids) < n_cls or len(label_ids) < n_cls:
        raise ValueError(f"need at least N/B={n_cls} item and label tokens")
    g = torch.Generator().manual_seed(seed)
    items = torch.stack([torch.randperm(len(item_ids), generator=g)[:n_cls] for _ in range(n)])
    labels = torch.stack([torch.randperm(len(label_ids), generator=g)[:n_cls] for _ in range(n)])
    order = torch.stack([torch.randperm(N, generator=g) for _ in range(n)]) % n_cls
    ctx_items, ctx_labels = items.gather(1, order), labels.gather(1, order)
    q = torch.randint(0, n_cls, (n, 1), generator=g)
    q_item, target = items.gather(1, q), labels.gather(1, q)[:, 0]
    ids = torch.stack([item_ids[ctx_items], label_ids[ctx_labels]], dim=-1).flatten(1)
    ids = torch.cat([ids, item_ids[q_item]], dim=1)
    label_mask = torch.zeros_like(ids, dtype=torch.bool)
    label_mask[:, 1 : 2 * N : 2] = True
    match = torch.zeros_like(label_mask)
    match[:, 1 : 2 * N : 2] = ctx_labels == target[:, None]
    return {"input_ids": ids, "target": target, "label_mask": label_mask, "match_label": match}


def default_token_pools(model: torch.nn.Module, n_items: int = 256, n_labels: int = 32):
    """Item and label token ids from the middle of the vocabulary (disjoint)."""
    vocab = _text_config(model).vocab_size
    start = vocab // 4
    if start + n_items + n_labels > vocab:
        n_items = max(1, (vocab - start) // 2)
        n_labels = max(1, vocab - start - n_items)
    items = torch.arange(start, start + n_items)
    return items, torch.arange(start + n_items, start + n_items + n_labels)


@torch.no_grad()
def _forward(model, ids: torch.Tensor, attentions: bool):
    return model(input_ids=ids, output_attentions=attentions, use_cache=False)


@torch.no_grad()
def rank_heads(model: torch.nn.Module, prompts: dict[str, torch.Tensor]) -> list[dict]:
    """IH strength and previous-token strength of every language-model head, per layer."""
    out = _forward(model, prompts["input_ids"], attentions=True)
    if not out.attentions or out.attentions[0] is None:
        raise ValueError("the model returned no attention weights; load it with eager attention")
    rows = []
    for layer, attn in enumerate(out.attentions):
        attn = attn.float()
        for h in range(attn.shape[1]):
            ih, ok = induction_strength(
                final_row(attn, h), prompts["match_label"], prompts["label_mask"]
            )
            prev = previous_token_strength(attn, 1, h)
            rows.append(
                {"layer": layer, "head": h, "ih": float(ih[ok].mean()), "prev": float(prev.mean())}
            )
    return rows


@torch.no_grad()
def icl_accuracy(model: torch.nn.Module, prompts: dict, label_ids: torch.Tensor) -> float:
    """Fraction of prompts whose next-token arg-max over the label tokens is the target."""
    logits = _forward(model, prompts["input_ids"], attentions=False).logits[:, -1]
    pred = logits[:, label_ids].argmax(-1)
    return float((pred == prompts["target"]).float().mean())


def vlm_knockout_table(
    model: torch.nn.Module,
    prompts: dict,
    label_ids: torch.Tensor,
    top_k: int = 1,
    seed: int = 0,
) -> list[dict]:
    """ICL accuracy with no knockout and after knocking out the top-``k`` induction heads,
    ``k`` random other heads, and the top-``k`` previous-token heads."""
    ranks = rank_heads(model, prompts)
    key = [(r["layer"], r["head"]) for r in ranks]
    by_ih = [key[i] for i in sorted(range(len(ranks)), key=lambda i: -ranks[i]["ih"])]
    by_prev = [key[i] for i in sorted(range(len(ranks)), key=lambda i: -ranks[i]["prev"])]
    if not 1 <= top_k < len(key):
        raise ValueError(f"top_k={top_k} must be in [1, {len(key) - 1}] for {len(key)} heads")
    top = by_ih[:top_k]
    rest = [k for k in key if k not in top]
    g = torch.Generator().manual_seed(seed)
    rand = [rest[int(i)] for i in torch.randperm(len(rest), generator=g)[:top_k]]
    table = []
    for name, heads in (
        ("none", []),
        (f"top-{top_k} induction heads", top),
        (f"{top_k} random other heads", rand),
        (f"top-{top_k} previous-token heads", by_prev[:top_k]),
    ):
        with knockout_heads(model, heads):
            acc = icl_accuracy(model, prompts, label_ids)
        table.append(
            {
                "knockout": name,
                "heads": ", ".join(f"L{a}H{b}" for a, b in heads) or "-",
                "ICL acc": acc,
            }
        )
    return table
