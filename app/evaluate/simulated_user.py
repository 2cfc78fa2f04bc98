"""promptfoo's `promptfoo:simulated-user` provider, named as a test's (or defaultTest's) `provider`: the cell's
provider talks with a simulated user, and the cell's output is the conversation.

As promptfoo 0.123.1 runs it (src/providers/simulatedUser.ts): the user's instructions are `config.instructions`
(default `{{instructions}}`) rendered with the test's vars. For each of up to `config.maxTurns` turns (default 10) the
simulated user is shown the conversation so far with the roles flipped (its own messages as `assistant`) and says
its next message; a message that holds `###STOP###` ends the conversation (it is not kept); else it is kept as a
`user` message and the provider under test answers the whole conversation after a system message, the cell's
rendered prompt. Its answer (a tool callback's output when it has one: tool_callbacks.py) is kept as an
`assistant` message. The output is every message as `User: …` / `Assistant: …`, joined by `\\n---\\n`.

promptfoo asks its own service for the simulated user's messages (the task `tau`, whose prompt it does not
publish); Chorus asks the evaluation's judge (the local model), with the rules of tau-bench's simulated user (the
benchmark that task is named after and whose `###STOP###` convention it keeps), written below. The provider's turns
are the cell's own requests, batched with every other cell by the EvaluationRunner (user_turns.py drives them).
`initialMessages` and `stateful` are refused by name.
"""

from __future__ import annotations

import dataclasses
import json

from app.engine import GenerationRequest, SamplingParams
from app.evaluate.errors import Problems
from app.evaluate.templates import render

ID = "promptfoo:simulated-user"
STOP = "###STOP###"
DEFAULT_MAX_TURNS = 10
USER_MAX_TOKENS = 128  # a message to an agent: a sentence or two
USER_SAMPLING = SamplingParams(temperature=0.0, seed=1)
_KEYS = {"maxTurns", "instructions"}

USER_PROMPT = """You are a user talking with a customer service agent.

Instruction: {instructions}

Rules:
- Write only your next message to the agent, one or two sentences at a time.
- Do not give away everything in the instruction at once: tell the agent only what the current step needs.
- Do not make up information the instruction does not give you. If the agent asks for something you were not told,
  say that you do not know or do not have it.
- When the goal of the instruction is met, or cannot be met, write '###STOP###' alone, as your whole message, to
  end the conversation.
- Do not repeat the instruction word for word: say it in your own words.
- Keep to the personality the instruction describes."""


def check(value, where: str, problems: Problems) -> dict | None:
    """A test's `provider` as Chorus keeps it ({"id", "config": {maxTurns?, instructions?}}), or None after a
    problem: anything but the simulated user is refused by name."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"id": value}
    if not isinstance(value, dict) or not isinstance(value.get("id"), str):
        problems.add(where, "a test's provider is a provider id or {id, config}")
        return None
    if value["id"] != ID:
        problems.unsupported(where, f"a test's own provider ({value['id']!r})", f"Chorus runs {ID} there")
        return None
    for key in set(value) - {"id", "config", "label"}:
        problems.add(where, f"unknown key {key!r} in the {ID} provider")
    config = value.get("config") or {}
    if not isinstance(config, dict):
        problems.add(f"{where}.config", "must be a mapping")
        return None
    for key in sorted(set(config) - _KEYS):
        problems.unsupported(f"{where}.config", f"the {ID} setting {key!r}", f"Chorus reads {', '.join(sorted(_KEYS))}")
    turns = config.get("maxTurns", DEFAULT_MAX_TURNS)
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 0:
        problems.add(f"{where}.config.maxTurns", f"a whole number of turns, got {turns!r}")
    if not isinstance(config.get("instructions", ""), str):
        problems.add(f"{where}.config.instructions", "must be text")
    return {"id": ID, "config": {k: v for k, v in config.items() if k in _KEYS}}


def check_talkers(cases, variants, problems: Problems) -> None:
    """The simulated user talks with a model: a test that names it beside an echo or custom provider, or with a
    providerOutput, is refused (Chorus would not hold that conversation)."""
    if not any(case.provider for case in cases):
        return
    for variant in variants:
        if not variant.target.needs_backend:
            problems.unsupported(f"provider {variant.label}", f"{ID} with an echo or custom provider",
                                 "it talks with a model")
    if any(case.provider and case.provider_output is not None for case in cases):
        problems.unsupported("tests", f"{ID} with providerOutput")


def _content(message: dict) -> str:
    return message["content"]


@dataclasses.dataclass
class Conversation:
    """One cell's conversation: what to ask next, and the transcript so far."""

    instructions: str
    system: str  # the cell's rendered prompt (the provider's system message)
    max_turns: int
    messages: list[dict] = dataclasses.field(default_factory=list)
    turn: int = 0

    @classmethod
    def of(cls, provider: dict, variables: dict, rendered_prompt: str) -> Conversation:
        config = provider.get("config") or {}
        instructions = render(config.get("instructions") or "{{instructions}}", variables)
        return cls(instructions, rendered_prompt, config.get("maxTurns", DEFAULT_MAX_TURNS))

    @property
    def over(self) -> bool:
        return self.turn >= self.max_turns

    def user_request(self) -> GenerationRequest:
        """The simulated user's next message, asked of the judge: the conversation with the roles flipped."""
        flipped = [{"role": "assistant" if m["role"] == "user" else "user", "content": _content(m)}
                   for m in self.messages]
        system = USER_PROMPT.replace("{instructions}", self.instructions)
        if not flipped:
            flipped = [{"role": "user", "content": "(The agent is waiting for your first message.)"}]
        return GenerationRequest(messages=[{"role": "system", "content": system}, *flipped], sampling=USER_SAMPLING,
                                 max_tokens=USER_MAX_TOKENS)

    def user_said(self, text: str) -> bool:
        """Keep the user's message; False when it ends the conversation (`###STOP###`)."""
        self.turn += 1
        if STOP in text:
            self.turn = self.max_turns
            return False
        self.messages.append({"role": "user", "content": text})
        return True

    def agent_messages(self) -> list[dict]:
        """What the provider under test answers: its prompt as the system message, then the conversation."""
        return [{"role": "system", "content": self.system}, *self.messages]

    def agent_said(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": text})

    def transcript(self) -> str:
        return "\n---\n".join(f"{'Assistant' if m['role'] == 'assistant' else 'User'}: {m['content']}"
                              for m in self.messages)


def agent_text(text: str, tool_calls) -> str:
    """A provider's answer as promptfoo keeps it in the conversation: its text, or the tool calls it made (as
    JSON) when it wrote no text."""
    if text or not tool_calls:
        return text
    return json.dumps([{"id": c.get("id", ""), "type": "function", "function": {
        "name": c.get("name", ""), "arguments": c.get("arguments", "")}} for c in tool_calls], ensure_ascii=False)
