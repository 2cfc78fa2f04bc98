"""A reasoning model's thinking, split from its answer while it streams, as llama.cpp's `--reasoning-format
deepseek` splits it: the `<think>…</think>` family.

A reply thinks when its text starts (after whitespace) with `<think>`, or when the prompt already opened the
block: the chat template's generation prompt, or a `reply_prefix`, ends inside an unclosed `<think>`. Text is
released as soon as it is decided: only a tail that may still become `<think>` or `</think>` is held back. After
`</think>` the answer's leading whitespace is dropped. A block never closed (a length limit) is all thinking,
as llama.cpp reports it. `format="none"` leaves the reply whole (llama-server's `--reasoning-format none`).
With tools, a format whose calls may start inside the block (Qwen3.5, Kimi K2, Ling 3) also ends it at a call's
start, which begins the answer.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"
CLOSING_TEXT = "\n" + CLOSE + "\n\n"  # what a spent thinking budget forces, as llama.cpp's reasoning budget does

_UNDECIDED, _THINKING, _AFTER, _ANSWER = "undecided", "thinking", "after", "answer"
TAIL = 32  # a generation prompt that opens thinking ends with "<think>" and at most a few characters


def opens_thinking(prompt_text: str, reply_prefix: str = "") -> bool:
    """Whether generation starts inside a thinking block that the generation prompt (the last `TAIL` characters
    of the rendered prompt) or the reply prefix opened and did not close."""
    text = prompt_text[-TAIL:] + reply_prefix
    return text.rfind(OPEN) > text.rfind(CLOSE)


def split_prefix(reply_prefix: str) -> tuple[str, str]:
    """A reply prefix as (answer part, thinking part): one that opens `<think>` (and leaves it open, or closes
    it) is thinking up to its `</think>`, exactly as generated text is split."""
    split = ReasoningSplit()
    split.feed(reply_prefix, token=False)
    split.finish()
    return split.answer, split.reasoning


def _partial_tail(text: str, tag: str) -> int:
    """Length of the longest tail of `text` that is a proper prefix of `tag`."""
    for k in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:k]):
            return k
    return 0


class ReasoningSplit:
    """Splits one reply's text deltas into (answer, thinking) deltas. `tokens` counts the generated tokens
    that belonged to the thinking (its tags included)."""

    def __init__(self, enabled: bool = True, opened: bool = False, stops: tuple[str, ...] = ()):
        """`stops`: markers that also end the thinking and begin the answer, kept in it (a tool call's start, for
        the formats whose calls may come before `</think>`: llama.cpp's thinking_end_tags)."""
        self._state = (_THINKING if opened else _UNDECIDED) if enabled else _ANSWER
        self._stops = tuple(s for s in stops if s)
        self._held = ""
        self.answer = ""
        self.reasoning = ""
        self.tokens = 0
        self._undecided_tokens = 0

    @property
    def thinking(self) -> bool:
        return self._state == _THINKING

    def feed(self, text: str, token: bool = True) -> tuple[str, str]:
        """Take the next released text (`token`: it came from one generated token); returns what is now
        decided: (answer delta, thinking delta)."""
        before = self._state
        answer, thought = self._split(self._held + text, final=False)
        if token:
            if before == _THINKING:
                self.tokens += 1
            elif before == _UNDECIDED:
                self._undecided_tokens += 1
                if self._state in (_THINKING, _AFTER):  # the tokens that spelled "<think>" were thinking
                    self.tokens += self._undecided_tokens
        return answer, thought

    def finish(self) -> tuple[str, str]:
        """The reply ended: release whatever was held back."""
        return self._split(self._held, final=True)

    def _split(self, pending: str, final: bool) -> tuple[str, str]:
        self._held = ""
        answer, thought = "", ""
        while pending:
            if self._state == _UNDECIDED:
                stripped = pending.lstrip()
                if stripped.startswith(OPEN):
                    self._state = _THINKING
                    pending = stripped[len(OPEN):]
                    continue
                if not final and OPEN.startswith(stripped):  # whitespace, or a piece of "<think>"
                    self._held = pending
                    break
                self._state = _ANSWER
            if self._state == _THINKING:
                end, tag = min(((pending.find(t), t) for t in (CLOSE, *self._stops) if t in pending),
                               default=(-1, ""))
                if end >= 0:
                    thought += pending[:end]
                    if tag == CLOSE:
                        self._state, pending = _AFTER, pending[end + len(CLOSE):]
                    else:  # a call's start: the answer begins with it
                        self._state, pending = _ANSWER, pending[end:]
                    continue
                keep = 0 if final else max(_partial_tail(pending, t) for t in (CLOSE, *self._stops))
                thought += pending[:len(pending) - keep]
                self._held = pending[len(pending) - keep:]
                break
            if self._state == _AFTER:
                pending = pending.lstrip()
                if not pending:
                    break
                self._state = _ANSWER
            answer += pending
            break
        if not self.reasoning:
            thought = thought.lstrip()
        self.reasoning += thought
        self.answer += answer
        return answer, thought

    @property
    def reasoning_text(self) -> str:
        return self.reasoning.strip()
