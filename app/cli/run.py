"""`python -m app run INPUT`: every request of a JSONL (or every pane of a session) through one backend at once.

Results are JSON lines in completion order, flushed as each finishes, so a pipe sees them live. The input is
read lazily and at most `IN_FLIGHT_PER_SLOT` requests per slot are submitted ahead, so a 10,000-line file never
sits in memory. Ctrl+C (counted by a handler, app/cli/interrupt.py) cancels what is running, writes those
results ("cancelled") and exits 130. A bad line is an "error" result naming its line and field; an input or
model that cannot be used at all exits 2 with one sentence.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from tqdm import tqdm

from app.backends import KeyStore, plain_http_warning
from app.backends.embedding import DEFAULT_EMBEDDER
from app.backends.registry import BackendRegistry, BackendSpec
from app.cli.inputs import InputError, RunItem, open_input
from app.cli.interrupt import Interrupt
from app.cli.mcp_cli import consent_refused, read_config
from app.cli.mcp_run import McpRun, next_request
from app.cli.report import write_report
from app.cli.report_stability import report_clusters
from app.engine import limits
from app.evaluate.outputs import escape_surrogates
from app.mcp import parse_policy
from app.models import default_model_path
from app.models.projectors import beside
from app.session import MAIN, PaneResult, SessionRunner

IN_FLIGHT_PER_SLOT = 2  # requests submitted ahead of free slots: keeps every slot busy, bounds memory
EXIT_UNUSABLE, EXIT_INTERRUPTED = 2, 130
DRAIN_TIMEOUT_S = 60.0  # after Ctrl+C: how long cancelled requests may take to end


def result_record(item: RunItem, result: PaneResult | None) -> dict:
    """One output line: the run's result as the session holds it (the reply — with a branch's chosen start,
    `reply_prefix` — its figures, and the notes on its format and on settings the backend did not apply)."""
    if result is None:
        return {"id": item.id, "line": item.line, "text": "", "finish_reason": "error", "error": item.error,
                "prompt_tokens": 0, "cached_tokens": 0, "generated_tokens": 0, "queue_wait_s": None,
                "ttft_s": None, "decode_tps": None}
    record = {"id": item.id, "line": item.line, "text": result.text, "finish_reason": result.finish_reason,
              "error": result.error, "prompt_tokens": result.prompt_tokens, "cached_tokens": result.cached_tokens,
              "generated_tokens": result.generated_tokens, "queue_wait_s": result.queue_wait_s,
              "ttft_s": result.ttft_s, "decode_tps": result.decode_tps}
    for key, value in (("reply_prefix", result.reply_prefix), ("format_note", result.format_note),
                       ("note", result.backend_note), ("reasoning", result.reasoning),
                       ("reasoning_tokens", result.reasoning_tokens), ("answer_ttft_s", result.answer_ttft_s),
                       ("drafted_tokens", result.drafted_tokens), ("accepted_tokens", result.accepted_tokens),
                       ("tool_calls", result.tool_calls)):
        if value:
            record[key] = value
    if result.token_logprobs is not None:
        record["token_logprobs"] = [entry.to_dict() for entry in result.token_logprobs]
    return record


def server_key(args) -> str | None:
    """--api-key (kept in the OS keyring with --remember-key), else $CHORUS_API_KEY, else a remembered key."""
    keys = KeyStore()
    if args.api_key:
        if getattr(args, "remember_key", False) and not keys.set(args.server, args.api_key, remember=True):
            print(f"chorus run: the key is not remembered: no system keyring here ({keys.where})", file=sys.stderr)
        return args.api_key
    return os.environ.get("CHORUS_API_KEY") or keys.get(args.server)


def open_backends(args) -> BackendRegistry:
    """A registry whose main backend is the local engine, or a server (checked at once: an unreachable one is an
    unusable input). Its step events go nowhere until a Run takes them (`Run.__init__`)."""
    registry = BackendRegistry(lambda _event: None)
    if getattr(args, "server", None):
        if getattr(args, "spec_draft", None):
            raise ValueError("--spec-draft drafts on the local engine: a server drafts with its own draft model "
                             "(llama-server -md FILE)")
        warning = plain_http_warning(args.server)
        if warning:
            print(f"chorus run: warning: {warning}", file=sys.stderr)
        key = server_key(args)
        spec = BackendSpec(kind="server", url=args.server, model=args.server_model, max_concurrency=args.slots)
        registry.open_main(spec, api_key=key)
    else:
        model = Path(args.model) if args.model else default_model_path()
        draft = {"draft_model": str(Path(args.spec_draft).expanduser())} if getattr(args, "spec_draft", None) else {}
        tool_format = {"tool_format": args.tool_format} if getattr(args, "tool_format", None) else {}
        pacing = limits.PACING[getattr(args, "pacing", None) or limits.PACING_DEFAULT]
        projector = getattr(args, "mmproj", None) or beside(model)
        registry.open_main(BackendSpec(kind="local", path=str(model), mmproj=str(projector) if projector else None),
                           engine={"n_slots": args.slots, "mixed_step_factor": pacing, **draft, **tool_format,
                                   "n_ctx_per_slot": getattr(args, "context", limits.CONTEXT_PER_SLOT.default)})
    return registry


def main_model(args) -> str | None:
    """The local model's path (the embedder "local" is it), or None when the run is on a server."""
    if getattr(args, "server", None):
        return None
    return str(Path(args.model) if args.model else default_model_path())


