"""OpenAIBackend: panes on any OpenAI-compatible server (llama-server, vLLM, Ollama, llama-cpp-python's own).

Requests stream through the official `openai` client (it parses the SSE), at most `max_concurrency` at a time
on worker threads; each chunk becomes a StepEvent and text on the request's handle, so nothing above this layer
can tell a server from the local engine. TTFT and decode rates are measured here, prompt tokens come from the
usage chunk. Cancelling closes the HTTP stream, which makes the server stop generating. Any failure (server
down, DNS, 401/403/404/429/5xx, a stream killed or stalled, malformed chunks) ends that request "error" with
a message naming the URL and the cause; nothing retries silently, nothing hangs.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import openai

from app.backends.security import plain_http_warning
from app.backends.server_metrics import MetricsPoller
from app.backends.server_params import create_arguments, unapplied
from app.engine import Completion, GenerationRequest, RequestHandle, RequestState, StatsSnapshot, StepEvent, limits
from app.engine.logprobs import TokenLogprob

CONNECT_TIMEOUT_S, READ_TIMEOUT_S = 5.0, 60.0
FINISH = {"stop": "stop", "length": "length"}  # anything else a server says (tool_calls, content_filter): "stop"
_ids = itertools.count(1_000_000_001)  # apart from the local engine's ids, so one runner can hold both


def describe_error(url: str, exc: Exception) -> str:
    """One sentence naming the server and what went wrong."""
    if isinstance(exc, openai.APITimeoutError):
        return f"{url} stopped answering (no data for {READ_TIMEOUT_S:.0f} s)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__ or exc
        return f"cannot reach {url}: {cause}"
    if isinstance(exc, openai.APIStatusError):
        what = {401: "refused the API key", 403: "refused access (forbidden)", 404: "has no such path or model",
                429: "is rate limiting (too many requests)", 503: "is unavailable or overloaded"}
        reason = what.get(exc.status_code, "answered with an error")
        detail = getattr(exc, "message", "") or str(exc)
        return f"{url} {reason} (HTTP {exc.status_code}): {detail}"
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError | TypeError):
        return f"{url} sent a response that is not valid OpenAI streaming data: {exc}"
    return f"{url}: {type(exc).__name__}: {exc}"


class OpenAIBackend:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 max_concurrency: int = limits.SERVER_CONCURRENCY.default,
                 read_timeout_s: float = READ_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "none", max_retries=0,
                                    timeout=openai.Timeout(read_timeout_s, connect=CONNECT_TIMEOUT_S))
        self._model = model
        self.max_concurrency = max_concurrency
        self.warning = plain_http_warning(self.base_url)  # None, or a sentence for the user (unencrypted)
        self._pool = ThreadPoolExecutor(max_concurrency, thread_name_prefix="chorus-http")
        self._lock = threading.Lock()
        self._subscribers: tuple[Callable[[StepEvent], None], ...] = ()
        self._cancelled: set[int] = set()
        self._live: dict[int, RequestHandle] = {}
        self._running = 0
        self._step = 0
        self._tokens_total = self._prompt_total = self._completed = 0
        self._token_times: list[float] = []
        self.metrics = MetricsPoller(self.base_url)
        self.server_kind: str | None = None  # owned_by of its models: "llamacpp", "vllm", ... (list_models)

    # --- Backend protocol ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{urlparse(self.base_url).netloc} · {self._model or 'default model'}"

    @property
    def model_info(self) -> dict:
        return {"url": self.base_url, "model": self._model, "kind": "server"}

    def list_models(self) -> list[str]:
        """The server's models (GET /v1/models); raises with describe_error's sentence. Also learns what kind
        of server it is (`owned_by`), which says which settings it applies (server_params.py)."""
        try:
            models = self.client.models.list().data
        except openai.OpenAIError as exc:
            raise ConnectionError(describe_error(self.base_url, exc)) from exc
        if models:
            self.server_kind = getattr(models[0], "owned_by", None)
        return [m.id for m in models]

    @classmethod
    def open(cls, base_url: str, model: str | None = None, api_key: str | None = None,
             max_concurrency: int = limits.SERVER_CONCURRENCY.default) -> OpenAIBackend:
        """A backend already connected (`connect`); raises ConnectionError naming the cause, having closed it."""
        backend = cls(base_url, model=model, api_key=api_key, max_concurrency=max_concurrency)
        try:
            backend.connect()
        except ConnectionError:
            backend.close()
            raise
        return backend

    def connect(self) -> list[str]:
        """Check the server now (GET /v1/models) and, when no model was named, ask for the first one it lists
        (vLLM refuses any other name); returns its models. Raises ConnectionError like list_models."""
        models = self.list_models()
        if self._model is None and models:
            self._model = models[0]
        return models

    def submit(self, request: GenerationRequest) -> RequestHandle:
        handle = RequestHandle(next(_ids), request, self._cancel)
        with self._lock:
            self._live[handle.id] = handle
        self._pool.submit(self._serve, handle)
        return handle

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]:
        with self._lock:
            self._subscribers = (*self._subscribers, fn)
        self.metrics.start()

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = tuple(f for f in self._subscribers if f is not fn)

        return unsubscribe

    def stats(self) -> StatsSnapshot:
        now = time.perf_counter()
        with self._lock:
            self._token_times = [t for t in self._token_times if now - t < 5.0]
            recent = len(self._token_times)
            active, queued = self._running, len(self._live) - self._running
            totals = (self._prompt_total, self._tokens_total, self._completed)
        return StatsSnapshot(n_slots=self.max_concurrency, active=active, queued=queued,
                             decode_tps=recent / 5.0 if recent else None, prefill_tps=None, avg_concurrent=None,
                             steps=self._step, decode_tokens=totals[1], decode_time_s=0.0, prefill_tokens=0,
                             prefill_time_s=0.0, prompt_tokens_total=totals[0], generated_tokens_total=totals[1],
                             completed=totals[2], slot_context_used=[], n_ctx_per_slot=0,
                             server=self.metrics.latest())

    def cancel_all(self) -> None:
        with self._lock:
            self._cancelled.update(self._live)

    def close(self) -> None:
        self.cancel_all()
        self._pool.shutdown(wait=True, cancel_futures=False)
        self.metrics.stop()
        self.client.close()

    # --- one request, on a worker thread -------------------------------------------------------------------
    def _cancel(self, request_id: int) -> None:
        with self._lock:
            self._cancelled.add(request_id)

    def _is_cancelled(self, request_id: int) -> bool:
        with self._lock:
            return request_id in self._cancelled

    def _serve(self, handle: RequestHandle) -> None:
        run = _Run(handle)
        try:
            if self._is_cancelled(handle.id):  # cancelled while queued: never sent
                return self._end(run, "cancelled")
            with self._lock:
                self._running += 1
            run.t_start = time.perf_counter()
            self._emit(run, state=RequestState.PREFILLING)
            stream = self._open(handle.request)
            try:
                for chunk in stream:
                    if self._is_cancelled(handle.id):
                        return self._end(run, "cancelled")
                    self._take(run, chunk)
            finally:
                stream.close()  # also what tells the server to stop generating
            self._end(run, run.finish or "stop")
        except openai.OpenAIError as exc:
            self._end(run, "error", describe_error(self.base_url, exc))
        except Exception as exc:  # malformed data the client let through, a bug: end this request only
            self._end(run, "error", describe_error(self.base_url, exc))

    def _open(self, request: GenerationRequest):
        endpoint, arguments = create_arguments(request, self._model)
        api = self.client.chat.completions if endpoint == "chat" else self.client.completions
        return api.create(**arguments)

    def _take(self, run: _Run, chunk) -> None:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            run.prompt_tokens = usage.prompt_tokens or run.prompt_tokens
            details = getattr(usage, "prompt_tokens_details", None)
            run.cached = getattr(details, "cached_tokens", None) or run.cached
        for choice in chunk.choices or []:
            delta = getattr(choice, "delta", None)
            text = (getattr(delta, "content", None) if delta is not None else getattr(choice, "text", None)) or ""
            entries = _logprobs(getattr(choice, "logprobs", None))
            if text or entries:
                run.add(text, entries, time.perf_counter())
                with self._lock:
                    self._tokens_total += max(1, len(entries))
                    self._token_times.append(run.t_last)
                self._emit(run, delta=text, entries=entries)
            if choice.finish_reason:
                run.finish = FINISH.get(choice.finish_reason, "stop")

    def _emit(self, run: _Run, delta: str = "", entries=(), state: RequestState | None = None,
              finished: Completion | None = None) -> None:
        handle = run.handle
        states = {}
        if state is not None:
            handle.state = state
            states[handle.id] = state
        elif delta and handle.state != RequestState.GENERATING:
            handle.state = RequestState.GENERATING
            states[handle.id] = RequestState.GENERATING
        if delta:
            handle._publish(delta)
        with self._lock:
            self._step += 1
            step, subscribers = self._step, self._subscribers
        event = StepEvent(step=step, deltas={handle.id: delta} if delta else {}, states=states,
                          finished=[finished] if finished else [],
                          tokens={handle.id: run.tokens} if delta or entries else {}, time=time.perf_counter(),
                          logprobs={handle.id: list(entries)} if entries else {})
        for fn in subscribers:
            try:
                fn(event)
            except Exception:  # a subscriber's bug must not end the request
                pass

    def _end(self, run: _Run, reason: str, error: str | None = None) -> None:
        handle = run.handle
        completion = run.completion(reason, error, unapplied(handle.request, self.server_kind))
        handle._complete(completion)
        with self._lock:
            self._live.pop(handle.id, None)
            self._cancelled.discard(handle.id)
            self._running -= 1 if run.t_start is not None else 0
            self._prompt_total += completion.prompt_tokens
            self._completed += 1
        self._emit(run, finished=completion)


class _Run:
    """What one streamed request has received so far (client-side timings on time.perf_counter)."""

    def __init__(self, handle: RequestHandle):
        self.handle = handle
        self.text, self.tokens, self.prompt_tokens, self.cached = "", 0, 0, 0
        self.entries: list[TokenLogprob] = []
        self.finish: str | None = None
        self.t_start = self.t_first = self.t_last = None

    def add(self, text: str, entries: list, now: float) -> None:
        self.text += text
        self.entries += entries
        self.tokens += max(1, len(entries))  # a server sends a token per chunk unless it reports several
        self.t_first = self.t_first or now
        self.t_last = now

    def completion(self, reason: str, error: str | None, note: str = "") -> Completion:
        h = self.handle
        tps = ((self.tokens - 1) / (self.t_last - self.t_first)
               if self.t_first and self.t_last and self.t_last > self.t_first and self.tokens > 1 else None)
        return Completion(request_id=h.id, text=self.text, token_ids=[], finish_reason=reason, error=error,
                          prompt_tokens=self.prompt_tokens, generated_tokens=self.tokens,
                          queue_wait_s=None if self.t_start is None else self.t_start - h.t_submit,
                          ttft_s=None if self.t_first is None else self.t_first - h.t_submit, decode_tps=tps,
                          error_kind="server" if error else None, cached_tokens=self.cached,
                          token_logprobs=list(self.entries) if h.request.logprobs else None, note=note)


def _logprobs(data) -> list[TokenLogprob]:
    """OpenAI chat logprobs (`content`: token, logprob, top_logprobs) as TokenLogprobs; servers send no ids."""
    content = getattr(data, "content", None) if data is not None else None
    return [TokenLogprob(-1, item.token, float(item.logprob),
                         tuple((-1, alt.token, float(alt.logprob)) for alt in (item.top_logprobs or [])))
            for item in content or []]
