"""`exec:` prompts, as promptfoo runs them (src/prompts/processors/executable.ts): a command whose standard output
is the cell's prompt template.

A prompt `exec:./make-prompt.sh arg` (or a prompt file ending .sh, .bash, .exe, .bat, .cmd, .ps1, .rb, .pl, or any
file with an executable bit) names a command: its first word is a path joined to the config's directory (as
promptfoo's parsePathOrGlob joins it: `exec:python3 x.py` names ./python3, in promptfoo too), the rest are its
arguments, and one more argument is appended: the JSON `{"vars", "provider": {"id", "label"}, "config"}` of the
cell (config = the prompt's own). It runs in the config's directory with the prompt's `config.timeout` (ms;
60,000 by default). Its standard output, trimmed and without ANSI escapes, replaces the template (prefix and suffix
included), and is then rendered with the vars as any template is. A non-zero exit, a time-out, or text on standard
error with nothing on standard output makes the cell an ERROR. It runs only through a CodeRunner, which exists
once the user has agreed to run the config's code.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from app.evaluate.check_types import CheckError

EXECUTABLE_SUFFIXES = (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl")
TIMEOUT_MS = 60_000
_ANSI = re.compile(r"\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


def command(spec: str, base: Path) -> str:
    """The command line an `exec:` spec (or an executable prompt file) runs, its program joined to `base`."""
    parts = shlex.split(spec) or [spec]
    program = Path(parts[0]).expanduser()
    parts[0] = str(program if program.is_absolute() else (base / program))
    return shlex.join(parts)


def shown(spec: str, base: Path) -> str:
    """What promptfoo shows as an executable prompt's raw text: the script when it is a small text file."""
    program = Path(shlex.split(command(spec, base))[0])
    try:
        if program.is_file() and program.stat().st_size < 100 * 1024:
            text = program.read_text(encoding="utf-8")
            if not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text[:1000]):
                return text
    except (OSError, UnicodeError):
        pass
    return spec


def run(prompt, variables: dict, provider_id: str, provider_label: str, base: Path | None) -> str:
    """The command's output for one cell; raises CheckError naming the command when it fails."""
    context = {"vars": variables, "provider": {"id": provider_id, "label": provider_label}, "config": prompt.config}
    timeout = prompt.config.get("timeout") if isinstance(prompt.config.get("timeout"), (int, float)) else None
    args = [*shlex.split(prompt.exec), json.dumps(context, ensure_ascii=False, separators=(",", ":"))]
    try:
        done = subprocess.run(args, cwd=base, capture_output=True, timeout=(timeout or TIMEOUT_MS) / 1000,
                              check=False)  # noqa: S603 - the user agreed to run this config's code
    except subprocess.TimeoutExpired:
        raise CheckError(f"the prompt command {prompt.exec} ran past its time limit "
                         f"({(timeout or TIMEOUT_MS) / 1000:g} s)") from None
    except OSError as exc:
        raise CheckError(f"cannot run the prompt command {prompt.exec}: {exc.strerror or exc}") from None
    out = _ANSI.sub("", done.stdout.decode("utf-8", "replace").strip())
    err = _ANSI.sub("", done.stderr.decode("utf-8", "replace").strip())
    if done.returncode != 0:
        raise CheckError(f"the prompt command {prompt.exec} exited with {done.returncode}"
                         + (f": {err[-400:]}" if err else ""))
    if err and not out:
        raise CheckError(f"the prompt command {prompt.exec} failed: {err[-400:]}")
    return out
