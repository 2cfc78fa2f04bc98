"""`javascript`, `python` and `ruby` assertions, transforms and custom providers, with promptfoo 0.123.1's
semantics (javascript.ts, python.ts, ruby.ts, transform.ts, evaluator.ts): JavaScript in an embedded V8
(js_code.py), Python and Ruby in worker processes (py_code.py, rb_code.py), each with a time limit per call.

Verdicts (script_verdicts.py): a boolean passes as it is; a number is the score and passes when > 0, or ≥ the
assertion's `threshold`; a GradingResult ({pass, score, reason}) is taken as it is; `not-` flips the verdict. Code
that throws fails the check with promptfoo's reason ("Custom function threw error: …", "Python code execution
failed: …", naming the file and line); code that runs past its time or memory limit, or a transform that fails,
makes the cell an ERROR (CheckError), as does Ruby code where no `ruby` is installed.
A `CodeRunner` exists only once the user has agreed to run the config's code: without one, nothing here runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from app.evaluate import js_code, tool_callbacks
from app.evaluate.check_types import CheckError
from app.evaluate.file_refs import split_file
from app.evaluate.js_code import CodeLimit
from app.evaluate.py_code import TIME_LIMIT_S as PY_TIME_LIMIT_S
from app.evaluate.py_code import PythonPool
from app.evaluate.rb_code import NoRuby, RubyPool
from app.evaluate.script_verdicts import (
    SCRIPT_LANGUAGES,
    failed,
    inline_script,
    is_grading,
    located,
    object_result,
    primitive,
    script_result,
)
from app.session.evaluation import Assertion, GradingResult

CODE_TYPES = frozenset({"javascript", "python", "ruby"})
JS_SUFFIXES = (".js", ".cjs", ".mjs", ".ts")
SCRIPT_SUFFIXES = (*JS_SUFFIXES, ".py", ".rb")


def is_script_ref(value) -> bool:
    return (isinstance(value, str) and value.startswith("file://")
            and split_file(value, None)[0].suffix in SCRIPT_SUFFIXES)


_JS_PROVIDER = re.compile(r"\.(js|cjs|mjs)(:\w+)?$")


def code_embedder(provider) -> str | None:
    """The custom JavaScript provider (`./embed.js`, `file://embed.js[:Class]`) an assertion's `provider` names,
    as promptfoo takes one for `similar`'s embeddings; None for any other provider."""
    provider_id = provider.get("id") if isinstance(provider, dict) else provider
    if not isinstance(provider_id, str):
        return None
    name = provider_id[7:] if provider_id.startswith("file://") else provider_id
    return provider_id if "://" not in name and _JS_PROVIDER.search(name) else None


def _as_file_ref(provider_id: str) -> str:
    """A custom provider's id as a file:// reference (promptfoo takes `./embed.js` and `file://embed.js` alike)."""
    return provider_id if provider_id.startswith("file://") else f"file://{provider_id}"


def time_limit() -> float | None:
    """$CHORUS_CODE_TIMEOUT (seconds), when set: the time limit of every JavaScript and Python call."""
    try:
        return float(os.environ["CHORUS_CODE_TIMEOUT"])
    except (KeyError, ValueError):
        return None


