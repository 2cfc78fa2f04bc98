"""An LLM judge's pairwise vote: the request to send (pure) and its reply read back as a Vote (pure).

The prompt follows promptfoo's `select-best` grader (SELECT_BEST_PROMPT: criteria, then the texts as
`<Text index="i">`, "output the index of the text that best fits the criteria"), for two texts, plus the two
answers an arena allows besides an index: "tie" and "both_bad". The reply is constrained by VERDICT_SCHEMA
(GenerationRequest(json_schema=...)) to {"reason": ..., "best": 0 | 1 | "tie" | "both_bad"}, because small
local judges rarely write valid JSON unaided. A server that ignores the schema may still answer in prose: the
parser then takes the first JSON object in the reply, else (as promptfoo does) the first integer, 0 or 1.

Blindness: the request carries the case and the two outputs only, never a variant's key, label or settings.
Text 0 is side `a` and text 1 side `b` as given; judges favour a position, so a runner should ask for both
orders (`swapped`) and cast both votes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from app.engine import GenerationRequest, SamplingParams
from app.session.votes import Vote, VoteError

DEFAULT_CRITERIA = "the better answer to the prompt: correct, helpful, clear and to the point"
REASON_MAX_CHARS = 400
MAX_TOKENS = 256
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
        "best": {"enum": [0, 1, "tie", "both_bad"]},
    },
    "required": ["reason", "best"],
    "additionalProperties": False,
}
SYSTEM = """You are comparing two pieces of text to see which best fits the following criteria: {criteria}

Both answer the same prompt. Judge only the texts; their order means nothing.

Output a JSON object {{"reason": "<one or two sentences>", "best": <choice>}} where <choice> is the index of \
the text that best fits the criteria (0 or 1), "tie" if neither is better, or "both_bad" if neither is \
acceptable."""
USER = """<Prompt>
{case}
</Prompt>

Here are the pieces of text:

<Text index="0">
{text_0}
</Text>

<Text index="1">
{text_1}
</Text>"""
_CHOICES = {0: "a", 1: "b", "0": "a", "1": "b", "a": "a", "b": "b", "tie": "tie", "both_bad": "both_bad",
            "both bad": "both_bad"}


class JudgeReplyError(VoteError):
    """A judge's reply that names no verdict; the message quotes its beginning."""


@dataclass(frozen=True)
class JudgeTask:
    """Two outputs for one case, `a` shown as text 0 and `b` as text 1 (keys and labels stay out of the
    prompt; they only go into the Vote)."""

    a: str
    b: str
    output_a: str
    output_b: str
    case_id: str = ""
    case_text: str = ""
    a_label: str = ""
    b_label: str = ""

    def swapped(self) -> JudgeTask:
        return replace(self, a=self.b, b=self.a, output_a=self.output_b, output_b=self.output_a,
                       a_label=self.b_label, b_label=self.a_label)


def judge_request(task: JudgeTask, *, criteria: str = DEFAULT_CRITERIA, sampling: SamplingParams | None = None,
                  max_tokens: int = MAX_TOKENS) -> GenerationRequest:
    """The judge's request: greedy by default, its reply constrained to VERDICT_SCHEMA."""
    messages = [{"role": "system", "content": SYSTEM.format(criteria=criteria)},
                {"role": "user", "content": USER.format(case=task.case_text, text_0=task.output_a,
                                                        text_1=task.output_b)}]
    return GenerationRequest(messages=messages, sampling=sampling or SamplingParams(temperature=0.0),
                             max_tokens=max_tokens, json_schema=VERDICT_SCHEMA)


def parse_verdict(reply: str) -> tuple[str, str]:
    """(winner, reason) from a reply: winner is "a", "b", "tie" or "both_bad"."""
    for obj in _json_objects(reply):
        choice = obj.get("best", obj.get("verdict", obj.get("winner")))
        key = choice.strip().lower() if isinstance(choice, str) else choice
        if not isinstance(key, bool) and key in _CHOICES:
            reason = obj.get("reason", "")
            return _CHOICES[key], reason if isinstance(reason, str) else json.dumps(reason)
    number = re.search(r"-?\d+", reply)
    if number and number.group() in ("0", "1"):
        return _CHOICES[number.group()], ""
    start = reply.strip()[:120]
    raise JudgeReplyError(f"the judge's reply names no verdict (0, 1, tie or both_bad): {start!r}"
                          if start else "the judge's reply is empty")


def _json_objects(text: str):
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def parse_judge_reply(task: JudgeTask, reply: str, *, judge: str, **vote_fields) -> Vote:
    """The judge's Vote on `task` (source "judge", its reason as the note). `vote_fields` may set id/time."""
    winner, reason = parse_verdict(reply)
    return Vote(task.a, task.b, winner, source="judge", judge=judge, a_label=task.a_label, b_label=task.b_label,
                case_id=task.case_id, case_text=task.case_text, note=reason.strip(), **vote_fields)
