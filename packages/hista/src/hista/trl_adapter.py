"""Adapter: our token-level advantage providers inside TRL's ``GRPOTrainer`` (``bench`` extra).

TRL computes one advantage per sequence, ``(R - mean) / std``. Its loss accepts ``(B, T)``
advantages from subclasses, which is what the authors' code relies on. ``token_advantage_trainer``
builds such a subclass:

1. ``_calculate_rewards`` is wrapped to keep the per-function rewards of the batch.
2. ``_generate_and_score_completions`` calls TRL, then regroups the local completions into
   groups of ``num_generations`` (TRL's sampler repeats each prompt that many times in a row),
   builds one ``RolloutGroup`` per prompt (token spans by prefix decoding of the generated ids;
   for Hista one extra no-grad forward pass per group for the last-layer hidden states; our own
   ``PolicyRLModule`` reuses its log-prob pass instead) and replaces
   ``advantages`` with the provider's per-token ``(B, T)`` tensor (zero on padding).

``advantage="group"`` gives GRPO's advantages again (a consistency check against TRL itself).
Rewards must lie in [0, 1] (verifier outcomes), as Numca's table assumes.
"""

from __future__ import annotations

import torch

from .advantage_provider import HistaAdvantages, RolloutGroup, make_provider


def _require_trl():
    try:
        from trl import GRPOTrainer
    except ImportError as exc:
        raise ImportError("the TRL adapter needs trl: pip install 'hista[bench]'") from exc
    return GRPOTrainer


def token_advantage_trainer(advantage: str = "numca", **provider_kwargs):
    """A ``GRPOTrainer`` subclass whose advantages come from ``make_provider(advantage)``."""
    grpo_trainer = _require_trl()
    provider = make_provider(advantage, **provider_kwargs)

    class TokenAdvantageGRPOTrainer(grpo_trainer):
        """``GRPOTrainer`` with per-token advantages from a Numca / Hista / group provider."""

        advantage_provider = provider

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._hista_last_rewards = rewards
            self._hista_last_inputs = inputs
            return rewards

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            per_func = self._hista_last_rewards
            weights = self.reward_weights.to(per_func.device)
            rewards_all = (per_func * weights[None]).nansum(1)
            n_local = out["completion_ids"].shape[0]
            rank = self.accelerator.process_index
            rewards = rewards_all[rank * n_local : (rank + 1) * n_local].float().cpu()
            out["advantages"] = self._token_advantages(out, rewards, self._hista_last_inputs)
            return out

        @torch.no_grad()
        def _token_advantages(self, out, rewards, inputs):
            g = self.num_generations
            ids, mask = out["completion_ids"], out["completion_mask"]
            b, t = ids.shape
            if b % g:
                raise ValueError(f"{b} local completions are not whole groups of {g}")
            tok = self.processing_class
            need_hidden = isinstance(self.advantage_provider, HistaAdvantages)
            adv = torch.zeros(b, t, device=ids.device)
            for s in range(0, b, g):
                texts, spans, hidden, starts = [], [], [], []
                for i in range(s, s + g):
                    n = max(int(mask[i].sum()), 1)
                    seq = ids[i, :n].tolist()
                    text = tok.decode(seq, skip_special_tokens=True)
                    sp, prev = [], 0
                    for k in range(1, n + 1):
                        cur = len(tok.decode(seq[:k], skip_special_tokens=True))
                        sp.append((prev, cur))
                        prev = cur
                    texts.append(text)
                    spans.append(sp)
                    if need_hidden:
                        p_ids = out["prompt_ids"][i][out["prompt_mask"][i].bool()]
                        hidden.append(torch.cat([p_ids, ids[i, :n]]))
                        starts.append(len(p_ids))
                if need_hidden:  # one right-padded forward for the whole group
                    lens = [len(x) for x in hidden]
                    full = torch.zeros(g, max(lens), dtype=ids.dtype, device=ids.device)
                    att = torch.zeros_like(full)
                    for j, x in enumerate(hidden):
                        full[j, : lens[j]], att[j, : lens[j]] = x, 1
                    h = self.model(full, attention_mask=att, output_hidden_states=True)
                    h = h.hidden_states[-1].float().cpu()
                    hidden = [h[j, : lens[j]] for j in range(g)]
                pid = str(inputs[s].get("problem_id", inputs[s].get("prompt", s)))
                group = RolloutGroup(
                    pid,
                    texts,
                    rewards[s : s + g].tolist(),
                    spans,
                    hidden if need_hidden else None,
                    starts if need_hidden else None,
                )
                for j, a in enumerate(self.advantage_provider(group)):
                    adv[s + j, : len(a)] = a.to(adv.device)
            return adv * mask

    TokenAdvantageGRPOTrainer.__name__ = f"TokenAdvantageGRPOTrainer[{advantage}]"
    return TokenAdvantageGRPOTrainer