class CodeRunner:
    """Runs a config's code once the user allowed it. Thread-safe; `close` ends the Python workers."""

    def __init__(self, base_dir: Path | None = None, js_time_limit: float | None = None,
                 python: PythonPool | None = None) -> None:
        limit = time_limit()
        self.base_dir = base_dir
        self.js_time_limit = js_time_limit or limit or js_code.TIME_LIMIT_S
        self.python = python or PythonPool(time_limit=limit or PY_TIME_LIMIT_S)
        self.ruby = RubyPool(time_limit=self.python.time_limit)

    def close(self) -> None:
        self.python.close()
        self.ruby.close()

    # --- calling code ---------------------------------------------------------------------------------------
    def _pool(self, path: Path):
        """The worker pool that runs this file: Ruby for .rb, else Python."""
        return self.ruby if path.suffix == ".rb" else self.python

    def _script(self, ref_or_code: str, default_function: str, args: list, inline: bool, ruby: bool = False):
        if inline:
            return (self.ruby if ruby else self.python).call_code(ref_or_code, default_function, args)
        path, name = split_file(ref_or_code, self.base_dir)
        return self._pool(path).call_file(path, name or default_function, args)

    def _javascript(self, ref_or_code: str, params: tuple[str, ...], args: list, inline_body, kind: str):
        if ref_or_code.startswith("file://"):
            path, name = split_file(ref_or_code, self.base_dir)
            return js_code.call(None, path, name, params, args, self.js_time_limit, kind)
        return js_code.call(inline_body(ref_or_code), None, None, params, args, self.js_time_limit, kind)

    # --- assertions --------------------------------------------------------------------------------------------
    def assertion(self, assertion: Assertion, value, output, context: dict) -> GradingResult:
        """One javascript / python / ruby assertion (or not-…); `value` is rendered (a file:// reference is not)."""
        inverse = assertion.negated
        if not isinstance(value, str):
            raise CheckError(f"{assertion.base_type} assertion must have a string value")
        try:
            if assertion.base_type == "javascript":
                return self._javascript_assertion(assertion, value, output, context, inverse)
            return self._script_assertion(assertion, value, output, context, inverse)
        except CodeLimit as exc:
            raise _limited(f"{assertion.type} check", exc) from None

    def _javascript_assertion(self, a: Assertion, value: str, output, context: dict, inverse: bool):
        shown = value.rstrip()
        try:
            result = self._javascript(shown, ("output", "context", "process"), [output, context],
                                      js_code.assertion_body, "assertion")
        except (OSError, UnicodeError) as exc:
            return failed(a, f"Custom function threw error: {exc}", shown)
        if result.error is not None and shown.startswith("file://"):
            raise CheckError(result.error)  # promptfoo: a module that throws makes the cell an ERROR
        if result.error is not None:
            return failed(a, f"Custom function threw error: {result.error}\nStack Trace: {result.stack}", shown)
        typed = result.value
        if typed.type == "boolean" or (typed.type == "number" and typed.value is not None):
            return primitive(a, typed.value, inverse, "Custom function", shown)
        if typed.grading:
            return object_result(a, typed.value, inverse, "Custom function")
        got = "undefined" if typed.undefined else json.dumps(typed.value, ensure_ascii=False, separators=(",", ":"))
        message = (f"Custom function must return a boolean, number, or GradingResult object. Got type {typed.type}: "
                   f"{got}")
        return failed(a, f"Custom function threw error: {message}\nStack Trace: Error: {message}", shown)

    def _script_assertion(self, a: Assertion, value: str, output, context: dict, inverse: bool):
        """A python or ruby assertion (promptfoo's handlePython / handleRuby)."""
        language = SCRIPT_LANGUAGES[a.base_type]
        inline = not value.startswith("file://")
        code = inline_script(value, language) if inline else value
        result = self._script(code, "main" if inline else "get_assert", [output, context], inline,
                              ruby=language.name == "Ruby")
        if result.error is not None:  # promptfoo's reason, then where it failed and the traceback
            prefix = f"{language.code} execution failed: " if inline else ""
            return failed(a, f"{prefix}Error running {language.name} script: {result.error}\nStack Trace: Error: "
                             f"{result.error}\n    at {result.where or 'an unknown line'}\n{result.trace}", None)
        try:
            return script_result(a, result.value, inverse, a.value if isinstance(a.value, str) else None, language)
        except ValueError as exc:
            return failed(a, f"{language.code} execution failed: {exc}" if inline else str(exc), None)

    def script_value(self, assertion: Assertion, ref: str, output, context: dict):
        """A `file://x.js` / `file://x.py` value of another assertion type: what the script returns is the
        expected value (promptfoo: not a boolean, function or GradingResult). Raises CheckError."""
        path, name = split_file(ref, self.base_dir)
        try:
            if path.suffix in (".py", ".rb"):
                result = self._pool(path).call_file(path, name or "get_assert", [output, context])
                failed, value, kind = located(result), result.value, None
            else:
                found = js_code.call(None, path, name, (), [output, context], self.js_time_limit)
                failed = found.error
                value, kind = (None, None) if failed else (found.value.value, found.value.type)
        except CodeLimit as exc:
            raise _limited(f"{assertion.type} value {ref}", exc) from None
        if failed is not None:
            raise CheckError(f"{ref}: {failed}")
        what = ("a function" if kind == "function" else "a boolean" if isinstance(value, bool) else
                "a GradingResult" if isinstance(value, dict) and "pass" in value else None)
        if what:
            raise CheckError(f'Script for "{assertion.type}" assertion returned {what}. Only javascript/python/ruby '
                             "assertion types can return " + {"a function": "functions", "a boolean": "boolean values",
                                                              "a GradingResult": "GradingResult objects"}[what]
                             + ". For other assertion types, return the expected value (string, number, array, "
                             "or object).")
        return value

    def scoring(self, ref: str, named_scores: dict, context: dict) -> dict:
        """An `assertScoringFunction`'s verdict: the function (a .js module's export, default `func` or the
        default export; a .py file's, default `func`) called with the test's named scores and {threshold,
        componentResults, tokensUsed}; a GradingResult {pass, score, reason[, namedScores]}. Raises ValueError
        with what went wrong (promptfoo: "Scoring function error: …")."""
        path, name = split_file(ref, self.base_dir)
        # JavaScript numbers, as promptfoo hands them to Python through JSON: a whole score is 1, not 1.0
        named_scores = {k: int(v) if float(v).is_integer() else v for k, v in named_scores.items()}
        try:
            if path.suffix == ".py":
                result = self.python.call_file(path, name or "func", [named_scores, context])
                failed, value = located(result), result.value
            else:
                found = js_code.call(None, path, name or "func", (), [named_scores, context], self.js_time_limit)
                failed = found.error
                value = None if failed is not None else found.value.value
        except (CodeLimit, OSError) as exc:
            raise ValueError(str(exc)) from None
        if failed is not None:
            raise ValueError(failed)
        if not is_grading(value):
            raise ValueError("assertion scoring function must return a GradingResult")
        return value

    # --- custom providers ----------------------------------------------------------------------------------
    def provider(self, variant, prompt: str, variables: dict) -> tuple[str, tuple[int, int]]:
        """A custom provider's output for the rendered prompt and its (prompt, completion) tokens from the
        `tokenUsage` it gives (promptfoo: a .py or .rb file's `call_api(prompt, options, context)`, a .js module's
        class `callApi(prompt, context)` or function, an `exec:` command given the prompt, options and context as
        arguments); raises CheckError when it fails."""
        path = variant.target.path
        options = {"id": variant.provider_id, "config": variant.config}
        context = {"vars": variables, "prompt": {"raw": prompt, "label": variant.prompt.label}}
        try:
            if path.startswith("exec:"):
                return self._exec(path[5:], [prompt, json.dumps(options), json.dumps(context)]), (0, 0)
            file, function = split_file(f"file://{path}", None)
            if file.suffix in (".py", ".rb"):
                result = self._pool(file).call_file(file, function or "call_api", [prompt, options, context])
                failed, value = located(result), result.value
            else:
                result = js_code.call(None, file, function, (), [prompt, context], self.js_time_limit, "provider",
                                      options)
                failed = result.error
                value = None if failed is not None else result.value.value
        except CodeLimit as exc:
            raise _limited(f"provider {variant.label}", exc) from None
        if failed is not None:
            raise CheckError(f"provider {variant.label} failed: {failed}")
        if isinstance(value, dict) and value.get("error"):
            raise CheckError(f"provider {variant.label}: {value['error']}")
        if not isinstance(value, dict) or "output" not in value:
            raise CheckError(f"provider {variant.label} must return an object with an `output`, got {value!r}"[:400])
        output, usage = value["output"], value.get("tokenUsage")
        usage = usage if isinstance(usage, dict) else {}
        tokens = tuple(n if isinstance(n, int) and not isinstance(n, bool) else 0
                       for n in (usage.get("prompt"), usage.get("completion")))
        return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False), tokens

    def embed(self, provider_id: str, texts: list[str]) -> list[list[float]]:
        """Vectors of `texts` from a custom JavaScript provider's `callEmbeddingApi(text)` (promptfoo's embedding
        provider for `similar`), one call per text; raises ValueError with the provider's error (which fails the
        check, as in promptfoo)."""
        path, function = split_file(_as_file_ref(provider_id), self.base_dir)
        vectors = []
        for text in texts:
            try:
                result = js_code.call(None, path, function, (), [text], self.js_time_limit, "provider",
                                      {"id": provider_id, "config": {}}, method="callEmbeddingApi")
            except CodeLimit as exc:
                raise ValueError(f"embedding provider {path.name}: {exc}") from None
            if result.error is not None:
                raise ValueError(f"embedding provider {path.name} failed: {result.error}")
            value = result.value.value
            if isinstance(value, dict) and value.get("error"):
                raise ValueError(f"Error fetching embeddings: {value['error']}")
            vector = value.get("embedding") if isinstance(value, dict) else None
            if not isinstance(vector, list) or not vector or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
                raise ValueError("Embedding not found")
            vectors.append([float(x) for x in vector])
        return vectors

    def _exec(self, command: str, args: list[str]) -> str:
        try:
            done = subprocess.run([*shlex.split(command), *args], cwd=self.base_dir, capture_output=True, text=True,
                                  timeout=self.python.time_limit, check=False)  # noqa: S603 - the user agreed
        except subprocess.TimeoutExpired:
            raise CodeLimit(f"the command ran past its time limit ({self.python.time_limit:g} s)") from None
        except OSError as exc:
            raise CheckError(f"cannot run {command!r}: {exc}") from None
        if done.returncode != 0 or (done.stderr.strip() and not done.stdout.strip()):  # as promptfoo's exec:
            raise CheckError(f"{command!r} exited with {done.returncode}: {done.stderr.strip()[-400:]}")
        return done.stdout.strip()

    # --- transforms -------------------------------------------------------------------------------------------
    def transform(self, code: str, value, context: dict, input_name: str = "output"):
        """promptfoo's transform(): inline JavaScript over `output` (or `vars`), or a file:// .js / .py function
        (Python: `get_transform` by default). Raises CheckError when it fails or returns nothing."""
        label = "[file transform]" if code.startswith("file://") else \
            f"[inline transform]: {' '.join(code.split())[:80]}"
        try:
            if code.startswith("file://") and split_file(code, None)[0].suffix == ".py":
                result = self._script(code, "get_transform", [value, context], inline=False)
                failed = located(result)
                out = result.value
            elif code.startswith("file://") and split_file(code, None)[0].suffix not in JS_SUFFIXES:
                raise CheckError(f"Unsupported transform file format: {code}")
            else:
                result = self._javascript(code, (input_name, "context", "process"), [value, context],
                                          js_code.transform_body, "transform")
                failed = result.error
                out = None if result.error is not None or result.value.undefined else result.value.value
        except (CodeLimit, OSError) as exc:
            raise CheckError(f"Transform failed ({label}): {exc}") from None
        if failed is not None:
            raise CheckError(f"Transform failed ({label}): {failed}")
        if out is None:
            raise CheckError(f"Transform function did not return a value\n\n{label}")
        return out


