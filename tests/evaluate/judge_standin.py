"""A capable llm-rubric judge, as a real OpenAI-compatible HTTP server on 127.0.0.1 (stdlib http.server).

It stands in for a capable judge model, which cannot run on this CPU-only test machine: it reads promptfoo's
llm-rubric prompt (`<Output>…</Output> <Rubric>…</Rubric>`) and answers it with deterministic rules that hold
for the calibration set's rubrics and the tests' own: a greeting, French, a fruit, else every proper noun and
number the rubric names must be in the output. The client (OpenAIBackend) is the real one: nothing is mocked.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GREETINGS = ("hello", "hi ", "good morning", "lovely to see", "nice to meet")
FRENCH = ("bonjour", "merci", "tout le monde", "le ", "la ")
FRUITS = ("apple", "banana", "orange", "pear", "grape", "mango", "cherry")


def verdict(output: str, rubric: str) -> tuple[bool, str]:
    text, asked = output.lower(), rubric.lower()
    if "greeting" in asked:
        return any(g in text for g in GREETINGS), "greets" if any(g in text for g in GREETINGS) else "no greeting"
    if "french" in asked:
        found = any(w in text for w in FRENCH)
        return found, "French words" if found else "not French"
    if "fruit" in asked:
        found = any(f in text for f in FRUITS)
        return found, "names a fruit" if found else "no fruit named"
    words = re.findall(r"\b(?:[A-Z][a-z]+|\d+)\b", rubric.split(" ", 1)[-1])
    missing = [w for w in words if w.lower() not in text]
    return not missing, f"missing {', '.join(missing)}" if missing else f"names {', '.join(words)}"


def answer(messages: list[dict]) -> str:
    asked = messages[-1]["content"] if messages else ""
    found = re.search(r"<Output>\n?(.*?)\n?</Output>\s*<Rubric>\n?(.*?)\n?</Rubric>", asked, re.DOTALL)
    if not found:
        return "I only judge llm-rubric prompts."
    passed, reason = verdict(found.group(1), found.group(2))
    return json.dumps({"reason": reason, "pass": passed, "score": 1.0 if passed else 0.0})


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": "rule-judge", "object": "model",
                                                       "owned_by": "chorus-tests"}]}).encode()
        self.send_response(200 if self.path.endswith("/models") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.asked += 1
        text = answer(request.get("messages") or [])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for choice in ({"index": 0, "delta": {"content": text}, "finish_reason": None},
                       {"index": 0, "delta": {}, "finish_reason": "stop"}):
            payload = {"id": "j", "object": "chat.completion.chunk", "created": 0, "model": "rule-judge",
                       "choices": [choice]}
            self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


class RuleJudge(ThreadingHTTPServer):
    """The server, serving on a thread from construction; `asked` counts chat requests; `close()` stops it."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.asked = 0
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
