"""A pane's conversation: what Run sends, and the edits a user makes to it.

Run means "generate the assistant's reply to this conversation": a draft becomes the next user turn first; with
no draft, Run regenerates the last reply (so re-running a comparison after changing a setting just works).
Lists are replaced, never changed in place, so every edit reaches the model's events. Nothing here drops a turn
silently: a conversation too long for its slot ends "error" with the sizes, and
`drop_oldest_exchange` is the explicit way out.
"""

from __future__ import annotations

from app.engine import GenerationRequest, Speculation, limits
from app.session import tools
from app.session.state import PaneResult, PaneSpec


class NothingToRun(ValueError):
    """The pane has no message to answer."""


def messages(pane: PaneSpec) -> list[dict]:
    """The system prompt (if any) and the turns, as chat messages."""
    system = [{"role": "system", "content": pane.system.strip()}] if pane.system.strip() else []
    return system + [{"role": t["role"], "content": t["content"]} for t in pane.turns]


def can_run(pane: PaneSpec) -> bool:
    return bool(pane.draft.strip()) or any(t["role"] == "user" for t in pane.turns)


def plan_run(pane: PaneSpec, use_draft: bool = True) -> tuple[GenerationRequest, list[dict]]:
    """The request Run would submit and the conversation it implies; changes nothing. Without the draft
    (`use_draft=False`) it regenerates the last reply.

    Raises NothingToRun, or ValueError from the request's own checks (tools.ToolsError for bad tools)."""
    turns = list(pane.turns)
    if pane.editing is not None and use_draft:
        turns = turns[:pane.editing]
    if use_draft and pane.draft.strip():
        turns.append({"role": "user", "content": pane.draft.strip()})
    elif turns and turns[-1]["role"] == "assistant":
        turns.pop()  # regenerate the last reply
    if not turns or turns[-1]["role"] != "user":
        raise NothingToRun("Type a message first.")
    system = [{"role": "system", "content": pane.system.strip()}] if pane.system.strip() else []
    prefix = pane.reply_prefix if turns == pane.turns else ""  # a branch continues its chosen start
    request = GenerationRequest(messages=system + turns, sampling=pane.sampling, max_tokens=pane.max_tokens,
                                stop=pane.stop, reply_prefix=prefix, thinking=pane.thinking,
                                thinking_budget=pane.thinking_budget,
                                speculative=None if pane.speculative == "off" else Speculation(pane.speculative),
                                logprobs=limits.ALTERNATIVES_SHOWN if pane.show_probabilities else 0,
                                **pane.output_format.request_fields(),
                                **tools.request_fields(pane.tools, pane.tool_choice, pane.parallel_tool_calls),
                                lora=pane.lora)
    return request, turns


def commit_run(pane: PaneSpec, turns: list[dict], used_draft: bool = True) -> str:
    """The run was submitted: the draft (if used) is now part of the conversation, and a branch's reply prefix
    part of the reply. Returns that prefix (the reply's text starts with it)."""
    prefix = pane.reply_prefix if turns == pane.turns else ""
    pane.reply_prefix = ""
    pane.turns = turns
    if used_draft:
        pane.draft, pane.editing = "", None
    return prefix


def branch(pane: PaneSpec, token_index: int, token_text: str) -> PaneSpec:
    """A new pane that replays `pane`'s last reply up to token `token_index`, puts `token_text` there instead,
    and continues from it when run. Needs the reply's token log-probabilities."""
    result = pane.result
    entries = result.token_logprobs or []
    if not 0 <= token_index < len(entries):
        raise ValueError(f"token {token_index + 1} is not in this reply ({len(entries)} tokens with probabilities)")
    turns = [dict(t) for t in pane.turns]
    if turns and turns[-1]["role"] == "assistant" and turns[-1]["content"] == result.text:
        turns.pop()  # the reply being branched
    if not turns or turns[-1]["role"] != "user":
        raise ValueError("this reply no longer ends the pane's conversation")
    prefix = result.reply_prefix + "".join(e.text for e in entries[:token_index]) + token_text
    title = f"↳ {token_text.strip() or repr(token_text)}"
    return pane.copy(turns=turns, reply_prefix=prefix, draft="", editing=None, title=title)


def record_reply(pane: PaneSpec) -> None:
    """After a run ends: its text (also a partial, cancelled one) becomes the assistant's turn."""
    if pane.result.text and pane.turns and pane.turns[-1]["role"] == "user":
        pane.turns = [*pane.turns, {"role": "assistant", "content": pane.result.text}]


def start_edit(pane: PaneSpec, index: int) -> None:
    """Put user turn `index` back into the draft: the next Run replaces it and everything after it."""
    if not (0 <= index < len(pane.turns)) or pane.turns[index]["role"] != "user":
        raise ValueError(f"turn {index + 1} is not a user message")
    pane.editing, pane.draft = index, pane.turns[index]["content"]


def cancel_edit(pane: PaneSpec) -> None:
    pane.editing, pane.draft = None, ""


def drop_oldest_exchange(pane: PaneSpec) -> int:
    """Remove the oldest user message and the reply to it; returns how many turns went."""
    if not pane.turns:
        return 0
    n = 2 if len(pane.turns) > 1 and pane.turns[1]["role"] == "assistant" else 1
    pane.turns = pane.turns[n:]
    if pane.editing is not None:
        pane.editing = max(0, pane.editing - n)
    return n


def clear(pane: PaneSpec) -> None:
    pane.turns, pane.editing = [], None
    pane.result = PaneResult()