def scoring_function_problem(ref: str, base: Path | None) -> str | None:
    """What is wrong with an `assertScoringFunction` as written (promptfoo loads a file:// .js or .py function),
    or None."""
    if not ref.startswith("file://"):
        return f"an assertScoringFunction is a file://path.js or file://path.py[:function], not {ref[:80]!r}"
    path, _name = split_file(ref, base)
    if path.suffix not in (".js", ".cjs", ".mjs", ".py"):
        why = "TypeScript, which Chorus does not run: write it in JavaScript" if path.suffix in (
            ".ts", ".cts", ".mts") else "not a JavaScript or Python file"
        return f"the scoring function {path.name!r} is {why}"
    return None if path.is_file() else f"no such file: {path}"


def _limited(what: str, exc: CodeLimit) -> CheckError:
    """The cell's error when code ran past its limit, or could not start ("provider x.rb needs Ruby: …")."""
    return CheckError(f"{what} {exc}" if isinstance(exc, NoRuby) else f"{what}: {exc}")


def transform_problem(script, base: Path | None) -> str | None:
    """What is wrong with a transform's file:// script as written, or None: promptfoo runs JavaScript and Python
    transforms (a Ruby one is "Unsupported transform file format")."""
    if not isinstance(script, str) or not script.startswith("file://"):
        return None
    path = split_file(script, base)[0]
    if path.suffix == ".rb":
        return (f"the transform {path.name!r} is Ruby, which promptfoo does not run as a transform: use "
                "JavaScript or Python")
    return None if path.is_file() else f"no such file: {path}"


