"""User JavaScript (assertions, transforms) run as promptfoo runs it, in an embedded V8 (mini-racer), never Node.

Calls share one V8 context, as promptfoo's checks share one Node realm: making a context costs several milliseconds
of CPU (a V8 isolate and its threads), which on a busy machine comes out of the model's decoding, where reusing one
costs a fraction of a millisecond. Each call has a time limit, and the context a hard memory limit; a call that runs
past either ends that call only, and the context is thrown away and a fresh one serves the next. Inline code becomes
`new Function(<input>, 'context', 'process', body)` with promptfoo's body rules (javascript.ts `buildFunctionBody`,
transform.ts `getInlineTransformFunction`); a `file://x.js[:name]` is read as a CommonJS module (`module.exports`,
also `export default` / `export function` in a simple ES module) and called as promptfoo's `loadFromJavaScriptFile`
/ `getJavascriptTransformFunction` do. `require` is not there (no Node): a module that needs it says so. The value
crosses back as JSON: `{"ok": value}` or `{"error": message, "stack": …}`.
"""

from __future__ import annotations

import contextlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

TIME_LIMIT_S = 5.0
# V8 runs on this one thread: mini-racer's time limit refuses to work in a thread whose asyncio loop runs (the
# window's), and two threads making the first contexts at once abort the process (V8's start-up is not shared).
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="javascript")
MEMORY_LIMIT = 256 * 1024 * 1024


class CodeLimit(RuntimeError):
    """The code ran past its time or memory limit (an ERROR cell, not a verdict)."""


@dataclass(frozen=True)
class JsResult:
    value: object = None
    error: str | None = None  # the message of what the code threw
    stack: str = ""


_PRELUDE = r"""
var process = {env: {}, mainModule: {require: function (name) {
  throw new Error("require('" + name + "') is not available: Chorus runs JavaScript checks without Node"); }}};
var require = process.mainModule.require;
function __done(v) { return JSON.stringify({ok: v === undefined ? null : v, undef: v === undefined, type: typeof v,
  grading: __isGrading(v)}); }
function __isGrading(r) { return typeof r === "object" && r !== null && typeof r.pass === "boolean" &&
  typeof r.score === "number" && typeof r.reason === "string"; }
function __fail(e) { return JSON.stringify({error: (e && e.message !== undefined) ? String(e.message) : String(e),
  stack: (e && e.stack) ? String(e.stack) : ""}); }
"""


def _single_line_body(code: str) -> str:
    """promptfoo's buildFunctionBody for a one-line assertion: `return` before the expression (after the last
    top-level `;` when it starts with const/let/var)."""
    trimmed = re.sub(r";+\s*$", "", code.strip())
    if re.match(r"^(const|let|var)\s", trimmed):
        last, quote = -1, None
        for i, char in enumerate(trimmed):
            if quote:
                if char == quote and trimmed[i - 1] != "\\":
                    quote = None
            elif char in "'\"`":
                quote = char
            elif char == ";":
                last = i
        if last != -1 and trimmed[last + 1:].strip():
            return f"{trimmed[:last + 1]} return {trimmed[last + 1:].strip()}"
        return trimmed
    return f"return {trimmed}"


def assertion_body(code: str) -> str:
    code = code.rstrip()
    return code if "\n" in code else _single_line_body(code)


def transform_body(code: str) -> str:
    return code if "\n" in code else f"return {code}"