def arith_trl_reward(problems, eos_id: int):
    """ArithChain reward in TRL's reward-function form.

    TRL decodes completions without special tokens, so the EOS ``;`` is gone from the text;
    a completion counts as terminated iff its ids end with ``eos_id``.

    Examples
    --------
    >>> from hista.arith_chain import Problem
    >>> fn = arith_trl_reward([Problem((3, 4))], eos_id=13)
    >>> fn(["7", "7", "8"], prompts=["3+4="] * 3, completion_ids=[[7, 13], [7], [8, 13]])
    [1.0, 0.0, 0.0]
    """
    from .arith_chain import Problem, reward

    by_prompt = {p.prompt: p for p in problems}

    def arith_reward(completions, prompts=None, completion_ids=None, **kwargs):
        ids = completion_ids or [[]] * len(completions)
        texts = [
            c.rstrip(";") + (";" if len(i) and int(i[-1]) == eos_id else "")
            for c, i in zip(completions, ids, strict=True)
        ]
        return [
            reward(by_prompt.get(p) or Problem(tuple(map(int, p[:-1].split("+")))), c)
            for p, c in zip(prompts, texts, strict=True)
        ]

    return arith_reward


def grpo_trainer_anchor(
    policy,
    problems,
    held_out,
    steps: int,
    group_size: int = 8,
    prompts_per_step: int = 8,
    num_iterations: int = 2,
    lr: float = 1e-4,
    loss_type: str = "dapo",
    advantage: str | None = None,
    max_new: int = 24,
    seed: int = 0,
    output_dir: str | None = None,
) -> dict:
    """Train ``policy`` (a ``CausalLMPolicy``, in place) with TRL's ``GRPOTrainer`` on ArithChain.

    The same rollout batch as ``PolicyRLModule`` (``prompts_per_step`` prompts x
    ``group_size`` completions, ``num_iterations`` optimiser steps per batch, Adam-type
    optimiser at ``lr``, gradient-norm clip 1.0, ``beta = 0``, clip 0.2 / 0.28); ``advantage=None`` keeps TRL's own
    sequence-level ``(R - mean) / std``, otherwise our provider's token-level advantages go in
    through ``token_advantage_trainer``. Returns held-out accuracy, the mean training reward
    over the steps and process CPU seconds per rollout step.
    """
    import tempfile
    import time

    import numpy as np
    from datasets import Dataset
    from trl import GRPOConfig

    from .rl_training import held_out_accuracy

    grpo_trainer = _require_trl() if advantage is None else token_advantage_trainer(advantage)
    tok = policy.tokenizer
    tok.padding_side = "left"
    arith_reward = arith_trl_reward(problems, policy.eos_id)

    n_rows = steps * prompts_per_step
    rows = [problems[i % len(problems)] for i in range(n_rows)]
    data = Dataset.from_dict(
        {"prompt": [p.prompt for p in rows], "problem_id": [p.prompt for p in rows]}
    )
    out = output_dir or tempfile.mkdtemp(prefix="hista-trl-")
    args = GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=prompts_per_step * group_size,
        gradient_accumulation_steps=1,
        num_generations=group_size,
        num_iterations=num_iterations,
        max_completion_length=max_new,
        max_steps=steps * num_iterations,
        learning_rate=lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        beta=0.0,
        epsilon=0.2,
        epsilon_high=0.28,
        loss_type=loss_type,
        temperature=1.0,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        seed=seed,
        shuffle_dataset=True,
        bf16=False,
    )
    trainer = grpo_trainer(
        model=policy.model,
        reward_funcs=[arith_reward],
        args=args,
        train_dataset=data,
        processing_class=tok,
    )
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    t0 = time.process_time()
    trainer.train()
    secs = (time.process_time() - t0) / steps
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    policy.model.eval()
    return {
        "held-out acc": held_out_accuracy(policy, held_out, seed=seed),
        "reward AUC": float(np.mean(rewards)) if rewards else float("nan"),
        "s / step": secs,
    }
