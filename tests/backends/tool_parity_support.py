"""One template's replies from llama-server (`--jinja`) and from Chorus's engine, for the tool-call parity test
(tests/backends/test_tool_call_parity.py): the same model file (SmolLM2 135M carrying the template), the same
request, greedy.

llama-server's generated tokens are read from its debug log (`-lv 10`: one `next token:` line per sampled token,
its prompt tokens are not logged: that code is commented out in server-context.cpp; `task.n_tokens` gives their
count), so they are known even when it refuses the reply with HTTP 500 (a
call cut by max_tokens, or text after the calls: its parser takes neither). Its calls are its streamed
`tool_calls` deltas put together: the final parse when it accepted the reply, its last partial parse when it
refused it. Chorus's are `Completion.tool_calls` and its last streamed `StepEvent.tool_calls`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import httpx

from app.engine import GenerationRequest, SamplingParams
from app.engine.chat.parse.detect import template_stops
from app.engine.chat.parse.stream import call_stops, for_request
from app.engine.chat.template.reasoning import ReasoningSplit, opens_thinking, split_prefix
from app.engine.text import TextStream

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]
# The engine's batch layout as llama-server's (-np 1, n_ubatch 512, every request's prompt prefilled cold: the
# server's requests carry cache_prompt false): the prompt in ubatches of 512 tokens, decode tokens alone. Chorus's
# reproducible mode prefills in pieces of < 64 tokens (another flash-attention kernel, docs/engine.md), which moves
# SmolLM2's logits by ~0.05 nats, enough to flip a greedy near-tie (Llama 3.1's second token: "} vs "}, 0.035 apart).
SERVER_LAYOUT = {"reproducible": False, "max_batch_tokens": 512, "prompt_cache": False}
# A call in the history, to find how the template writes one (a 9-character id: Mistral's refuse others).
CALL = {"id": "a1b2c3d4e", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


@dataclass
class Reply:
    """One side's answer: prompt and generated token ids (EOS excluded), whether the parser accepted the whole
    reply, the calls it parsed (name, arguments text), and the last streamed (partial) calls."""

    prompt: list[int]
    tokens: list[int]
    accepted: bool
    calls: list[tuple[str, str]]
    streamed: list[tuple[str, str]]
    finish: str
    notes: dict = field(default_factory=dict)


def _assemble(chunks: list[dict]) -> list[tuple[str, str]]:
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices", []):
            for delta in choice.get("delta", {}).get("tool_calls") or []:
                call = calls.setdefault(delta["index"], ["", ""])
                call[0] += delta.get("function", {}).get("name") or ""
                call[1] += delta.get("function", {}).get("arguments") or ""
    return [tuple(calls[i]) for i in sorted(calls)]


def server_reply(server, messages: list[dict], tool_choice: str, max_tokens: int, eog: set[int]) -> Reply:
    """llama-server's reply to one streamed chat request (its log says which tokens it sampled)."""
    prompt_text = apply_template(server, messages)
    prompt = tokenize(server, prompt_text)
    start = server.log.stat().st_size
    body = {"messages": messages, "tools": [WEATHER], "tool_choice": tool_choice, "temperature": 0,
            "max_tokens": max_tokens, "stream": True, "cache_prompt": False}
    chunks, error, finish = [], None, ""
    with httpx.stream("POST", f"{server.url}/chat/completions", json=body, timeout=300) as response:
        assert response.status_code == 200, response.read()[:300]
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if "error" in chunk:
                error = chunk["error"]["message"]
                continue
            chunks.append(chunk)
            finish = next((c["finish_reason"] for c in chunk.get("choices", []) if c.get("finish_reason")), finish)
    log = _request_log(server, start)
    tokens = [int(t) for t in re.findall(r"next token: +(\d+) ", log)]
    while tokens and tokens[-1] in eog:
        tokens.pop()
    calls = _assemble(chunks)
    notes = {"error": error, "grammar_triggered": "Grammar triggered" in log, "prompt_text": prompt_text}
    return Reply(prompt, tokens, error is None, calls if error is None else [], calls, finish or "error", notes)


