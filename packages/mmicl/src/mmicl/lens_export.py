"""Export of the ICL decoder to TransformerLens, for users who want its tooling.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).
The paper's circuit analysis (induction / previous-token heads, head knockout) is what
TransformerLens is built for. TransformerLens 4 removed ``HookedTransformer``; its supported
way to give any ``nn.Module`` TransformerLens hooks is ``HookedRootModule`` + ``HookPoint``
(``run_with_cache``, ``run_with_hooks``, ``ActivationCache``, the patching utilities).
:func:`to_transformer_lens` rebuilds a trained :class:`~mmicl.transformer.ICLDecoder` as
such a module, with the *standard hook names* of ``transformer_lens.utilities.get_act_name``,
so ``cache["pattern", layer]``, ``cache["z", layer]`` or ``cache["resid_post", layer]`` work
as they do for a HookedTransformer:

* ``hook_embed`` (S, T, d_model): the token embedding; ``hook_pos_embed`` (absolute positions
  only, evaluation positions ``0..T-1``);
* per block ``blocks.{l}``: ``hook_resid_pre``, ``ln1.hook_scale`` / ``ln1.hook_normalized``,
  ``attn.hook_q`` / ``hook_k`` / ``hook_v`` (S, T, H, d_head), ``attn.hook_rot_q`` /
  ``hook_rot_k`` (RoPE / hybrid), ``attn.hook_attn_scores`` (S, H, T, T; causal mask applied,
  ALiBi bias included), ``attn.hook_pattern`` (S, H, T, T), ``attn.hook_z`` (S, T, H, d_head),
  ``hook_attn_out``, ``hook_resid_mid``, ``ln2.*``, ``mlp.hook_pre`` (gate pre-activation
  ``W1 x``), ``mlp.hook_pre_linear`` (``W3 x``), ``mlp.hook_post``, ``hook_mlp_out``,
  ``hook_resid_post``;
* ``ln_final.hook_normalized`` and the label logits of the last token (S, L).

The maths is the decoder's, term for term (same parameters, copied); zero-ablating a head's
``hook_z`` is exactly :func:`mmicl.transformer.knockout` (tests check both). Needs
``pip install 'mmicl[lens]'`` (``transformer-lens``), imported only when this is called.
"""

from __future__ import annotations

import copy
import functools
import math

import torch
from torch import nn

from mmicl.positions import alibi_bias, apply_rope, rope_angles
from mmicl.transformer import ICLDecoder, check_tokens

# our position kinds in TransformerLens' names (hybrid = learned absolute + rotary)
POSITION_NAMES = {
    "ape": "standard",
    "rope": "rotary",
    "alibi": "alibi",
    "hybrid": "standard+rotary",
    "none": "none",
}
LENS_HINT = "the TransformerLens export needs transformer-lens: pip install 'mmicl[lens]'"


def to_transformer_lens(model: ICLDecoder) -> nn.Module:
    """A TransformerLens ``HookedRootModule`` computing exactly ``model`` (evaluation mode).

    Parameters
    ----------
    model:
        A (trained) :class:`~mmicl.transformer.ICLDecoder`; its parameters are copied, the
        original is left untouched. For a multimodal model pass ``mm.decoder`` and feed it
        ``mm.tokens(batch)`` (the projected sequence).

    Returns
    -------
    ``HookedICLDecoder``: ``forward(tokens (S, T, d_in)) -> logits (S, L)``, plus every
    ``HookedRootModule`` method (``run_with_cache``, ``run_with_hooks``, ``hook_dict``).

    Examples
    --------
    >>> torch.manual_seed(0) is not None
    True
    >>> m = ICLDecoder(d_in=8, n_labels=4, d_model=16, n_heads=2, pos="rope").eval()
    >>> x = torch.randn(3, 17, 8)
    >>> hooked = to_transformer_lens(m)
    >>> logits, cache = hooked.run_with_cache(x)
    >>> bool(torch.allclose(logits, m(x), atol=1e-5)), tuple(cache["pattern", 1].shape)
    (True, (3, 2, 17, 17))
    """
    if not isinstance(model, ICLDecoder):
        raise TypeError(f"expected an ICLDecoder, got {type(model).__name__}")
    return _classes()["HookedICLDecoder"](model)


