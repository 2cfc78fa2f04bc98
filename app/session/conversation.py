"""A pane's conversation: what Run sends, and the edits a user makes to it.

Run means "generate the assistant's reply to this conversation": a draft becomes the next user turn first; with
no draft, Run regenerates the last reply (so re-running a comparison after changing a setting just works).
Lists are replaced, never changed in place, so every edit reaches the model's events. Nothing here drops a turn
silently: a conversation too long for its slot ends "error" with the sizes, and
`drop_oldest_exchange` is the explicit way out.
"""

from __future__ import annotations

from app.engine import GenerationRequest, Speculation
from app.session import images, tools
from app.session.state import PaneResult, PaneSpec

ALTERNATIVES_SHOWN = 5  # alternatives a pane asks for, per token, when it shows token probabilities

class NothingToRun(ValueError):
    """The pane has no message to answer."""


def messages(pane: PaneSpec) -> list[dict]:
    """The system prompt (if any) and the turns, as chat messages."""
    system = [{"role": "system", "content": pane.system.strip()}] if pane.system.strip() else []
    return system + [chat_message(t) for t in pane.turns]


def _user_turn(text: str, refs: tuple) -> dict:
    return {"role": "user", "content": text, "images": tuple(refs)} if refs else {"role": "user", "content": text}


def chat_message(turn: dict) -> dict:
    """A turn as an OpenAI chat message: its images (if any) as OpenAI parts beside the text, an assistant's
    calls as `tool_calls` [{id, type, function}], a tool turn with the `tool_call_id` it answers (the template
    shows it in its own tool-response format). Raises ImageError naming an image whose bytes are missing."""
    message = {"role": turn["role"], "content": images.parts(turn["content"], turn.get("images", ()))}
    if turn.get("tool_calls"):
        message["tool_calls"] = [{"id": c.get("id", ""), "type": "function",
                                  "function": {"name": c["name"], "arguments": c.get("arguments", "")}}
                                 for c in turn["tool_calls"]]
    if turn["role"] == "tool":
        message["tool_call_id"] = turn.get("tool_call_id", "")
    return message


def can_run(pane: PaneSpec) -> bool:
    return bool(pane.draft.strip() or pane.draft_images) or any(t["role"] == "user" for t in pane.turns)


def plan_run(pane: PaneSpec, use_draft: bool = True, extra_tools: list[dict] | tuple = ()) \
        -> tuple[GenerationRequest, list[dict]]:
    """The request Run would submit and the conversation it implies; changes nothing. Without the draft
    (`use_draft=False`) it regenerates the last reply. `extra_tools`: definitions offered beside the pane's own
    (its MCP servers' tools).

    Raises NothingToRun, images.ImageError naming the pane and a missing image, or ValueError from the
    request's own checks (tools.ToolsError for bad tools)."""
    turns = list(pane.turns)
    if pane.editing is not None and use_draft:
        turns = turns[:pane.editing]
    if use_draft and (pane.draft.strip() or pane.draft_images):
        turns.append(_user_turn(pane.draft.strip(), pane.draft_images))
    elif turns and turns[-1]["role"] == "assistant":
        turns.pop()  # regenerate the last reply
    if not turns or turns[-1]["role"] not in ("user", "tool"):  # a tool turn: the model goes on after a result
        raise NothingToRun("Type a message first.")
    system = [{"role": "system", "content": pane.system.strip()}] if pane.system.strip() else []
    choice, call_first = tools.turn_choice(pane.tool_choice, pane.tool_call_first, turns)  # after results: auto
    prefix = pane.reply_prefix if turns == pane.turns else ""  # a branch continues its chosen start
    try:
        sent = [chat_message(t) for t in turns]
    except images.ImageError as exc:
        raise images.ImageError(f"{pane.label}: {exc}") from exc
    request = GenerationRequest(messages=system + sent, sampling=pane.sampling, max_tokens=pane.max_tokens,
                                stop=pane.stop, reply_prefix=prefix, thinking=pane.thinking,
                                thinking_budget=pane.thinking_budget,
                                speculative=speculation_of(pane),
                                logprobs=ALTERNATIVES_SHOWN if pane.show_probabilities else 0,
                                **pane.output_format.request_fields(),
                                **tools.request_fields(pane.tools, choice, pane.parallel_tool_calls, call_first,
                                                       extra_tools),
                                lora=pane.lora, video_fps=pane.video_fps, video_max_frames=pane.video_max_frames)
    return request, turns


def speculation_of(pane: PaneSpec) -> Speculation | None:
    """The pane's speculative decoding as the engine takes it (None: off); a draft model only for kind "draft"."""
    if pane.speculative == "off":
        return None
    draft = pane.draft_model.strip() if pane.speculative_kind == "draft" else ""
    return Speculation(pane.speculative, kind=pane.speculative_kind, draft_model=draft or None)


def commit_run(pane: PaneSpec, turns: list[dict], used_draft: bool = True) -> str:
    """The run was submitted: the draft (if used) is now part of the conversation, and a branch's reply prefix
    part of the reply. Returns that prefix (the reply's text starts with it)."""
    prefix = pane.reply_prefix if turns == pane.turns else ""
    pane.reply_prefix = ""
    pane.turns = turns
    if used_draft:
        pane.draft, pane.editing, pane.draft_images = "", None, ()
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
    """After a run ends: its text (also a partial, cancelled one) becomes the assistant's turn, with its tool
    calls if it made any (their text is the calls', not the reply's: a prefix that opened a call is left out)."""
    result = pane.result
    if not (result.text or result.tool_calls) or not pane.turns or pane.turns[-1]["role"] not in ("user", "tool"):
        return
    turn = {"role": "assistant", "content": result.text}
    if result.tool_calls:
        text = result.text
        if result.reply_prefix and text.startswith(result.reply_prefix):
            text = text[len(result.reply_prefix):]
        turn = {"role": "assistant", "content": text, "tool_calls": [dict(c) for c in result.tool_calls]}
    pane.turns = [*pane.turns, turn]


def start_edit(pane: PaneSpec, index: int) -> None:
    """Put user turn `index` back into the draft: the next Run replaces it and everything after it."""
    if not (0 <= index < len(pane.turns)) or pane.turns[index]["role"] != "user":
        raise ValueError(f"turn {index + 1} is not a user message")
    pane.editing, pane.draft = index, pane.turns[index]["content"]
    pane.draft_images = tuple(pane.turns[index].get("images", ()))


def cancel_edit(pane: PaneSpec) -> None:
    pane.editing, pane.draft, pane.draft_images = None, "", ()


def attach(pane: PaneSpec, *refs: images.ImageRef) -> None:
    """Add images to the draft (one already there is not added twice)."""
    pane.draft_images = tuple(dict.fromkeys((*pane.draft_images, *refs)))


def detach(pane: PaneSpec, ref: images.ImageRef) -> None:
    """Remove an image from the draft before Run."""
    pane.draft_images = tuple(r for r in pane.draft_images if r != ref)


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
