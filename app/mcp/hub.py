"""McpHub: the MCP servers a session uses, each one connection through the official SDK, on an asyncio loop of
the hub's own thread.

Nothing here blocks the caller: `start`, `call`, `restart` and `stop` return `concurrent.futures.Future`s (any
thread may call them; the window waits on none of them on its thread). `changed` (psygnal) is emitted on the hub's
thread with a server's name whenever its state or its tool list changes; a view connects with `thread=` its own.

A call never raises through its future: whatever fails becomes an error `ToolResult` the model sees as the tool's
answer, with a sentence saying what happened: the server is not running (and why: it failed to start, with the
tail of its stderr, or crashed), the call timed out (per-call timeout, default 60 s; the server's malformed
messages are named then), or the tool itself returned an error. Cancelling the future cancels the call. A server
that crashes mid-run ends its pending calls as errors and stays "crashed" until `restart`.

The tool list follows the server: `notifications/tools/list_changed` (handshake-era servers) or a
`subscriptions/listen` stream (2026 servers) refetches it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from psygnal import Signal

from app.backends.loop_thread import LoopThread
from app.mcp.config import McpConfig, ServerConfig
from app.mcp.failures import connection_closed, describe, stderr_tail, with_tail
from app.mcp.results import (
    DEFAULT_TIMEOUT_S,
    MAX_RESULT_CHARS,
    TIMEOUT,
    McpTool,
    ToolResult,
    canonical_arguments,
    error_result,
    from_call_result,
    tool_from_sdk,
)

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0  # connecting and listing tools (npx may download a package first)
STOPPED, STARTING, READY, FAILED, CRASHED = "stopped", "starting", "ready", "failed", "crashed"


@dataclass(frozen=True)
class ServerState:
    """Where one server stands. `message` says why it failed or crashed; `stderr_tail` is the end of what a local
    server wrote to stderr (shown with a failure); `tools` as it last listed them."""

    name: str
    launch: str
    status: str = STOPPED
    message: str = ""
    stderr_tail: str = ""
    tools: tuple[McpTool, ...] = ()
    protocol: str = ""

    @property
    def running(self) -> bool:
        return self.status == READY


class _Connection:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.state = ServerState(config.name, config.launch)
        self.client = None
        self.stopping: asyncio.Event | None = None
        self.task: asyncio.Task | None = None
        self.ready: asyncio.Future | None = None
        self.errlog = None
        self.malformed = ""  # the last message from the server that was not valid JSON-RPC


class McpHub:
    """Owns the connections to MCP servers. Built from a configuration; nothing starts until `start`."""

    changed = Signal(str)
    """A server's state or tool list changed: (its name). Emitted on the hub's thread."""

    def __init__(self, servers: McpConfig | Iterable[ServerConfig] = (), start_timeout_s: float = START_TIMEOUT_S,
                 max_result_chars: int = MAX_RESULT_CHARS):
        self._servers = {s.name: _Connection(s) for s in (servers.servers if isinstance(servers, McpConfig)
                                                          else servers)}
        self.start_timeout_s, self.max_result_chars = start_timeout_s, max_result_chars
        self._lock = threading.Lock()
        self._thread: LoopThread | None = None
        self.calls_made = 0  # real calls sent to servers (tests and the replay store's counts)

    # ---- configuration and state (any thread) ----------------------------------------------------------------
    def names(self) -> list[str]:
        return list(self._servers)

    def config(self, name: str) -> ServerConfig:
        return self._connection(name).config

    def state(self, name: str) -> ServerState:
        return self._connection(name).state

    def states(self) -> list[ServerState]:
        return [c.state for c in self._servers.values()]

    def tools(self, names: Iterable[str] | None = None) -> list[McpTool]:
        """The tools of the running servers among `names` (all by default), server by server."""
        chosen = list(self._servers) if names is None else [n for n in names if n in self._servers]
        return [t for n in chosen for t in self._servers[n].state.tools]

    def set_server(self, config: ServerConfig) -> None:
        """Add a server, or replace a stopped one's configuration (a running one is replaced after `stop`)."""
        with self._lock:
            current = self._servers.get(config.name)
            if current is not None and current.state.status in (STARTING, READY):
                raise ValueError(f"MCP server {config.name!r} is running: stop it before changing it")
            self._servers[config.name] = _Connection(config)
        self.changed.emit(config.name)

    # ---- lifecycle ---------------------------------------------------------------------------------------------
    def start(self, name: str) -> concurrent.futures.Future:
        """Start a server (a no-op if it runs); the future gives its ServerState once READY, FAILED or CRASHED."""
        conn = self._connection(name)
        return asyncio.run_coroutine_threadsafe(self._start(conn), self._loop())

    def start_all(self, names: Iterable[str] | None = None, timeout: float | None = None) -> list[ServerState]:
        """Start servers together and wait for each (a convenience for headless commands, never the GUI thread)."""
        futures = [self.start(n) for n in (self.names() if names is None else names)]
        return [f.result(timeout) for f in futures]

    def restart(self, name: str) -> concurrent.futures.Future:
        """Stop the server (whatever its state) and start it again."""
        conn = self._connection(name)

        async def again():
            await self._stop(conn)
            return await self._start(conn)
        return asyncio.run_coroutine_threadsafe(again(), self._loop())

    def stop(self, name: str) -> concurrent.futures.Future:
        conn = self._connection(name)
        return asyncio.run_coroutine_threadsafe(self._stop(conn), self._loop())

    def close(self, timeout: float = 10.0) -> None:
        """Stop every server (a local one's process ends) and the hub's thread. Idempotent."""
        thread = self._thread
        if thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_all(), thread.loop).result(timeout)
        thread.call(thread.stop, [], _nothing)
        thread.join(timeout)
        self._thread = None

    # ---- calls -------------------------------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: str | dict | None = None, call_id: str = "",
             timeout_s: float = DEFAULT_TIMEOUT_S) -> concurrent.futures.Future:
        """Call a tool; the future's result is a ToolResult (an error result for any failure, never an exception;
        cancelling the future cancels the call)."""
        if server not in self._servers:
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(error_result(server, tool, arguments, f"no MCP server is named {server!r}", call_id))
            return done
        return asyncio.run_coroutine_threadsafe(
            self._call(self._servers[server], tool, arguments, call_id, timeout_s), self._loop())

    # ---- the hub's thread --------------------------------------------------------------------------------------
    def _connection(self, name: str) -> _Connection:
        try:
            return self._servers[name]
        except KeyError:
            raise KeyError(f"no MCP server is named {name!r} (configured: {', '.join(self._servers) or 'none'})") \
                from None

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._thread is None:
                self._thread = LoopThread("chorus-mcp")
            return self._thread.loop

    def _set(self, conn: _Connection, **changes) -> None:
        conn.state = replace(conn.state, **changes)
        self.changed.emit(conn.config.name)

    async def _start(self, conn: _Connection) -> ServerState:
        if conn.state.status == READY:
            return conn.state
        if conn.state.status == STARTING and conn.ready is not None:
            return await asyncio.shield(conn.ready)
        conn.ready = asyncio.get_running_loop().create_future()
        conn.stopping = asyncio.Event()
        conn.malformed = ""
        self._set(conn, status=STARTING, message="", stderr_tail="", tools=())
        conn.task = asyncio.create_task(self._serve(conn, conn.ready, conn.stopping))
        return await asyncio.shield(conn.ready)

    async def _serve(self, conn: _Connection, ready: asyncio.Future, stopping: asyncio.Event) -> None:
        """Hold the server's connection open until `stopping` is set; record how it ended."""
        from mcp import Client
        from mcp_types import Implementation

        config = conn.config
        errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") if config.transport == "stdio" \
            else None
        conn.errlog = errlog
        listen: asyncio.Task | None = None
        try:
            client = Client(self._transport(config, errlog), mode="auto", read_timeout_seconds=self.start_timeout_s,
                            message_handler=lambda message: self._message(conn, message), cache=None,
                            client_info=Implementation(name="Chorus", version="1"))
            async with client:
                conn.client = client
                tools = await self._list_tools(client, config.name)
                self._set(conn, status=READY, tools=tools, protocol=client.protocol_version or "")
                if not ready.done():
                    ready.set_result(conn.state)
                listen = self._listen(conn, client)
                await stopping.wait()
        except BaseException as exc:  # noqa: B036 - every way a server ends is told; cancellation is re-raised
            was_ready = conn.state.status == READY
            if not stopping.is_set():
                status = CRASHED if was_ready else FAILED
                verb = "stopped while running" if was_ready else "failed to start"
                self._set(conn, status=status, message=f"MCP server {config.name!r} {verb}: {describe(exc)}",
                          stderr_tail=stderr_tail(errlog))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if listen is not None:
                listen.cancel()
            conn.client = None
            if stopping.is_set() and conn.state.status in (READY, STARTING):
                self._set(conn, status=STOPPED, tools=())
            elif conn.state.status == READY:  # the connection closed by itself
                self._set(conn, status=CRASHED, tools=(), stderr_tail=stderr_tail(errlog),
                          message=f"MCP server {config.name!r} closed the connection")
            if not ready.done():
                ready.set_result(conn.state)
            if errlog is not None:
                errlog.close()
            conn.errlog = None

    @staticmethod
    def _transport(config: ServerConfig, errlog):
        if config.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client
            return stdio_client(StdioServerParameters(command=config.command, args=list(config.args),
                                                      env=dict(config.env) or None, cwd=config.cwd), errlog=errlog)
        from mcp.shared._httpx_utils import create_mcp_http_client
        if config.transport == "sse":
            from mcp.client.sse import sse_client
            return sse_client(config.url, headers=dict(config.headers) or None)
        from mcp.client.streamable_http import streamable_http_client
        return streamable_http_client(config.url, http_client=create_mcp_http_client(
            headers=dict(config.headers) or None))

    async def _list_tools(self, client, name: str) -> tuple[McpTool, ...]:
        tools, cursor = [], None
        for _ in range(100):  # a server that pages forever cannot hang the start
            page = await client.list_tools(cursor=cursor, cache_mode="refresh") if cursor else \
                await client.list_tools(cache_mode="refresh")
            tools += [tool_from_sdk(name, t) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(tools)

    async def _message(self, conn: _Connection, message) -> None:
        """A notification, or a transport-level error (a line that is not JSON-RPC), from the server."""
        if isinstance(message, Exception):
            errors = getattr(message, "errors", None)  # pydantic's ValidationError: the line it could not read
            line = errors()[0].get("input") if callable(errors) and errors() else None
            conn.malformed = f"{str(line)[:120]!r} is not JSON-RPC" if isinstance(line, (str, bytes)) \
                else describe(message)[:300]
            log.warning("MCP server %r sent a malformed message: %s", conn.config.name, conn.malformed)
            return
        if getattr(message, "method", "") == "notifications/tools/list_changed":
            asyncio.get_running_loop().create_task(self._refresh(conn))

    def _listen(self, conn: _Connection, client) -> asyncio.Task | None:
        """On a 2026 connection, the `subscriptions/listen` stream that tells the tool list changed."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return None

        async def follow():
            with contextlib.suppress(Exception):
                async with client.listen(tools_list_changed=True) as events:
                    async for _event in events:
                        await self._refresh(conn)
        return asyncio.get_running_loop().create_task(follow())

    async def _refresh(self, conn: _Connection) -> None:
        client = conn.client
        if client is None:
            return
        try:
            tools = await self._list_tools(client, conn.config.name)
        except Exception as exc:
            log.warning("refetching the tools of MCP server %r failed: %s", conn.config.name, describe(exc))
            return
        if conn.client is client:
            self._set(conn, tools=tools)

    async def _call(self, conn: _Connection, tool: str, arguments, call_id: str, timeout_s: float) -> ToolResult:
        name = conn.config.name
        if conn.state.status == STARTING and conn.ready is not None:
            await asyncio.shield(conn.ready)
        client = conn.client
        if client is None or conn.state.status != READY:
            why = conn.state.message or f"MCP server {name!r} is not running ({conn.state.status})"
            return error_result(name, tool, arguments, why + with_tail(conn.state.stderr_tail), call_id)
        parsed = canonical_arguments(arguments)
        try:
            values = json.loads(parsed)
            if not isinstance(values, dict):
                raise ValueError("not an object")
        except ValueError:
            return error_result(name, tool, arguments, f"the arguments of {tool} are not a JSON object: "
                                                       f"{parsed[:200]}", call_id)
        started = time.perf_counter()
        self.calls_made += 1
        try:
            result = await asyncio.wait_for(client.call_tool(tool, values), timeout_s)
        except asyncio.TimeoutError:
            note = f"; it sent a malformed message: {conn.malformed}" if conn.malformed else ""
            return error_result(name, tool, arguments, f"{tool} on MCP server {name!r} did not answer within "
                                                       f"{timeout_s:g} s{note}", call_id, failure=TIMEOUT)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            closed = connection_closed(exc)
            if closed:
                await self._crashed(conn)
                why = conn.state.message + with_tail(conn.state.stderr_tail)
            else:
                why = f"{tool} on MCP server {name!r} failed: {describe(exc)}"
            return error_result(name, tool, arguments, why, call_id)
        out = from_call_result(name, tool, values, result, time.perf_counter() - started, self.max_result_chars)
        return out.for_call(call_id, replayed=False)

    async def _crashed(self, conn: _Connection) -> None:
        """The connection closed under a call: the server is CRASHED (its pending calls end as errors)."""
        if conn.state.status == READY:
            self._set(conn, status=CRASHED, tools=(), stderr_tail=stderr_tail(conn.errlog),
                      message=f"MCP server {conn.config.name!r} stopped while running (its connection closed)")
            if conn.stopping is not None:
                conn.stopping.set()
                # The stop above is ours to clean up, not the user's: keep the state CRASHED.
            if conn.task is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(conn.task), 5)

    async def _stop(self, conn: _Connection) -> None:
        if conn.stopping is not None:
            conn.stopping.set()
        if conn.task is not None and not conn.task.done():
            try:
                await asyncio.wait_for(asyncio.shield(conn.task), 10)
            except BaseException:  # noqa: B036 - a server that will not stop is cancelled, never waited on forever
                conn.task.cancel()
        if conn.state.status in (FAILED, CRASHED, STARTING):
            self._set(conn, status=STOPPED, tools=())

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(c) for c in self._servers.values()), return_exceptions=True)


async def _nothing() -> None:
    return None
