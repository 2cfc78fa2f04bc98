"""`conversation-relevance` as a judge conversation, with promptfoo's rules and prompts (src/external/assertions/
deepeval.ts, matchers/deepeval.ts and matchers/conversationRelevancyTemplate.ts, ported there from DeepEval).

- The turns are the test's `_conversation` var (a list of {input, output}) when it has any, else one turn: the
  rendered prompt and the cell's output. (With `_conversation`, promptfoo judges those turns, not the output.)
- For every turn i, the window of the last `config.windowSize` turns (default 5) ending at i is rendered with the
  test vars, written as user/assistant messages, and the judge says whether the LAST assistant message is relevant
  (`{"verdict": "yes" | "no", "reason"}`), or a test's `options.rubricPrompt` asks it, rendered with `messages`.
- score = relevant windows / windows; pass at score ≥ `threshold` (default 0). `not-` is ignored, as promptfoo's
  handler ignores it. When some window was judged irrelevant with a reason, the judge is asked once more to sum the
  reasons up (promptfoo's generateReason); else the reason is "N out of M conversation windows were relevant".
- A reply with no JSON object fails its window ("Error parsing output: No JSON object found in response"); a judge
  that fails to answer makes the cell an ERROR, as for the RAG assertions.
"""

from __future__ import annotations

import json

from app.evaluate.check_types import CheckError
from app.evaluate.checks import json_objects
from app.evaluate.graders import REASON, JudgeReply, judge_request, render_chat
from app.evaluate.templates import js_string, render
from app.session.evaluation import Assertion, GradingResult

TYPE = "conversation-relevance"
DEFAULT_WINDOW_SIZE = 5
EPSILON = 2.0 ** -52  # JavaScript's Number.EPSILON
VERDICT_SCHEMA = {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}, "reason": REASON},
                  "required": ["verdict"]}
REASON_SCHEMA = {"type": "object", "properties": {"reason": REASON}, "required": ["reason"]}
_NOT_RELEVANT = "Response is not relevant to the conversation context"

VERDICTS_PROMPT = """Based on the given list of message exchanges between a user and an LLM, generate a JSON object \
to indicate whether the LAST `assistant` message is relevant to context in messages. The JSON will have 2 fields: \
'verdict' and 'reason'.
The 'verdict' key should STRICTLY be either 'yes' or 'no', which states whether the last `assistant` message is \
relevant according to the context in messages\x20
Provide a 'reason' ONLY if the answer is 'no'.\x20
You MUST USE the previous messages (if any) provided in the list of messages to make an informed judgement on \
relevancy.

**
IMPORTANT: Please make sure to only return in JSON format.
Example Messages:
[
    {
        "role": "user",
        "content": "Hi! I have something I want to tell you"
    },
    {
        "role": "assistant",
        "content": "Sure, what is it?"
    },
    {
        "role": "user",
        "content": "I've a sore throat, what meds should I take?"
    },
    {
        "role": "assistant",
        "content": "Not sure, but isn't it a nice day today?"
    }
]

Example JSON:
{
    "verdict": "no",
    "reason": "The LLM responded 'isn't it a nice day today' to a message that asked about how to treat a sore \
throat, which is completely irrelevant."
}
===== END OF EXAMPLE ======
You MUST ONLY provide a verdict for the LAST message on the list but MUST USE context from the previous messages.
You DON'T have to provide a reason if the answer is 'yes'.
ONLY provide a 'no' answer if the LLM response is COMPLETELY irrelevant to the message input.
Vague LLM responses to vague inputs, such as greetings DOES NOT count as irrelevancies!
**

Messages:
{messages}

JSON:"""

