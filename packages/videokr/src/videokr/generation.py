"""Skill-oriented example generation behind one protocol (paper Sec. 3.2).

The paper prompts an LLM with a video's caption/transcript and retrieved knowledge points to
write a question, options, answer and chain-of-thought per skill. Here:

* :class:`ExampleGenerator` -- the protocol: ``generate(video, skill, rng) -> record | None``.
* :class:`TemplateGenerator` -- offline backend: templated QA and rationales per skill from the
  video's caption and the :class:`~videokr.knowledge.KnowledgeBank` (used by the micro-world).
* :class:`TransformersGenerator` -- a local ``transformers`` causal LM writes the record as JSON.
* :class:`OpenAIGenerator` -- an OpenAI-compatible ``/v1/chat/completions`` endpoint (optional;
  plain ``urllib``, no SDK, through :func:`chat_completion`).

The two LLM backends share :func:`build_prompt` and :func:`parse_generation`; a reply that is
not a valid record is dropped (``None``) and counted by the caller, never patched.

>>> import numpy as np
>>> from videokr.manifest import VideoRecord
>>> v = VideoRecord("v0", "videos/v0.npy", "CC-BY", caption="the object moves left ; it is made of cork")
>>> rec = TemplateGenerator().generate(v, "KnowVidR", np.random.default_rng(0))
>>> rec["think"].split(" . ")[-1], rec["solution"]
('cork keeps its direction , so it goes left .', '<answer>A</answer>')
"""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .knowledge import (
    AFTER_CLIP,
    DIRECTIONS,
    MATERIALS,
    KnowledgeBank,
    after_clip,
    microworld_bank,
    motion_text,
)
from .manifest import VideoRecord
from .schema import SchemaError, normalise_example

QUESTIONS = {
    "VidR": (
        "which way does the object move ?",
        "in which direction does the object move ?",
        "what direction is the object moving in ?",
    ),
    "KnowVid": (
        "what is the object made of ?",
        "which material is the object ?",
        "what material does the object consist of ?",
    ),
    "KnowVidR": (
        "where does the object go after the clip ends ?",
        "which way will the object head once the clip is over ?",
        "after the clip , in which direction does the object go ?",
    ),
}
OPTIONS = {"VidR": DIRECTIONS, "KnowVid": tuple(MATERIALS), "KnowVidR": DIRECTIONS}
SUBJECTS = {"VidR": "Kinematics", "KnowVid": "Materials", "KnowVidR": "Materials"}
_CAPTION = re.compile(r"moves (\w+) ; it is made of (\w+)")


def parse_caption(caption: str) -> tuple[str, str]:
    """``(direction, material)`` from a micro-world caption."""
    m = _CAPTION.search(caption)
    if not m or m.group(1) not in DIRECTIONS or m.group(2) not in MATERIALS:
        raise ValueError(f"caption {caption!r} is not a micro-world caption")
    return m.group(1), m.group(2)


def rationale(skill: str, direction: str, material: str) -> tuple[str, str]:
    """Templated chain of thought and the answer text for one skill."""
    motion = motion_text(material)
    if skill == "VidR":
        return f"the object moves {direction} .", direction
    if skill == "KnowVid":
        bank = f"{material} objects move {motion.replace('flickers', 'flicker').replace('glows', 'glow')}"
        return f"the object moves {motion} . {bank} , so it is {material} .", material
    goes = after_clip(direction, material)
    return (
        f"the object moves {direction} , {motion} , so it is {material} . "
        f"{material} {AFTER_CLIP[material]} , so it goes {goes} .",
        goes,
    )


@runtime_checkable
class ExampleGenerator(Protocol):
    """Writes one example for a video and a skill (``None`` when it cannot)."""

    def generate(
        self, video: VideoRecord, skill: str, rng: np.random.Generator
    ) -> dict[str, Any] | None: ...


class TemplateGenerator:
    """Offline templated generator for the micro-world (question paraphrase drawn from ``rng``).

    >>> from videokr.manifest import VideoRecord
    >>> v = VideoRecord("v1", "v1.npy", "CC-BY", caption="the object moves up ; it is made of steel")
    >>> TemplateGenerator().generate(v, "VidR", np.random.default_rng(0))["think"]
    'the object moves up .'
    """

    def __init__(self, bank: KnowledgeBank | None = None) -> None:
        self.bank = bank or microworld_bank()

    def generate(
        self, video: VideoRecord, skill: str, rng: np.random.Generator
    ) -> dict[str, Any] | None:
        direction, material = parse_caption(video.caption)
        think, answer = rationale(skill, direction, material)
        opts = OPTIONS[skill]
        q = QUESTIONS[skill][int(rng.integers(len(QUESTIONS[skill])))]
        return normalise_example(
            {
                "id": f"{video.video_id}-{skill}",
                "video_path": video.path,
                "question": q,
                "options": list(opts),
                "problem_type": "multiple choice",
                "solution": f"<answer>{'ABCDEFGHIJ'[opts.index(answer)]}</answer>",
                "think": think,
                "skill": skill,
                "subject": SUBJECTS[skill],
                "dataset": "SynthKR",
            }
        )


