"""User Ruby (`ruby` assertions, `file://x.rb` providers and script values) run as promptfoo 0.123.1 runs it
(src/ruby/wrapper.rb, rubyUtils.ts, src/assertions/ruby.ts): by the system's `ruby` in a separate process, never in
Chorus's own; here a small pool of long-lived `rb_worker.rb` processes (py_code.WorkerPool, as Python's), with a
time limit per call. The Ruby is $PROMPTFOO_RUBY if set (as in promptfoo), else `ruby` from PATH; without one, every
Ruby call fails with one clear message (the cell ends as an error, the rest of the run goes on).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from app.evaluate.js_code import CodeLimit
from app.evaluate.py_code import WorkerPool

_WORKER = Path(__file__).with_name("rb_worker.rb")


class NoRuby(CodeLimit):
    """No Ruby to run the code with: "needs Ruby: …", after what needed it."""


def ruby_executable() -> str | None:
    return os.environ.get("PROMPTFOO_RUBY") or shutil.which("ruby")


class RubyPool(WorkerPool):
    language = "Ruby"

    def command(self) -> list[str]:
        ruby = ruby_executable()
        if ruby is None:
            raise NoRuby("needs Ruby: no `ruby` on PATH (install Ruby, or set PROMPTFOO_RUBY to one)")
        return [ruby, "-e", _WORKER.read_text(encoding="utf-8")]