@functools.cache
def _classes() -> dict:
    """Define the hooked modules (on first use: importing transformer-lens is slow)."""
    try:
        from transformer_lens.ActivationCache import ActivationCache
        from transformer_lens.config import TransformerLensConfig
        from transformer_lens.hook_points import HookPoint
        from transformer_lens.HookedRootModule import HookedRootModule
    except ImportError as err:  # pragma: no cover - exercised with the module hidden
        raise ImportError(LENS_HINT) from err

    class HookedRMSNorm(nn.Module):
        """``x / sqrt(mean(x^2) + eps) * w`` with TransformerLens' two hooks."""

        def __init__(self, norm) -> None:
            super().__init__()
            self.w, self.eps = norm.weight, norm.eps
            self.hook_scale, self.hook_normalized = HookPoint(), HookPoint()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            scale = self.hook_scale((x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt())
            return self.hook_normalized(x / scale) * self.w

    class HookedAttention(nn.Module):
        """Causal attention of :class:`mmicl.transformer.CausalSelfAttention`, hooked."""

        def __init__(self, attn) -> None:
            super().__init__()
            self.qkv, self.out = attn.qkv, attn.out
            self.n_heads, self.d_head, self.pos, self.theta = (
                attn.n_heads,
                attn.d_head,
                attn.pos,
                attn.theta,
            )
            self.register_buffer("head_mask", attn.head_mask.clone(), persistent=False)
            for name in ("q", "k", "v", "rot_q", "rot_k", "attn_scores", "pattern", "z"):
                setattr(self, f"hook_{name}", HookPoint())

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            S, T, _ = x.shape
            q, k, v = self.qkv(x).view(S, T, 3, self.n_heads, self.d_head).unbind(2)
            q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)  # (S, T, H, d_head)
            if self.pos in ("rope", "hybrid"):
                ang = rope_angles(torch.arange(T, device=x.device), self.d_head, self.theta)
                ang = ang.to(x.device)
                q = self.hook_rot_q(apply_rope(q.transpose(1, 2), ang).transpose(1, 2))
                k = self.hook_rot_k(apply_rope(k.transpose(1, 2), ang).transpose(1, 2))
            scores = torch.einsum("sqhd,skhd->shqk", q, k) / math.sqrt(self.d_head)
            if self.pos == "alibi":
                scores = scores + alibi_bias(self.n_heads, T).to(x.device)
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            scores = self.hook_attn_scores(scores.masked_fill(~causal, float("-inf")))
            pattern = self.hook_pattern(scores.softmax(-1))  # (S, H, T, T)
            z = torch.einsum("shqk,skhd->sqhd", pattern, v) * self.head_mask.view(1, 1, -1, 1)
            z = self.hook_z(z)  # (S, T, H, d_head)
            return self.out(z.reshape(S, T, self.n_heads * self.d_head))

    class HookedGatedMLP(nn.Module):
        """SwiGLU ``W2 (SiLU(W1 x) * W3 x)`` or the authors' ``W2 SiLU(W1 x * W3 x)``."""

        def __init__(self, mlp) -> None:
            super().__init__()
            self.w1, self.w3, self.w2, self.kind = mlp.w1, mlp.w3, mlp.w2, mlp.kind
            self.hook_pre, self.hook_pre_linear, self.hook_post = (HookPoint() for _ in "123")

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            gate, lin = self.hook_pre(self.w1(x)), self.hook_pre_linear(self.w3(x))
            if self.kind == "swiglu":
                act = nn.functional.silu(gate) * lin
            else:
                act = nn.functional.silu(gate * lin)
            return self.w2(self.hook_post(act))

    class HookedBlock(nn.Module):
        def __init__(self, block) -> None:
            super().__init__()
            self.ln1, self.attn = HookedRMSNorm(block.norm1), HookedAttention(block.attn)
            self.ln2, self.mlp = HookedRMSNorm(block.norm2), HookedGatedMLP(block.mlp)
            for name in ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post"):
                setattr(self, f"hook_{name}", HookPoint())

        def forward(self, h: torch.Tensor) -> torch.Tensor:
            h = self.hook_resid_pre(h)
            h = self.hook_resid_mid(h + self.hook_attn_out(self.attn(self.ln1(h))))
            return self.hook_resid_post(h + self.hook_mlp_out(self.mlp(self.ln2(h))))

    class HookedICLDecoder(HookedRootModule):
        """:class:`~mmicl.transformer.ICLDecoder` with TransformerLens hook points.

        Build it with :func:`to_transformer_lens`; absolute positions are the evaluation
        positions ``0..T-1`` (no training-time random shift).
        """

        def __init__(self, model: ICLDecoder) -> None:
            super().__init__()
            m = copy.deepcopy(model).eval()
            self.d_in, self.n_labels, self.max_positions = m.d_in, m.n_labels, m.max_positions
            self.n_layers, self.n_heads, self.pos = m.n_layers, m.n_heads, m.pos
            self.embed, self.abs_pos, self.readout = m.embed, m.abs_pos, m.readout
            self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()
            self.blocks = nn.ModuleList(HookedBlock(b) for b in m.blocks)
            self.ln_final = HookedRMSNorm(m.norm)
            att = m.blocks[0].attn
            # the fields ActivationCache's helpers read (layer counts, widths, norm type)
            self.cfg = TransformerLensConfig(
                d_model=m.d_model,
                d_head=att.d_head,
                n_layers=m.n_layers,
                n_ctx=m.max_positions,
                n_heads=m.n_heads,
                d_mlp=m.blocks[0].mlp.w1.out_features,
                d_vocab=m.n_labels,
                positional_embedding_type=POSITION_NAMES[m.pos],
                gated_mlp=True,
                uses_rms_norm=True,
                eps=m.norm.eps,
                act_fn="silu",
                normalization_type="RMSPre",
                final_rms=True,
                device=str(m.readout.weight.device),
            )
            self.eval()
            self.setup()

        def run_with_cache(self, *args, **kwargs):
            """``(logits, ActivationCache)``; keyword arguments as in ``HookedRootModule``."""
            out, cache = super().run_with_cache(*args, **kwargs)
            has_batch = not kwargs.get("remove_batch_dim", False)
            return out, ActivationCache(cache, self, has_batch_dim=has_batch)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            S, T = check_tokens(tokens, self.d_in, self.max_positions)
            h = self.hook_embed(self.embed(tokens))  # (S, T, d_model)
            if self.abs_pos is not None:
                pos = self.abs_pos.embed(torch.arange(T, device=tokens.device))
                h = h + self.hook_pos_embed(pos.expand(S, T, -1))
            for block in self.blocks:
                h = block(h)
            return self.readout(self.ln_final(h)[:, -1])  # (S, L)

        def heads(self) -> list[tuple[int, int]]:
            """All ``(layer, head)`` pairs."""
            return [(layer, h) for layer in range(self.n_layers) for h in range(self.n_heads)]

    return {"HookedICLDecoder": HookedICLDecoder}


