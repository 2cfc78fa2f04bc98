"""OpenAIBackend: panes on any OpenAI-compatible server (llama-server, vLLM, Ollama, llama-cpp-python's own).

Requests stream through the official `openai` client's async API, each a task on the backend's own event-loop
thread (`chorus-http`), at most `max_concurrency` at a time; each chunk becomes a StepEvent and text on the
request's handle, so nothing above this layer can tell a server from the local engine. Subscribers are called on
that thread, never on a caller's. Cancelling, from any thread, cancels the request's task, which closes its HTTP
response at once whether the server is sending, stalled or has not answered yet (and makes it stop generating);
`close()` does that to every live request and never waits on a server. Any failure (server down, DNS,
401/403/404/429/5xx, a stream killed or stalled, malformed chunks) ends that request "error" with a message
naming the URL and the cause; nothing retries silently, nothing hangs. Image and audio parts go as they are (OpenAI
`image_url` data URLs, `input_audio` base64 and format); a server that answers them with an HTTP error is named.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from urllib.parse import urlparse

import openai

from app.backends.base import BackendInfo, NotSupported
from app.backends.client_stats import ClientStats
from app.backends.image_parts import count_media, refused
from app.backends.loop_thread import LoopThread, close_quietly
from app.backends.security import plain_http_warning
from app.backends.server_errors import CONNECT_TIMEOUT_S, READ_TIMEOUT_S, describe_error
from app.backends.server_metrics import MetricsPoller
from app.backends.server_params import create_arguments, unapplied, unapplied_keys
from app.backends.stream_run import StreamRun
from app.engine import GenerationRequest, RequestHandle, RequestState, StatsSnapshot, StepEvent
from app.engine.limits import Limit
from app.engine.request import next_request_id
from app.engine.sampling.grammar import GrammarError, check_request
from app.engine.types import EngineStopped

SERVER_CONCURRENCY = Limit(1, 64, 8)  # requests one server backend streams at a time (the server form's range)

class OpenAIBackend:
    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 max_concurrency: int = SERVER_CONCURRENCY.default,
                 read_timeout_s: float = READ_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        options = {"base_url": self.base_url, "api_key": api_key or "none", "max_retries": 0,
                   "timeout": openai.Timeout(read_timeout_s, connect=CONNECT_TIMEOUT_S)}
        self.client = openai.OpenAI(**options)  # list_models, on the caller's thread
        self._aclient = openai.AsyncOpenAI(**options)  # streams, on the loop thread only
        self._model = model
        self.max_concurrency = max_concurrency
        self.warning = plain_http_warning(self.base_url)  # None, or a sentence for the user (unencrypted)
        self.metrics = MetricsPoller(self.base_url)
        self.server_kind: str | None = None  # owned_by of its models: "llamacpp", "vllm", ... (list_models)
        self._lock = threading.Lock()  # everything below that other threads read: subscribers, counts, _closing
        self._subscribers: tuple[Callable[[StepEvent], None], ...] = ()
        self._live: dict[int, RequestHandle] = {}
        self._closing = False
        self._running = self._step = 0
        self._figures = ClientStats()
        self._slots = asyncio.Semaphore(max_concurrency)
        self._tasks: dict[int, asyncio.Task] = {}  # loop thread only
        self._cancelled: set[int] = set()  # loop thread only: requests asked to cancel, until they end
        self._loop = LoopThread("chorus-http")

    # --- Backend protocol ------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return f"{urlparse(self.base_url).netloc} · {self._model or 'default model'}"

    @property
    def model_info(self) -> BackendInfo:
        return BackendInfo(kind="server", name=self.name, model=self._model, url=self.base_url,
                           server_kind=self.server_kind)

    @property
    def failure(self) -> str | None:
        """Why the backend stopped taking requests without being closed, else None."""
        if self._loop.alive or self._closing:
            return None
        return f"the connection thread for {self.base_url} stopped"

    @property
    def config(self) -> None:
        """A server's settings are its own: there is no EngineConfig."""
        return None

    def render_prompt(self, request: GenerationRequest) -> str:
        raise NotSupported(f"{self.base_url} renders prompts on the server, out of Chorus's sight")

    def check_format(self, grammar: str | None, json_schema: dict | None) -> str | None:
        """The checks that need no model (an empty grammar, a schema the converter refuses); the server parses
        the rest itself, and a request it refuses ends "error" with its message."""
        try:
            check_request(grammar, json_schema)
        except GrammarError as exc:
            return str(exc)
        return None

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
             max_concurrency: int = SERVER_CONCURRENCY.default) -> OpenAIBackend:
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
        """Queue a request (never blocks); raises EngineStopped after close()."""
        handle = RequestHandle(next_request_id(), request, self._cancel)
        with self._lock:  # scheduled under the lock, so close() cannot slip in between
            if self._closing:
                raise EngineStopped(f"the connection to {self.base_url} is closed")
            self._live[handle.id] = handle
            self._loop.call(self._start, handle)
        return handle

    def subscribe(self, fn: Callable[[StepEvent], None]) -> Callable[[], None]:
        """`fn(event)` is called on the backend's loop thread. Starts polling the server's /metrics."""
        with self._lock:
            self._subscribers = (*self._subscribers, fn)
        self.metrics.start()

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers = tuple(f for f in self._subscribers if f is not fn)

        return unsubscribe

    def stats(self) -> StatsSnapshot:
        """What the client measured (docs/engine.md, "Statistics"), plus the server's own figures from its
        /metrics in `server` (polled from the first call on; None until the first poll)."""
        self.metrics.start()
        with self._lock:
            active, queued, steps = self._running, len(self._live) - self._running, self._step
        return self._figures.snapshot(self.max_concurrency, active, queued, steps, self.metrics.latest())

    def reset_stats(self) -> None:
        self._figures.reset()

    def clear_prompt_cache(self) -> None:
        raise NotSupported(f"{self.base_url} keeps its prompt cache on the server, out of Chorus's reach")

    def cancel_all(self) -> None:
        with self._lock:
            for request_id in self._live:
                self._loop.call(self._cancel_task, request_id)

    def close(self, timeout: float | None = 2.0) -> bool:
        """Cancel every live request (each ends "cancelled", its response closed) and stop the loop thread, waiting
        at most `timeout` seconds for that; a stalled server cannot hold it up. Returns whether the thread ended."""
        with self._lock:
            if not self._closing:
                self._closing = True
                self._loop.call(self._shut_down)
        self.metrics.stop()
        self.client.close()
        return self._loop.join(timeout)

    # --- the loop thread -------------------------------------------------------------------------------------
    def _cancel(self, request_id: int) -> None:
        with self._lock:
            if request_id in self._live:
                self._loop.call(self._cancel_task, request_id)

    def _cancel_task(self, request_id: int) -> None:
        task = self._tasks.get(request_id)
        if task is not None:
            self._cancelled.add(request_id)
            task.cancel()  # at its next await: the HTTP read, the wait for a slot, or before it starts

    def _start(self, handle: RequestHandle) -> None:
        run = StreamRun(handle)
        task = self._loop.loop.create_task(self._serve(run))
        self._tasks[handle.id] = task
        task.add_done_callback(lambda t: self._settle(run, t))

    def _settle(self, run: StreamRun, task: asyncio.Task) -> None:
        """Every task ends its request, even one cancelled before it ran a line."""
        self._tasks.pop(run.handle.id, None)
        self._cancelled.discard(run.handle.id)
        if not run.ended:
            error = None if task.cancelled() else f"{self.base_url}: internal error: {task.exception()!r}"
            self._end(run, "error" if error else "cancelled", error)

    def _shut_down(self) -> None:
        self._cancelled.update(self._tasks)
        self._loop.stop(list(self._tasks.values()), self._aclient.close)

    async def _serve(self, run: StreamRun) -> None:
        request = run.handle.request
        try:
            async with self._slots:
                with self._lock:
                    self._running += 1
                run.t_start = time.perf_counter()
                self._emit(run, state=RequestState.PREFILLING)
                endpoint, arguments = create_arguments(request, self._model, self.server_kind)
                api = self._aclient.chat.completions if endpoint == "chat" else self._aclient.completions
                stream = await api.create(**arguments)
                try:
                    async for chunk in stream:
                        self._take(run, chunk)
                finally:
                    await close_quietly(stream)  # also what tells the server to stop generating
            # a cancel the HTTP stack swallowed ends the stream quietly (seen under load): still "cancelled"
            self._end(run, "cancelled" if run.handle.id in self._cancelled else run.finish or "stop")
        except asyncio.CancelledError:
            self._end(run, "cancelled")
        except Exception as exc:  # the server, the client, malformed data, a bug: end this request only
            error = describe_error(self.base_url, exc)
            if isinstance(exc, openai.APIStatusError) and count_media(request):
                error = refused(self.name, request, error)  # a server or model that takes no images or audio
            self._end(run, "error", error)

    def _take(self, run: StreamRun, chunk) -> None:
        now = time.perf_counter()
        first = run.t_first is None
        text, thought, entries, counted = run.take(chunk, now)
        if counted:
            self._figures.tokens(run, counted, first, now)
            self._emit(run, delta=text, entries=entries, thought=thought)

    def _emit(self, run: StreamRun, delta: str = "", entries=(), state: RequestState | None = None,
              finished=None, thought: str = "") -> None:
        handle = run.handle
        states = {}
        if state is not None:
            handle.state = state
            states[handle.id] = state
        elif (delta or thought) and handle.state != RequestState.GENERATING:
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
                          logprobs={handle.id: list(entries)} if entries else {},
                          reasoning={handle.id: thought} if thought else {})
        for fn in subscribers:
            try:
                fn(event)
            except Exception:  # a subscriber's bug must not end the request
                pass

    def _end(self, run: StreamRun, reason: str, error: str | None = None) -> None:
        """End a request exactly once (loop thread): its completion, the counts, one finished event."""
        if run.ended:
            return
        handle = run.handle
        tail = run.finish_split()  # text the thinking splitter held back
        if tail:
            self._emit(run, delta=tail)
        run.ended = True
        request = handle.request
        completion = run.completion(reason, error, unapplied(request, self.server_kind),
                                    unapplied_keys(request, self.server_kind))
        handle._complete(completion)
        self._figures.ended(run, time.perf_counter())
        with self._lock:
            self._live.pop(handle.id, None)
            self._running -= 1 if run.t_start is not None else 0
        self._emit(run, finished=completion)