def _module_source(path: Path) -> str:
    """A file's code as a CommonJS function body: ES `export default` / `export function` become exports."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^export\s+default\s+", "module.exports.default = ", text, flags=re.M)
    names = re.findall(r"^export\s+(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)", text, flags=re.M)
    names += re.findall(r"^export\s+(?:const|let|var)\s+([A-Za-z_$][\w$]*)", text, flags=re.M)
    text = re.sub(r"^export\s+(?=(async\s+)?function|const|let|var)", "", text, flags=re.M)
    return text + "".join(f"\nmodule.exports.{n} = {n};" for n in names)


class _Context:
    """The V8 context the calls share (used on the _POOL thread only)."""

    current = None

    @classmethod
    def get(cls):
        if cls.current is None:
            from py_mini_racer import MiniRacer

            context = MiniRacer()
            context.set_hard_memory_limit(MEMORY_LIMIT)
            cls.current = context
        return cls.current

    @classmethod
    def discard(cls) -> None:
        """Close the context after a call ran past its limit. V8 reports the cancelled call afterwards, through
        the context's event loop: one trivial call first, queued behind that report, so the report does not
        arrive at a closed loop (mini-racer then prints "Event loop is closed" on stderr)."""
        context, cls.current = cls.current, None
        if context is None:
            return
        with contextlib.suppress(Exception):
            context.eval("0", timeout_sec=1.0)
        context.close()


def _run(script: str, time_limit: float) -> JsResult:
    from py_mini_racer import JSEvalException, JSOOMException, JSPromiseError, JSTimeoutException

    ctx = _Context.get()
    try:
        promise = ctx.eval(_PRELUDE + script, timeout_sec=time_limit)
        text = promise.get(timeout=time_limit)
        if ctx.was_hard_memory_limit_reached():
            raise CodeLimit(f"the JavaScript ran past its memory limit ({MEMORY_LIMIT // 2**20} MB)")
    except (JSTimeoutException, TimeoutError):
        _Context.discard()
        raise CodeLimit(f"the JavaScript ran past its time limit ({time_limit:g} s)") from None
    except JSOOMException:
        _Context.discard()
        raise CodeLimit(f"the JavaScript ran past its memory limit ({MEMORY_LIMIT // 2**20} MB)") from None
    except CodeLimit:
        _Context.discard()
        raise
    except (JSEvalException, JSPromiseError) as exc:  # it does not parse
        return JsResult(error=str(exc))
    data = json.loads(text)
    if "error" in data:
        return JsResult(error=data["error"], stack=data.get("stack", ""))
    return JsResult(value=_Typed(data["ok"], data["type"], data["grading"], data["undef"]))


@dataclass(frozen=True)
class _Typed:
    """A JavaScript value back in Python, with its `typeof` and whether it is a GradingResult."""

    value: object
    type: str
    grading: bool
    undefined: bool


def call(source: str | None, path: Path | None, function: str | None, params: tuple[str, ...], args: list,
         time_limit: float = TIME_LIMIT_S, kind: str = "assertion", options: dict | None = None,
         method: str = "callApi") -> JsResult:
    """Run inline `source` (a function body over `params`) or the module at `path` (its `function` export, else
    the module itself, else its default export) on `args`; the awaited result, typed (`.value` is a _Typed).
    `kind="provider"`: an export that is a class with `callApi` is made with `options` ({id, config}) and its
    `callApi(...args)` called (or `method`: `callEmbeddingApi` for an embedder), as promptfoo loads a custom
    JavaScript provider."""
    encoded = json.dumps(args, ensure_ascii=False)
    if path is None:
        fn = f"new Function({', '.join(json.dumps(p) for p in params)}, {json.dumps(source)})"
        call_expr = f"const __f = {fn}; const __a = {encoded}; __a.push(process);"
    else:
        where = json.dumps(str(path))
        name = json.dumps(function) if function else "null"
        what = "Transform" if kind == "transform" else "Assertion malformed:"
        call_expr = (
            f"const module = {{exports: {{}}}}; const exports = module.exports;\n"
            f"(function (module, exports, require) {{\n{_module_source(path)}\n}})(module, module.exports, require);\n"
            f"const __m = module.exports, __n = {name}; let __f;\n"
            f"if (__n && typeof __m[__n] === 'function') __f = __m[__n];\n"
            f"else if (typeof __m === 'function') __f = __m;\n"
            f"else if (__m.default && typeof __m.default === 'function') __f = __m.default;\n"
            f"else throw new Error({json.dumps(what)} + ' ' + {where} + "
            f"' must export a function or have a default export as a function');\n"
            f"const __a = {encoded};\n"
            f"if (__f.prototype && typeof __f.prototype.{method} === 'function') {{\n"
            f"  const __i = new __f({json.dumps(options or {}, ensure_ascii=False)});\n"
            f"  return __done(await __i.{method}(...__a)); }}"
            + ("" if method == "callApi" else f"\nthrow new Error('Provider must implement {method}');"))
    script = (f"(async () => {{ try {{ {call_expr}\n return __done(await __f(...__a)); }}"
              " catch (e) { return __fail(e); } })()")
    return _POOL.submit(_run, script, time_limit).result()
