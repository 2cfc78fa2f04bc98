"""`python -m app eval CONFIG`: a promptfoo config's test cases × variants, generated and judged headless.

Every backend the run needs (the variants', the judges') is opened before anything runs, each once: a local GGUF is
one engine whoever uses it, so `--judge local` shares the variants' engine. `similar` assertions open one embedder
(--embedder, app/backends/embedding.py) beside them, as does --repeat N (≥ 2), whose answers are then clustered by
meaning after the summary. Progress goes to stderr, a summary table to stdout (app/cli/eval_text.py: a variant
named `[provider] prompt label`, cut to the terminal's width), `-o` files (or the config's `outputPath`) are
written at the end, also after Ctrl+C (counted by a handler, app/cli/interrupt.py: the first cancels what runs, a
second stops waiting for it; unfinished cells are written as not run). Exit codes: 0 every cell passed (or the pass
rate reached $PROMPTFOO_PASS_RATE_THRESHOLD), 100 otherwise, 2 an unusable config, output path or backend, or a
config that runs code without --allow-code (one message on stderr naming what, nothing run), 1 outputs that
could not be written, 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from tqdm import tqdm

from app.backends import KeyStore, plain_http_warning
from app.backends.embedding import DEFAULT_EMBEDDER, EmbeddingError, open_embedder
from app.backends.openai_backend import SERVER_CONCURRENCY
from app.backends.registry import MAIN, BackendRegistry, BackendSpec
from app.cli.eval_text import plural, stability_report, summary
from app.cli.interrupt import Interrupt
from app.cli.mcp_cli import consent_refused
from app.engine import limits
from app.evaluate import ConfigError, Evaluation, check_paths, load_config, stats, write_outputs
from app.evaluate import routes as eval_routes
from app.evaluate.code_checks import CodeRunner
from app.evaluate.mcp_loop import EvalMcp, servers_of
from app.evaluate.outputs import replace_surrogates
from app.evaluate.routes import Routes, default_judge, needed_targets
from app.evaluate.runner import EvaluationRunner
from app.evaluate.similarity import CachedEmbed, uses_similar
from app.evaluate.variants import retarget
from app.mcp import McpHub
from app.models import default_model_path
from app.session import SessionRunner
from app.session.evaluation import BackendTarget, cell_change

EXIT_UNUSABLE, EXIT_WRITE_FAILED, EXIT_INTERRUPTED = 2, 1, 130
DRAIN_TIMEOUT_S = 60.0  # after Ctrl+C: a backend that never answers the cancel leaves its cells unwritten


class Unusable(ValueError):
    """Something given on the command line cannot be used; the message says what."""


def command_target(args) -> BackendTarget | None:
    """--model PATH / --server URL: the one backend every variant runs on; None: each where its config says."""
    if args.model:
        return BackendTarget(kind="local", path=str(Path(args.model)))
    if args.server:
        return BackendTarget(kind="server", url=args.server.rstrip("/"), model=args.server_model,
                             api_key_env="CHORUS_API_KEY")
    return None


def prepare(args) -> tuple[Evaluation, Path, list[str], int | None]:
    """The evaluation to run, its base directory, the output paths and the concurrency bound; raises
    ConfigError or Unusable before anything runs (Unusable naming every check, transform and file that would run
    code, when the config has some and --allow-code is not given)."""
    suite = load_config(args.config, judge_given=args.judge is not None,
                        any_provider=bool(args.model or args.server))  # every provider then runs on that one
    if suite.code and not getattr(args, "allow_code", False):
        raise Unusable("this config runs code; read it, then run again with --allow-code to allow it:\n"
                       + "\n".join(f"  - {line}" for line in suite.code))
    for note in suite.notes:
        print(f"chorus eval: warning: {note}", file=sys.stderr)
    outputs = args.output or suite.output_paths
    problems = check_paths(outputs) + [f"-o {p}: no such directory: {Path(p).parent}" for p in outputs
                                       if not Path(p).resolve().parent.is_dir()]
    if not limits.SLOTS.low <= args.slots <= limits.SLOTS.high:
        problems.append(f"--slots must be {limits.SLOTS.low:g} to {limits.SLOTS.high:g}, got {args.slots}")
    try:
        limits.CONTEXT_PER_SLOT.check("--context", args.context)
    except ValueError as exc:
        problems.append(str(exc))
    if args.repeat is not None and args.repeat < 1:
        problems.append(f"--repeat must be at least 1, got {args.repeat}")
    concurrency = args.max_concurrency if args.max_concurrency is not None else suite.max_concurrency
    if concurrency is not None and concurrency < 1:
        problems.append(f"--max-concurrency must be at least 1, got {concurrency}")
    if problems:
        raise Unusable("\n".join(problems))
    target = command_target(args)
    if target is not None:
        suite.variants = retarget(suite.variants, target)
    judge = args.judge or "local"
    if default_judge(judge).kind == "local" and judge != "local":
        judge = str(Path(judge).resolve())
    return suite.evaluation(repeat=args.repeat, judge=judge), suite.base_dir, outputs, concurrency


def open_backends(args, evaluation: Evaluation, base_dir: Path) -> tuple[BackendRegistry, Routes, SessionRunner]:
    """Every backend the evaluation needs, open in one BackendRegistry (the window's) and publishing to a new
    SessionRunner, and the routes that name each target's backend in it; raises like `prepare`, or the engine's /
    server's error, having closed what it opened. A local GGUF is opened once whoever uses it."""
    engine_settings = {"n_slots": args.slots, "n_ctx_per_slot": args.context,
                       **({"prompt_cache": False} if args.no_cache else {})}
    server_concurrency = max(SERVER_CONCURRENCY.low, min(args.slots, SERVER_CONCURRENCY.high))
    targets = needed_targets(evaluation, base_dir)
    unopenable = next((t for t in targets if t.kind not in ("local", "server")), None)
    if unopenable is not None:
        raise Unusable(f"{unopenable.name} is not a backend `eval` can open")
    main_model = Path(args.model) if args.model else None
    if main_model is None and any(t.kind == "local" and not t.path for t in targets):
        main_model = default_model_path()
    runner: SessionRunner | None = None
    registry = BackendRegistry(lambda event: runner.feed(event))  # the runner exists before anything is submitted
    runner = SessionRunner(registry)
    routes = Routes(lambda: str(main_model) if main_model else "", registry.specs)
    try:
        if main_model is not None and any(routes.find(t) == MAIN for t in targets):
            registry.open_main(BackendSpec(kind="local", path=str(main_model)), engine=engine_settings)
        for target, spec in routes.missing(targets):
            if spec.kind == "server":
                warning = plain_http_warning(target.url)
                if warning:
                    print(f"chorus eval: warning: {warning}", file=sys.stderr)
                spec = dataclasses.replace(spec, max_concurrency=server_concurrency)
            api_key = eval_routes.api_key(target, KeyStore()) if spec.kind == "server" else None
            routes.opened(target, registry.open(spec, api_key=api_key, engine=engine_settings).name)
    except BaseException:
        registry.close_all()
        raise
    return registry, routes, runner


def open_embed(args, evaluation: Evaluation):
    """The embedder `similar` and the stability report use (--embedder: "local" = the main model, a GGUF, or a
    server URL), or None when no test has a `similar` assertion and nothing repeats; raises EmbeddingError or the
    model loader's error."""
    if not uses_similar(evaluation) and evaluation.repeat < 2:
        return None
    spec = args.embedder or DEFAULT_EMBEDDER
    main_model = Path(args.model) if args.model else default_model_path()
    api_key = None
    if spec.startswith(("http://", "https://")):
        target = BackendTarget(kind="server", url=spec.rstrip("/"), api_key_env="CHORUS_API_KEY")
        api_key = eval_routes.api_key(target, KeyStore())
    embedder = open_embedder(spec, main_model, api_key=api_key)
    if embedder.weak:
        print(f"chorus eval: warning: meaning: {embedder.note}", file=sys.stderr)
    return embedder


def open_mcp(args, evaluation: Evaluation) -> EvalMcp | int | None:
    """The MCP servers the providers' config.mcp names, started and their tools offered (None: none named); an
    exit code when consent is missing (nothing starts then) or a server cannot start."""
    servers = servers_of(evaluation)
    if not servers.servers:
        return None
    if not getattr(args, "allow_mcp", False):
        return consent_refused(servers, "eval")
    hub = McpHub(servers)
    failed = [s for s in hub.start_all() if not s.running]
    try:
        if failed:
            raise ValueError("; ".join(s.message + (f" (stderr: {s.stderr_tail.splitlines()[-1]})" if s.stderr_tail
                                                    else "") for s in failed))
        found = EvalMcp(evaluation, hub)
        found.offer()
        return found
    except ValueError as exc:
        hub.close()
        print(f"chorus eval: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE


def run(evaluation: Evaluation, runner: SessionRunner, routes: Routes, base_dir: Path,
        concurrency: int | None, ctrl_c: Interrupt, embedder=None, mcp: EvalMcp | None = None, code=None) -> bool:
    """Run the evaluation to the end, or until Ctrl+C (then cancel and drain, until done, a second Ctrl+C or
    DRAIN_TIMEOUT_S); True when interrupted. `embedder` serves `similar`, `code` (a CodeRunner) code checks."""
    embed = CachedEmbed(embedder.embed) if embedder is not None else None
    evaluation_runner = EvaluationRunner(evaluation, runner, routes.name, base_dir, concurrency, embed=embed,
                                         code=code)
    evaluation_runner.mcp = mcp
    todo = {id(cell) for cell in evaluation.unfinished()}
    total = len(todo)
    progress = tqdm(total=total, unit="cell", file=sys.stderr, disable=not sys.stderr.isatty(),
                    dynamic_ncols=True)

    def changed(info) -> None:  # an event of a cell's: count it once it is final
        index = cell_change(info)
        cell = evaluation.cells[index] if index is not None else None
        if cell is not None and cell.finished and id(cell) in todo:
            todo.discard(id(cell))
            progress.update(1)

    evaluation.events.all.connect(changed)
    try:
        evaluation_runner.start()
        sizes = [plural(len(evaluation.variants), "variant"), plural(len(evaluation.cases), "test case")]
        sizes += [plural(evaluation.repeat, "repeat")] if evaluation.repeat > 1 else []
        print(f"chorus eval: {' × '.join(sizes)}: {plural(total, 'cell')} started", file=sys.stderr, flush=True)
        while not evaluation_runner.done and not ctrl_c.requested:
            runner.wait(0.05 if mcp is not None and mcp.waiting else 0.2)
            runner.pump()
            evaluation_runner.poll_tools()
        if ctrl_c.requested:
            if mcp is not None:
                mcp.cancel()
            evaluation_runner.cancel()
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while not evaluation_runner.done and not ctrl_c.hurried and time.monotonic() < deadline:
                runner.wait(0.2)
                runner.pump()
    finally:
        evaluation.events.all.disconnect(changed)
        progress.close()
    return ctrl_c.requested


def eval_command(args) -> int:
    with Interrupt() as ctrl_c:  # counted from the start: Ctrl+C while a model loads also exits 130
        try:
            evaluation, base_dir, outputs, concurrency = prepare(args)
            embedder = open_embed(args, evaluation)
        except (ConfigError, Unusable, EmbeddingError, ValueError, OSError, ConnectionError) as exc:
            print(f"chorus eval: {exc}", file=sys.stderr)
            return EXIT_INTERRUPTED if ctrl_c.requested else EXIT_UNUSABLE
        mcp = open_mcp(args, evaluation)  # before any model loads: no consent, or a server down, costs nothing
        if isinstance(mcp, int):
            if embedder is not None:
                embedder.close()
            return mcp
        try:
            backends, routes, runner = open_backends(args, evaluation, base_dir)
        except (ConfigError, Unusable, ValueError, OSError, ConnectionError) as exc:
            print(f"chorus eval: {exc}", file=sys.stderr)
            if embedder is not None:
                embedder.close()
            if mcp is not None:
                mcp.hub.close()
            return EXIT_INTERRUPTED if ctrl_c.requested else EXIT_UNUSABLE
        if ctrl_c.requested:
            if mcp is not None:
                mcp.hub.close()
            backends.close_all()
            if embedder is not None:
                embedder.close()
            return EXIT_INTERRUPTED  # while a model loaded: nothing ran, nothing to write
        code = CodeRunner(base_dir) if getattr(args, "allow_code", False) else None
        try:
            interrupted = run(evaluation, runner, routes, base_dir, concurrency, ctrl_c, embedder, mcp, code)
        except BaseException:
            if embedder is not None:
                embedder.close()
            raise
        finally:
            backends.close_all()
            if mcp is not None:
                mcp.hub.close()
            if code is not None:
                code.close()
        print(replace_surrogates(summary(evaluation)), flush=True)
        report = ""
        if embedder is not None:
            try:
                if evaluation.repeat > 1:
                    report = stability_report(evaluation, CachedEmbed(embedder.embed), embedder.name)
            except Exception as exc:  # noqa: BLE001 - the embedder's failure is reported; the run's results stand
                report = f"Stability: not measured: {exc}"
            finally:
                embedder.close()
            if report:
                print(replace_surrogates(report), flush=True)
        try:
            write_outputs(evaluation, outputs)
        except OSError as exc:
            print(f"chorus eval: cannot write the outputs: {exc}", file=sys.stderr)
            return EXIT_WRITE_FAILED
        for path in outputs:
            print(f"Wrote {path}", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted else stats.exit_code(evaluation)