def _describe(what: str, script: str, base: Path | None) -> str:
    if script.startswith("file://"):
        path, name = split_file(script, base)
        return f"{what}: the file {path}" + (f" (function {name})" if name else "")
    first = " ".join(script.split())
    return f"{what} (inline): {first[:70]}{'…' if len(first) > 70 else ''}"


def code_uses(cases, base: Path | None = None, variants=(), filters=None) -> list[str]:
    """One line per `exec:` prompt, custom provider, check, transform or file in these variants and test cases
    that runs the user's code (deduplicated, in order): what `eval` names when --allow-code is missing, and what the
    window asks about."""
    found: list[str] = []
    for variant in variants:
        prompt = variant.prompt
        named = "" if prompt.label == prompt.exec else f" {prompt.label[:60]}"
        if prompt.exec is not None and (line := f"prompt{named}: the command {prompt.exec}") not in found:
            found.append(line)
        if variant.target.kind == "code":
            path = variant.target.path
            line = (f"provider {variant.label}: the command {path[5:]}" if path.startswith("exec:") else
                    _describe(f"provider {variant.label}", f"file://{path}", None))
            if line not in found:
                found.append(line)
        if variant.transform:
            line = _describe(f"provider {variant.label} transform", variant.transform, base)
            if line not in found:
                found.append(line)
        found += [line for line in tool_callbacks.uses(variant.label, variant.callbacks, base) if line not in found]

    def add(line: str) -> None:
        if line not in found:
            found.append(line)

    def visit(assertions) -> None:
        for a in assertions:
            if a.base_type in CODE_TYPES and isinstance(a.value, str):
                add(_describe(f"{a.type} assertion", a.value, base))
            elif is_script_ref(a.value):
                add(_describe(f"{a.type} assertion's value", a.value, base))
            if isinstance(a.transform, str):
                add(_describe(f"{a.type} assertion transform", a.transform, base))
            if isinstance(a.context_transform, str):
                add(_describe(f"{a.type} assertion contextTransform", a.context_transform, base))
            if a.base_type.split(":")[0] == "similar" and (embedder := code_embedder(a.provider)):
                add(_describe(f"{a.type} assertion's embedder", _as_file_ref(embedder), base))
            visit(a.assertions or [])

    for name, path in (filters or {}).items():  # nunjucksFilters (nunjucks_filters.py)
        add(f"nunjucks filter {name}: the file {path}")
    for case in cases:
        visit(case.assertions)
        for what, script in (("test transform", case.options.transform),
                             ("transformVars", case.options.transform_vars),
                             ("assertScoringFunction", case.assert_scoring_function)):
            if isinstance(script, str):
                add(_describe(what, script, base))
    return found