def open_mcp(args) -> McpRun | int | None:
    """`--mcp`'s servers, started (None without --mcp); an exit code when the file is bad, consent is missing
    (nothing starts then) or a server failed to start."""
    if not getattr(args, "mcp", None):
        return None
    config = read_config(args.mcp, "run")
    if config is None:
        return EXIT_UNUSABLE
    if not args.allow_mcp:
        return consent_refused(config, "run")
    try:
        policy = parse_policy(args.mcp_approve)
    except ValueError as exc:
        print(f"chorus run: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    mcp = McpRun(config, policy, live=args.mcp_live, timeout_s=args.mcp_timeout)
    problems = mcp.start()
    if problems:
        mcp.close()
        print("chorus run: " + "; ".join(problems), file=sys.stderr)
        return EXIT_UNUSABLE
    return mcp


def run_command(args) -> int:
    mcp = open_mcp(args)  # before the model loads: a refused consent or a bad file costs nothing
    if isinstance(mcp, int):
        return mcp
    with Interrupt() as ctrl_c:  # counted from the start: Ctrl+C while the model loads also exits 130
        try:
            limits.SLOTS.check("--slots", args.slots)
            limits.CONTEXT_PER_SLOT.check("--context", args.context)
            items, total, session = open_input(args.input, tuple(getattr(args, "lora", None) or ()))
            backends = open_backends(args)
        except (InputError, ValueError, OSError, ConnectionError) as exc:
            print(f"chorus run: {exc}", file=sys.stderr)
            if mcp is not None:
                mcp.close()
            return EXIT_INTERRUPTED if ctrl_c.requested else EXIT_UNUSABLE
        if session is not None and any(p.mcp for p in session.panes):
            print("chorus run: note: the session's panes offer MCP tools; `run` of a session starts no MCP server, "
                  "so they run without them (answer them in the window, or give a JSONL with --mcp)", file=sys.stderr)
        with ExitStack() as stack:
            stack.callback(backends.close_all)
            if mcp is not None:
                stack.callback(mcp.close)
            if ctrl_c.requested:
                return EXIT_INTERRUPTED
            out = stack.enter_context(open(args.out, "w", encoding="utf-8")) if args.out else sys.stdout
            run = Run(backends, items, total, session, out, args.slots, keep=bool(args.report),
                      stability=lambda records, session: report_clusters(
                          records, session, getattr(args, "embedder", None) or DEFAULT_EMBEDDER, main_model(args)),
                      mcp=mcp)
            return run.execute(args.report, ctrl_c)


class Run:
    """Feeds the inputs to the SessionRunner as slots free up and writes each result as its run ends. A session
    input's panes run as panes (`runner.run`), so the session after the run is what the window would hold."""

    def __init__(self, backends: BackendRegistry, items, total: int, session, out, slots: int, keep: bool,
                 stability=None, mcp: McpRun | None = None):
        """`backends`: a registry with its main backend open; every name a session's panes store means it.
        `stability(records, session)` gives the report's answer clusters (report_stability.py). `mcp`: the
        servers that answer the calls of lines with "mcp" (mcp_run.py)."""
        self.stability, self.mcp = stability, mcp
        self.tool_waits: dict[int, tuple[RunItem, PaneResult]] = {}  # line -> its item and last round's result
        self.backend, self.items, self.session, self.out, self.keep = backends.main, iter(items), session, out, keep
        self.limit = slots * IN_FLIGHT_PER_SLOT
        for pane in session.panes if session is not None else ():
            backends.alias(pane.backend)
        self.runner = SessionRunner(backends)
        self.runner.events.ended.connect(self._ended)
        self.in_flight: dict[int, RunItem] = {}  # id() of a run's PaneResult -> its item
        self.records: list[tuple[RunItem, dict]] = []
        self.exhausted = False
        self.started = time.perf_counter()
        self.progress = tqdm(total=total, unit="req", file=sys.stderr, disable=not sys.stderr.isatty(),
                             dynamic_ncols=True)
        self.backend.subscribe(self.runner.feed)

    def execute(self, report_path: str | None, ctrl_c: Interrupt) -> int:
        """Run to the end, or until Ctrl+C: then cancel, write the cancelled runs as they end (until a second
        Ctrl+C or DRAIN_TIMEOUT_S) and return EXIT_INTERRUPTED."""
        try:
            while not ctrl_c.requested:
                self._top_up()
                self._next_rounds()
                if not self.in_flight and not self.tool_waits and self.exhausted:
                    break
                self.runner.wait(timeout=0.05 if self.tool_waits else 0.2)
                self.runner.pump()
            if ctrl_c.requested:
                self.runner.cancel_all()
                if self.mcp is not None:
                    self.mcp.cancel()
                    self._next_rounds(submit=False)
                self._drain(ctrl_c)
        finally:
            self.progress.close()
        if report_path:
            seconds = time.perf_counter() - self.started
            clusters = self.stability(self.records, self.session) if self.stability is not None else None
            write_report(report_path, self.records, self.session, seconds, clusters)
        return EXIT_INTERRUPTED if ctrl_c.requested else 0

    def _drain(self, ctrl_c: Interrupt, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """After Ctrl+C: every submitted request ends (cancelled) and is written; nothing new is submitted. A
        backend that never answers the cancel leaves its requests unwritten after `timeout_s` (or a second
        Ctrl+C), never a hang."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight and time.monotonic() < deadline and not ctrl_c.hurried:
            self.runner.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            self.runner.pump()

    def _top_up(self) -> None:
        while not self.exhausted and len(self.in_flight) < self.limit:
            item = next(self.items, None)
            if item is None:
                self.exhausted = True
            elif item.mcp and self.mcp is None:
                self._write(item, None, f"line {item.line}: \"mcp\" needs the servers: run with --mcp MCP.json "
                                        "--allow-mcp")
            elif item.request is None:
                print(f"chorus run: {item.error}", file=sys.stderr)
                self._write(item, None)
            elif self.session is not None:
                pane = self.session.panes[item.line - 1]
                self.runner.run(pane)
                self.in_flight[id(pane.result)] = item
            else:
                if self.mcp is not None:
                    item = self.mcp.prepare(item)
                    if item.request is None:
                        self._write(item, None)
                        continue
                self._submit(item, item.request)

    def _submit(self, item: RunItem, request) -> None:
        result = PaneResult()
        try:
            self.runner.submit(request, MAIN, result)
        except ValueError as exc:  # media the model cannot take: this line's error, the rest still run
            failed = dataclasses.replace(item, error=f"line {item.line}: {exc}")
            print(f"chorus run: {failed.error}", file=sys.stderr)
            self._write(failed, None)
            return
        self.in_flight[id(result)] = item

    def _ended(self, _pane, result: PaneResult) -> None:
        item = self.in_flight.pop(id(result), None)
        if item is None:
            return
        if self.mcp is not None and self.mcp.dispatch(item, result):  # its calls go out; the slot is free
            self.tool_waits[item.line] = (item, result)
        else:
            self._write(item, result)

    def _next_rounds(self, submit: bool = True) -> None:
        """Lines whose tool calls have all been answered: their next round (or, after Ctrl+C, their result)."""
        if self.mcp is None:
            return
        for line, messages in self.mcp.ready():
            item, result = self.tool_waits.pop(line)
            if submit:
                self._submit(item, next_request(item.request, messages))
            else:
                self._write(item, result)

    def _write(self, item: RunItem, result: PaneResult | None, error: str | None = None) -> None:
        if error:
            item = dataclasses.replace(item, error=error)
            print(f"chorus run: {error}", file=sys.stderr)
        record = result_record(item, result)
        if self.mcp is not None:
            record = self.mcp.record(item, record)
        self.out.write(escape_surrogates(json.dumps(record, ensure_ascii=False)) + "\n")
        self.out.flush()
        if self.keep:
            self.records.append((item, record))
        stats = self.backend.stats()
        self.progress.set_postfix(running=len(self.in_flight),
                                  tok_s=f"{stats.decode_tps:.0f}" if stats.decode_tps else "–", refresh=False)
        self.progress.update(1)
