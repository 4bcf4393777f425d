"""Generator backends (template, transformers, OpenAI-compatible HTTP) and the chat judge."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
import torch
from videokr.filters import CoTValidator
from videokr.generation import (
    ExampleGenerator,
    OpenAIGenerator,
    TemplateGenerator,
    TransformersGenerator,
    chat_completion,
    parse_generation,
)
from videokr.harness import ChatJudge, EvalHarness
from videokr.knowledge import DIRECTIONS, MATERIALS, after_clip, microworld_bank
from videokr.manifest import VideoRecord

REPLY = {"question": "Which way does it go ?", "options": ["left", "right", "up", "down"],
         "answer": "C", "think": "it moves up ."}  # fmt: skip
VIDEO = VideoRecord("v9", "videos/v9.npy", "CC-BY-4.0", subject="Physics",
                    caption="the object moves up ; it is made of cork")  # fmt: skip


@pytest.mark.parametrize("skill", ["VidR", "KnowVid", "KnowVidR"])
def test_template_items_are_right_and_pass_rationale_validation(skill):
    gen = TemplateGenerator()
    assert isinstance(gen, ExampleGenerator)
    for d in DIRECTIONS:
        for m in MATERIALS:
            v = VideoRecord(
                "v", "v.npy", "CC-BY", caption=f"the object moves {d} ; it is made of {m}"
            )
            rec = gen.generate(v, skill, np.random.default_rng(0))
            truth = {"VidR": d, "KnowVid": m, "KnowVidR": after_clip(d, m)}[skill]
            letter = rec["solution"][8]
            assert rec["options"]["ABCDEFGHIJ".index(letter)] == f"{letter}. {truth}"
            assert CoTValidator(microworld_bank()).check(rec) is None


def test_parse_generation_accepts_json_and_drops_bad_replies():
    rec = parse_generation(f"Sure! {json.dumps(REPLY)} Hope it helps.", VIDEO, "VidR")
    assert rec["solution"] == "<answer>C</answer>" and rec["options"][2] == "C. up"
    assert rec["subject"] == "Physics" and rec["skill"] == "VidR"
    assert parse_generation("no json here", VIDEO, "VidR") is None
    assert parse_generation(json.dumps({**REPLY, "answer": "Z"}), VIDEO, "VidR") is None
    assert parse_generation(json.dumps({**REPLY, "question": ""}), VIDEO, "VidR") is None


class _Tok:
    """Minimal tokenizer: the prompt becomes 3 ids; decoding returns the canned reply."""

    def __call__(self, text, return_tensors="pt"):
        self.prompt = text
        return {"input_ids": torch.zeros(1, 3, dtype=torch.long)}

    def decode(self, ids, skip_special_tokens=True):
        assert ids.shape == (2,)  # only the new tokens are decoded
        return json.dumps(REPLY)


class _LM:
    def generate(self, input_ids, max_new_tokens, do_sample, temperature):
        return torch.zeros(1, input_ids.shape[1] + 2, dtype=torch.long)


def test_transformers_backend_prompts_with_knowledge_and_parses():
    tok = _Tok()
    rec = TransformersGenerator(_LM(), tok).generate(VIDEO, "KnowVidR", np.random.default_rng(0))
    assert rec["id"] == "v9-KnowVidR" and rec["solution"] == "<answer>C</answer>"
    assert "cork keeps its direction" in tok.prompt and "KnowVidR" in tok.prompt
    with pytest.raises(ValueError, match="needs a tokenizer"):
        TransformersGenerator(_LM())


@pytest.fixture
def server():
    """A local OpenAI-compatible endpoint: generation replies and judge scores."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server API
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append((self.path, self.headers.get("Authorization"), body))
            prompt = body["messages"][0]["content"]
            if "grade answers" in prompt:
                same = "Model answer: the cat sat\n" in prompt
                content = (
                    "Score: 1"
                    if same
                    else ("0.5" if "Model answer: the cat" in prompt else "garbled")
                )
            else:
                content = json.dumps(REPLY)
            data = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    httpd.shutdown()


def test_openai_backend_posts_chat_completions(server):
    url, seen = server
    gen = OpenAIGenerator(url, "some-model", api_key="k")
    rec = gen.generate(VIDEO, "VidR", np.random.default_rng(0))
    assert rec["solution"] == "<answer>C</answer>"
    path, auth, body = seen[0]
    assert path == "/v1/chat/completions" and auth == "Bearer k" and body["model"] == "some-model"
    assert "the object moves up" in body["messages"][0]["content"]


def test_chat_judge_scores_open_ended_and_skips_unparsable(server):
    url, seen = server
    recs = [
        {"id": f"o{i}", "question": "what happens ?", "problem_type": "open-ended",
         "solution": "<answer>the cat sat</answer>", "options": []}
        for i in range(4)
    ] + [{"id": "m", "question": "q", "problem_type": "multiple choice",
          "solution": "<answer>B</answer>", "options": ["A. x", "B. y"]}]  # fmt: skip
    outs = {
        "o0": "<think>t</think><answer>the cat sat</answer>",
        "o1": "<think>t</think><answer>the cat ran</answer>",
        "o2": "<think>t</think><answer>a dog</answer>",
        "o3": "no answer block",
        "m": "<think>t</think><answer>B</answer>",
    }
    res = EvalHarness(recs, ChatJudge(url, "judge")).evaluate(outs)
    assert res.per_item == {"o0": 1.0, "o1": 0.5, "o3": 0.0, "m": 1.0}
    assert res.n_skipped == 1  # "garbled": no score in the reply
    assert len(seen) == 3  # o3 (no answer) and m (rule) never reach the judge


def test_chat_completion_unreachable_is_oserror():
    with pytest.raises(OSError):
        chat_completion("http://127.0.0.1:9/v1", "m", [{"role": "user", "content": "x"}], timeout=2)
