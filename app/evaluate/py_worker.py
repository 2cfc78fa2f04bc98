"""A worker process for user Python (assertions, transforms): reads one JSON request per line on stdin, answers
one JSON line on stdout. Standard library only, so any Python can run it (`python -c` of this file's text).

A request is {"path": file, "function": name, "args": [...]} (promptfoo's wrapper.py: the module is loaded from its
file, its directory put on sys.path, the function called, awaited when it is a coroutine function), or {"code":
text, "function": "main", "args": [...]} for inline code. The answer is {"ok": value} or {"error": message,
"where": "file:line", "trace": text}. What the user's code prints goes to stderr, so it cannot break the protocol.
"""

import asyncio
import importlib.util
import inspect
import json
import os
import sys
import traceback


def _call(request):
    if "code" in request:
        module = {"__name__": "inline_check"}
        exec(compile(request["code"], "<inline python>", "exec"), module)  # noqa: S102 - the user agreed to run it
        function = module[request["function"]]
    else:
        path = request["path"]
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(os.path.basename(path).rsplit(".", 1)[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        name = request["function"]
        if "." in name:
            owner, method = name.split(".", 1)
            function = getattr(getattr(module, owner), method)
        else:
            function = getattr(module, name)
    if inspect.iscoroutinefunction(function):
        return asyncio.run(function(*request["args"]))
    return function(*request["args"])


def _where(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if f.filename != "<string>"]
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    if not user:
        return ""
    if user[-1].filename == "<inline python>":  # the check's own lines follow a 3-line `def main` header
        return f"the inline check, line {max(1, user[-1].lineno - 3)}"
    return f"{user[-1].filename}:{user[-1].lineno}"


def main():
    out = sys.stdout
    sys.stdout = sys.stderr  # the user's prints
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = {"ok": _call(request)}
            text = json.dumps(answer, ensure_ascii=False, default=str)
        except BaseException as exc:  # noqa: BLE001 - every failure of the user's code is an answer
            if isinstance(exc, KeyboardInterrupt):
                raise
            text = json.dumps({"error": f"{type(exc).__name__}: {exc}", "where": _where(exc),
                               "trace": "".join(traceback.format_exception(exc))}, default=str)
        out.write(text + "\n")
        out.flush()


if __name__ == "__main__":
    main()