# ------------------------------------------------------------------ LLM backends


def build_prompt(video: VideoRecord, skill: str, bank: KnowledgeBank) -> str:
    """Instruction for an LLM backend: caption, knowledge points, skill, JSON reply format."""
    from .knowledge import Skill

    knowledge = "\n".join(f"- {t}" for t in sorted(bank.texts()))
    return (
        "Write one multiple-choice question about the video below that needs the skill "
        f"{skill} ({Skill(skill).description}).\n"
        f"Video description: {video.caption}\nKnowledge points:\n{knowledge}\n"
        'Reply with JSON only: {"question": ..., "options": [...], "answer": "<letter>", '
        '"think": "<step-by-step rationale>"}'
    )


def parse_generation(text: str, video: VideoRecord, skill: str) -> dict[str, Any] | None:
    """The first JSON object in an LLM reply as a validated record, or ``None``."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(text[start : end + 1])
        rec = {
            "id": f"{video.video_id}-{skill}",
            "video_path": video.path,
            "question": obj["question"],
            "options": obj["options"],
            "problem_type": "multiple choice",
            "solution": f"<answer>{obj['answer']}</answer>",
            "think": obj.get("think", ""),
            "skill": skill,
            "subject": video.subject,
            "dataset": "generated",
        }
        return normalise_example(rec)
    except (json.JSONDecodeError, KeyError, TypeError, SchemaError):
        return None


class TransformersGenerator:
    """A local ``transformers`` causal LM (an instance, or a model id loaded offline-aware)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        bank: KnowledgeBank | None = None,
        max_new_tokens: int = 256,
    ) -> None:
        if isinstance(model, str):
            from icml26_shared.hub import from_pretrained
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = from_pretrained(AutoTokenizer, model, offline_hint="--backend template")
            model = from_pretrained(AutoModelForCausalLM, model, offline_hint="--backend template")
        if tokenizer is None:
            raise ValueError("TransformersGenerator needs a tokenizer with a model instance")
        self.model, self.tokenizer = model, tokenizer
        self.bank = bank or microworld_bank()
        self.max_new_tokens = max_new_tokens

    def generate(
        self, video: VideoRecord, skill: str, rng: np.random.Generator
    ) -> dict[str, Any] | None:
        import torch

        prompt = build_prompt(video, skill, self.bank)
        enc = self.tokenizer(prompt, return_tensors="pt")
        torch.manual_seed(int(rng.integers(2**31)))
        with torch.no_grad():
            out = self.model.generate(
                **enc, max_new_tokens=self.max_new_tokens, do_sample=True, temperature=0.7
            )
        text = self.tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        return parse_generation(text, video, skill)


def chat_completion(
    base_url: str,
    model: str,
    messages: list[dict[str, str]],
    api_key: str = "",
    timeout: float = 60.0,
    **params: Any,
) -> str:
    """One reply from an OpenAI-compatible ``POST {base_url}/chat/completions`` (plain ``urllib``).

    Network failures raise ``OSError`` (``urllib.error.URLError``); a reply without
    ``choices[0].message.content`` raises ``ValueError`` naming the endpoint.
    """
    body = {"model": model, "messages": messages, **params}
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    url = f"{base_url.rstrip('/')}/chat/completions"
    req = urllib.request.Request(url, json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - user URL
        reply = json.loads(resp.read())
    try:
        return str(reply["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"{url}: the reply has no choices[0].message.content") from None


class OpenAIGenerator:
    """An OpenAI-compatible chat-completions endpoint (``base_url`` ends before ``/chat``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        bank: KnowledgeBank | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.base_url, self.model, self.api_key = base_url.rstrip("/"), model, api_key
        self.bank = bank or microworld_bank()
        self.timeout = timeout

    def generate(
        self, video: VideoRecord, skill: str, rng: np.random.Generator
    ) -> dict[str, Any] | None:
        text = chat_completion(
            self.base_url,
            self.model,
            [{"role": "user", "content": build_prompt(video, skill, self.bank)}],
            self.api_key,
            self.timeout,
            temperature=0.7,
            seed=int(rng.integers(2**31)),
        )
        return parse_generation(text, video, skill)
