"""What one streamed server reply has received so far, and how an OpenAI chunk adds to it.

Thinking: a server that splits it (llama-server's `reasoning_content`, vLLM's `reasoning`) is taken as it
comes; text that still carries `<think>…</think>` (a server run with `--reasoning-format none`) is split here
as the engine splits it, so every backend's `text` is the answer alone.

Tool calls arrive as `tool_calls` deltas: the first piece of a call (by its `index`) brings its id and name,
later pieces add fragments of its arguments' JSON text; they are joined here into `{id, name, arguments}`.

Token counts: while a reply streams, each chunk with text counts as a token (or as many as it reports logprobs
for), the only live figure a client has; when the server reports `usage.completion_tokens` (llama-server and
vLLM do in the last chunk, asked with `stream_options.include_usage`), that is the reply's count.
"""

from __future__ import annotations

from app.engine import Completion, RequestHandle
from app.engine.chat.template.reasoning import ReasoningSplit
from app.engine.sampling.logprobs import TokenLogprob

FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_calls",  # anything else a server says
          "function_call": "tool_calls"}  # (content_filter...): "stop"; function_call is OpenAI's older name


class StreamRun:
    """Client-side timings are on time.perf_counter, the clock of RequestHandle.t_submit."""

    def __init__(self, handle: RequestHandle):
        self.handle = handle
        self.text, self.chunk_tokens, self.prompt_tokens, self.cached = "", 0, 0, 0
        self.usage_tokens: int | None = None  # usage.completion_tokens, once the server sends it
        self.entries: list[TokenLogprob] = []
        self.finish: str | None = None
        self.t_start = self.t_first = self.t_last = None
        self.t_answer: float | None = None  # when the answer's first text arrived
        self.split = ReasoningSplit()
        self.reasoning = ""  # what the server itself reported as thinking
        self.reasoning_chunks = 0  # chunks of it (the live count of thinking tokens)
        self.ended = False
        self.calls: dict[int, dict] = {}  # tool calls by their index in the reply, as assembled so far

    @property
    def tokens(self) -> int:
        """The reply's token count: the server's own once it said, else the chunks counted so far."""
        return self.usage_tokens if self.usage_tokens is not None else self.chunk_tokens

    def take(self, chunk, now: float) -> tuple[str, str, list[TokenLogprob], int]:
        """Add one chunk; returns (its answer text, its thinking text, its logprob entries, the tokens it counts
        for live)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = usage.prompt_tokens or self.prompt_tokens
            details = getattr(usage, "prompt_tokens_details", None)
            self.cached = getattr(details, "cached_tokens", None) or self.cached
            if getattr(usage, "completion_tokens", None) is not None:
                self.usage_tokens = usage.completion_tokens
        text, entries, counted, thought = "", [], 0, ""
        for choice in chunk.choices or []:
            delta = getattr(choice, "delta", None)
            piece = (getattr(delta, "content", None) if delta is not None else getattr(choice, "text", None)) or ""
            reasoned = (getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
                        if delta is not None else None) or ""
            found = chunk_logprobs(getattr(choice, "logprobs", None))
            called = self._take_calls(getattr(delta, "tool_calls", None) if delta is not None else None)
            if reasoned:
                thought += reasoned
                self.reasoning_chunks += 1
            if piece or found:
                answer, inline = self.split.feed(piece)
                text += answer
                thought += inline
                entries += found
                counted += max(1, len(found))  # a server sends a token per chunk unless it reports several
            elif reasoned or called:
                counted += 1
            if choice.finish_reason:
                self.finish = FINISH.get(choice.finish_reason, "stop")
        self.reasoning += thought
        if counted:
            if text and self.t_answer is None:
                self.t_answer = now
            self.text += text
            self.entries += entries
            self.chunk_tokens += counted
            self.t_first = self.t_first or now
            self.t_last = now
        return text, thought, entries, counted

    def _take_calls(self, deltas) -> bool:
        """Add a chunk's tool-call pieces; returns whether it had any."""
        for piece in deltas or []:
            index = getattr(piece, "index", None)
            call = self.calls.setdefault(len(self.calls) if index is None else index,
                                         {"id": "", "name": "", "arguments": ""})
            fn = getattr(piece, "function", None)
            call["id"] = getattr(piece, "id", None) or call["id"]
            call["name"] += (getattr(fn, "name", None) or "") if fn is not None else ""
            call["arguments"] += (getattr(fn, "arguments", None) or "") if fn is not None else ""
        return bool(deltas)

    @property
    def tool_calls(self) -> tuple[dict, ...]:
        return tuple(dict(self.calls[i]) for i in sorted(self.calls))

    def finish_split(self) -> str:
        """The reply ended: release text the splitter held back; returns the answer part of it."""
        answer, thought = self.split.finish()
        self.text += answer
        self.reasoning += thought
        return answer

    def completion(self, reason: str, error: str | None, note: str = "",
                   unapplied: tuple[str, ...] = ()) -> Completion:
        h, n = self.handle, self.tokens
        if not error and reason != "cancelled" and (ignored := tools_ignored(h.request, self.tool_calls)):
            note = "; ".join(filter(None, (note, ignored)))
        tps = ((n - 1) / (self.t_last - self.t_first)
               if self.t_first and self.t_last and self.t_last > self.t_first and n > 1 else None)
        return Completion(request_id=h.id, text=self.text, token_ids=[], finish_reason=reason, error=error,
                          prompt_tokens=self.prompt_tokens, generated_tokens=n,
                          queue_wait_s=None if self.t_start is None else self.t_start - h.t_submit,
                          ttft_s=None if self.t_first is None else self.t_first - h.t_submit, decode_tps=tps,
                          error_kind="server" if error else None, cached_tokens=self.cached,
                          token_logprobs=list(self.entries) if h.request.logprobs else None, note=note,
                          unapplied=unapplied, reasoning_text=self.reasoning.strip(),
                          reasoning_tokens=self.reasoning_chunks + self.split.tokens,
                          answer_ttft_s=None if self.t_answer is None else self.t_answer - h.t_submit,
                          tool_calls=self.tool_calls)


def tools_ignored(request, calls: tuple[dict, ...]) -> str:
    """A sentence when the server answered a request that required a call with text and no call ("" else)."""
    if not request.tools or request.tool_choice in ("auto", "none") or calls:
        return ""
    return (f"the server ignored the tools: tool_choice was {request.tool_choice} but it replied with text and no "
            "call (llama-server needs --jinja and a chat template that shows tools)")


def chunk_logprobs(data) -> list[TokenLogprob]:
    """OpenAI chat logprobs (`content`: token, logprob, top_logprobs) as TokenLogprobs; servers send no ids."""
    content = getattr(data, "content", None) if data is not None else None
    return [TokenLogprob(-1, item.token, float(item.logprob),
                         tuple((-1, alt.token, float(alt.logprob)) for alt in (item.top_logprobs or [])))
            for item in content or []]