def _request_log(server, start: int, timeout: float = 60.0) -> str:
    """The server's log since `start` once it holds the request's end: llama-server writes its log from a worker
    thread, so the last `next token:` lines may land after the HTTP stream has ended. The slot's "stop
    processing" line comes after them."""
    deadline = time.monotonic() + timeout
    while True:
        log = server.log.read_bytes()[start:].decode("utf-8", "replace")  # `start` counts bytes
        if "stop processing" in log or time.monotonic() > deadline:
            return log
        time.sleep(0.05)  # polling the log file for that line (no notification exists for a file's growth)


def apply_template(server, messages: list[dict]) -> str:
    """The prompt llama-server builds for these messages (a final assistant message is continued)."""
    response = httpx.post(f"{server.url.removesuffix('/v1')}/apply-template",
                          json={"messages": messages, "tools": [WEATHER]}, timeout=60)
    response.raise_for_status()
    return response.json()["prompt"]


def tokenize(server, text: str) -> list[int]:
    """The tokens llama-server makes of a chat prompt (special tokens parsed, BOS added as the vocabulary says)."""
    response = httpx.post(f"{server.url.removesuffix('/v1')}/tokenize",
                          json={"content": text, "add_special": True, "parse_special": True}, timeout=60)
    response.raise_for_status()
    return response.json()["tokens"]


def chorus_prompt(engine, vocab, prefix: str) -> tuple[str, list[int]]:
    """Chorus's prompt text (before the prefix) and tokens, made by its engine's renderer (app/engine/prompt.py):
    the rendered messages and the reply prefix tokenized as one string."""
    request = GenerationRequest(messages=QUESTION, tools=(WEATHER,), reply_prefix=prefix)
    text = engine.render_prompt(GenerationRequest(messages=QUESTION, tools=(WEATHER,)))
    return text, engine._renderer.tokens(request, text)


def chorus_reply(engine, prompt: tuple[str, list[int]], tool_choice: str, max_tokens: int, prefix: str) -> Reply:
    """Chorus's reply to the same request (its prompt ids are the caller's tokenization of its prompt)."""
    streamed: list = []
    unsubscribe = engine.subscribe(lambda event: streamed.extend(event.tool_calls.values()))
    try:
        done = engine.submit(GenerationRequest(
            messages=QUESTION, sampling=SamplingParams(temperature=0.0), max_tokens=max_tokens, tools=(WEATHER,),
            tool_choice=tool_choice, reply_prefix=prefix)).result(timeout=300)
    finally:
        unsubscribe()
    assert done.error is None, done
    calls = [(c["name"], c["arguments"]) for c in done.tool_calls]
    last = [(c["name"], c["arguments"]) for c in streamed[-1]] if streamed else []
    return Reply(prompt[1], list(done.token_ids), bool(calls) or done.finish_reason == "stop", calls, last,
                 done.finish_reason, {"text": done.text, "prompt_text": prompt[0] + prefix,
                                      "partial": last_partial(engine, prompt[0], prefix, done.token_ids)})


def last_partial(engine, prompt_text: str, prefix: str, token_ids) -> list[tuple[str, str]]:
    """The calls of Chorus's last partial parse of its reply: what its engine streamed after the last token, before
    the final parse (which, for a reply llama-server refuses, has no calls), made as the engine makes it
    (lifecycle.py, step.py): token by token through the stop filter (with the template's stop strings), thinking
    split off, the answer through the request's ToolStream (whose calls stop changing where a parse breaks them, as
    llama-server's stream ends there)."""
    request = GenerationRequest(messages=QUESTION, tools=(WEATHER,), reply_prefix=prefix)
    stream = for_request(engine._renderer.template_source, request, split_prefix(prefix)[0])
    if stream is None:
        return []
    split = ReasoningSplit(enabled=True, opened=opens_thinking(prompt_text, prefix), stops=call_stops(stream))
    text = TextStream(template_stops(engine._renderer.template_source))  # the template's stops, as lifecycle.py
    for token in token_ids:
        stream.feed(split.feed(text.feed(engine._model.piece(token)), token=False)[0])
    return [(c.name, c.arguments) for c in stream.calls]


def as_json(calls: list[tuple[str, str]]) -> list[tuple[str, object]]:
    """Names and arguments, the arguments read as JSON (so that spacing does not count)."""
    return [(name, json.loads(arguments)) for name, arguments in calls]