@torch.no_grad()
def lens_circuit_measures(model: ICLDecoder, batch: dict[str, torch.Tensor]) -> dict[str, float]:
    """IH strength (last layer) and previous-token strength (first layer) read from the
    attention patterns that TransformerLens caches (``cache["pattern", layer]``) on the
    exported model, with the definitions of :mod:`mmicl.progress_measures` written out
    here on the cached tensors, so that comparing them with
    :func:`mmicl.evaluation.circuit_measures` checks the export and the measures at once.

    Returns ``{"ih": ..., "prev": ...}`` averaged over heads and over the sequences where
    the measure is defined (unimodal batches: ``tokens``, ``match_label``, ``label_mask``).
    """
    hooked = to_transformer_lens(model)
    last = model.n_layers - 1
    names = {f"blocks.{last}.attn.hook_pattern", "blocks.0.attn.hook_pattern"}
    _, cache = hooked.run_with_cache(batch["tokens"], names_filter=lambda n: n in names)
    row = cache["pattern", last][:, :, -1, :].mean(1)  # final token, mean over heads (S, T)
    match = batch["match_label"].float()
    other = (batch["label_mask"] & ~batch["match_label"]).float()
    n_match = match.sum(-1)
    ih = torch.einsum("st,st->s", row, match) / n_match.clamp_min(1) - torch.einsum(
        "st,st->s", row, other
    ) / other.sum(-1).clamp_min(1)
    first = cache["pattern", 0].mean(1)  # (S, T, T)
    T = first.shape[-1]
    prev = first[:, torch.arange(1, T), torch.arange(0, T - 1)].mean(-1)
    valid = n_match > 0
    return {"ih": float(ih[valid].mean()) if valid.any() else 0.0, "prev": float(prev.mean())}