REASON_PROMPT = """Below is a list of irrelevancies drawn from some messages in a conversation, which you have \
minimal knowledge of. It is a list of strings explaining why the 'assistant' messages are irrelevant to the 'user' \
messages.
Given the relevancy score, which is a 0-1 score indicating how irrelevant the OVERALL AI messages are in a \
conversation (higher the better), CONCISELY summarize the irrelevancies to justify the score.\x20

**\x20
IMPORTANT: Please make sure to only return in JSON format, with the 'reason' key providing the reason.
Example JSON:
{
    "reason": "The score is <relevancy_score> because <your_reason>."
}

Always quote WHICH MESSAGE and the INFORMATION in the reason in your final reason.
Be sure in your reason, as if you know what the `assistant` messages from messages in a conversation is from the \
irrelevancies.
**

Relevancy Score:
{score}

Irrelevancies:
{irrelevancies}

JSON:"""


def _json(value) -> str:
    """JSON.stringify(value, null, 2)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def turns(variables: dict, prompt: str, output: str) -> list[dict]:
    conversation = variables.get("_conversation")
    if isinstance(conversation, list) and conversation:
        if not all(isinstance(turn, dict) for turn in conversation):
            raise CheckError("conversation-relevance: _conversation is a list of {input, output} turns")
        return conversation
    if not prompt:
        raise CheckError("Invariant failed: conversational-relevance assertion type must have a prompt")
    return [{"input": prompt, "output": output}]


def _window_request(window: list[dict], variables: dict, rubric_prompt: str | None):
    rendered = [{key: render(turn.get(key), variables) if isinstance(turn.get(key), str) else turn.get(key)
                 for key in ("input", "output")} for turn in window]
    if rubric_prompt:
        return judge_request(render_chat(rubric_prompt, {"messages": rendered, **variables}), VERDICT_SCHEMA)
    roles = []
    for turn in rendered:
        for role, key in (("user", "input"), ("assistant", "output")):
            value = turn[key]
            roles.append({"role": role, "content": value if isinstance(value, str) else js_string(value)})
    prompt = VERDICTS_PROMPT.replace("{messages}", _json(roles))
    return judge_request([{"role": "user", "content": prompt}], VERDICT_SCHEMA)


def _text(reply: JudgeReply) -> str:
    if reply.error or not reply.text:
        raise CheckError(f"conversation-relevance judge failed: {reply.error or 'No output'}")
    return reply.text


def relevance(assertion: Assertion, output: str, prompt: str, variables: dict, rubric_prompt: str | None):
    """The flow: yields judge requests, receives JudgeReply, returns the GradingResult."""
    conversation = turns(variables, prompt, output)
    size = (assertion.config or {}).get("windowSize") or DEFAULT_WINDOW_SIZE
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise CheckError(f"conversation-relevance: config.windowSize is a whole number of turns, not {size!r}")
    threshold = assertion.threshold or 0
    relevant, irrelevancies = 0, []
    for i in range(len(conversation)):
        reply = yield _window_request(conversation[max(0, i - size + 1):i + 1], variables, rubric_prompt)
        objects = json_objects(_text(reply))
        if not objects:
            irrelevancies.append("Error parsing output: No JSON object found in response")
            continue
        passed = objects[0].get("verdict") == "yes"
        if passed:
            relevant += 1
        else:
            reason = objects[0].get("reason") or _NOT_RELEVANT
            if reason != _NOT_RELEVANT:
                irrelevancies.append(js_string(reason))
    score = relevant / len(conversation)
    reason = f"{relevant} out of {len(conversation)} conversation windows were relevant"
    if irrelevancies and score < 1:
        ask = REASON_PROMPT.replace("{score}", js_string(score)).replace("{irrelevancies}", _json(irrelevancies))
        reply = yield judge_request([{"role": "user", "content": ask}], REASON_SCHEMA)
        objects = json_objects(reply.text) if not reply.error and reply.text else []
        if objects and objects[0].get("reason"):
            reason = js_string(objects[0]["reason"])
    return GradingResult(passed=score >= threshold - EPSILON, score=score, reason=reason, assertion=assertion)
