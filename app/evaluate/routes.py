"""Where an evaluation's requests go: the targets it needs, and the registry names that serve them.

`judge_target` is where a judge call goes (an assertion's or a test's provider, else the evaluation's judge:
"local", a GGUF path or a server URL); `needed_targets` names every target the unfinished cells use, each once,
variants before judges, so a front end opens them before anything runs. Among a window's backends (a
`BackendRegistry`) a target becomes the name panes use: `named` targets (variants made from panes) keep their
pane's backend; the main model ("local", or a GGUF that is the main model's file) is MAIN; another GGUF or a
server is the backend of the same spec once opened. `missing()` lists the specs to open first, and `api_key()`
finds a server's key the way `python -m app eval` does (the target's environment variable, else the key store).
`elsewhere()` names the variants whose server is not this computer, or is on this computer and does not answer,
so that a front end can offer to run them on a model here (`variants.retarget`, as `eval --model` does).
Qt-free.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from app.backends.registry import MAIN, BackendSpec
from app.evaluate import api_keys, cells, graders, providers
from app.evaluate.errors import Problems
from app.session.evaluation import BackendTarget, Evaluation


def default_judge(judge: str) -> BackendTarget:
    """The evaluation's judge: "local" (the main model), a GGUF path, or an OpenAI-compatible server URL."""
    if judge in ("", "local"):
        return BackendTarget(kind="local")
    if judge.startswith(("http://", "https://")):
        return BackendTarget(kind="server", url=judge.rstrip("/"))
    return BackendTarget(kind="local", path=judge)


def judge_target(judge, evaluation_judge: str, base_dir=None) -> BackendTarget:
    """Where a judge call goes: its provider (an assertion's or a test's, id or {id, config}), else the
    evaluation's judge. Raises ValueError for a provider that cannot judge."""
    judge_id = judge.get("id") if isinstance(judge, dict) else judge
    if judge_id is None:  # none, or {config}: the evaluation's judge (with that config's settings)
        return default_judge(evaluation_judge)
    config = (judge.get("config") or {}) if isinstance(judge, dict) else {}
    found = providers.parse_id(str(judge_id), Path(base_dir or "."), any_family=True)
    if isinstance(found, str):
        raise ValueError(found)
    family, target = found
    if family == "foreign":  # read only when every provider runs on one model (config.py): so does this judge
        return default_judge(evaluation_judge)
    if family == "echo":
        raise ValueError("echo cannot judge: name a model or a server as the provider")
    return providers.settings(family, target, config, "judge", Problems())["target"]


def needed_targets(evaluation: Evaluation, base_dir=None) -> list[BackendTarget]:
    """Every backend the unfinished cells may use (variants, then judges), each once, so a front end opens them
    before anything runs. Raises ValueError for a judge provider that cannot judge."""
    found: dict[str, BackendTarget] = {}
    todo = evaluation.unfinished()
    for cell in todo:
        target = evaluation.variants[cell.variant].target
        if target.needs_backend and evaluation.cases[cell.case].provider_output is None:
            found.setdefault(target.model_dump_json(), target)
    cases = {cell.case for cell in todo} | {case for case in range(len(evaluation.cases)) for repeat in range(
        evaluation.repeat) if cells.select_best_call(evaluation, case, repeat)}
    for case in sorted(cases):
        test = evaluation.cases[case]
        if test.provider:  # the simulated user talks on the evaluation's judge
            target = judge_target(None, evaluation.judge, base_dir)
            found.setdefault(target.model_dump_json(), target)
        stack = list(test.assertions)
        while stack:
            assertion = stack.pop()
            stack += assertion.assertions or []
            if assertion.base_type in graders.MODEL_GRADED:
                target = judge_target(assertion.provider or test.options.provider, evaluation.judge, base_dir)
                found.setdefault(target.model_dump_json(), target)
    return list(found.values())


def api_key(target: BackendTarget, keys) -> str | None:
    """The API key for a server target: $`target.api_key_env`, else what `keys` (a KeyStore) holds for its URL."""
    from_env = os.environ.get(target.api_key_env) if target.api_key_env else None
    return from_env or (keys.get(target.url) if keys is not None and target.url else None)


PROBE_TIMEOUT_S = 0.5  # a server on this computer answers a connection at once, or refuses it at once


def answers(url: str) -> bool:
    """Whether something accepts a TCP connection at the URL's host and port (for servers on this computer)."""
    try:
        parsed = urlparse(url)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        with socket.create_connection((parsed.hostname or "localhost", port), timeout=PROBE_TIMEOUT_S):
            return True
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class Elsewhere:
    """A variant whose requests would go to a server that is not this computer, or that does not answer."""

    variant: int
    provider: str  # its label, with its provider id when they differ
    host: str
    why: str  # "api.openai.com is not this computer, and no API key is set ($OPENAI_API_KEY)"


def elsewhere(evaluation: Evaluation, keys=None, probe: Callable[[str], bool] = answers) -> list[Elsewhere]:
    """The variants with cells to run whose server is another computer, or this one and nothing answers there
    (`probe`, asked once per URL); `keys` is the key store `api_key` reads."""
    todo = {cell.variant for cell in evaluation.unfinished()}
    found, answered = [], {}
    for index, variant in enumerate(evaluation.variants):
        target = variant.target
        if index not in todo or target.kind != "server":
            continue
        name = variant.label if variant.label == variant.provider_id else f"{variant.label} ({variant.provider_id})"
        if not target.url:  # another service's provider id (anthropic:, bedrock:, …): it runs only on a model here
            family = variant.provider_id.partition(":")[0]
            found.append(Elsewhere(index, name, family, f"Chorus does not call {family}'s service"))
            continue
        host = urlparse(target.url).netloc or target.url
        if not api_keys.is_loopback(target.url):
            key = api_key(target, keys)
            why = f"{host} is not this computer" + (
                f" (a key is set{f' in ${target.api_key_env}' if os.environ.get(target.api_key_env or '') else ''})"
                if key else f", and no API key is set (${target.api_key_env})" if target.api_key_env else "")
        else:
            if target.url not in answered:
                answered[target.url] = probe(target.url)
            if answered[target.url]:
                continue
            why = f"nothing answers at {host}"
        found.append(Elsewhere(index, name, host, why))
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def spec_for(target: BackendTarget) -> BackendSpec | None:
    """The backend to open for a target (None: echo, a pane's named backend, or the main model)."""
    if target.kind == "local" and target.path:
        return BackendSpec(kind="local", path=target.path)
    if target.kind == "server":
        return BackendSpec(kind="server", url=target.url, model=target.model)
    return None


class Routes:
    """Registry names for targets. `main_path()` is the main model's file ("" when none is loaded);
    `specs()` the registry's open specs (`BackendRegistry.specs`)."""

    def __init__(self, main_path: Callable[[], str], specs: Callable[[], list[BackendSpec]]):
        self._main_path, self._specs = main_path, specs
        self._opened: dict[str, str] = {}  # target (JSON) -> the name it was opened under

    def name(self, target: BackendTarget) -> str:
        """The registry name for the target; raises RuntimeError when it is not open (echo never submits)."""
        found = self.find(target)
        if found is None:
            raise RuntimeError(f"{target.name} is not connected")
        return found

    def find(self, target: BackendTarget) -> str | None:
        if target.kind == "named":
            return target.backend or MAIN
        if target.kind == "local":
            main = self._main_path()
            if not target.path or (main and _same_file(target.path, main)):
                return MAIN
        opened = self._opened.get(target.model_dump_json())
        if opened is not None:
            return opened
        for spec in self._specs():
            if target.kind == "local" and spec.kind == "local" and _same_file(spec.path, target.path):
                return spec.name
            if (target.kind == "server" and spec.kind == "server" and spec.url.rstrip("/") == target.url.rstrip("/")
                    and (target.model is None or spec.model == target.model)):
                return spec.name
        return None

    def missing(self, targets: list[BackendTarget]) -> list[tuple[BackendTarget, BackendSpec]]:
        """The targets no open backend serves yet, with the spec to open for each (each spec once)."""
        found, seen = [], set()
        for target in targets:
            spec = spec_for(target)
            if spec is not None and self.find(target) is None and spec not in seen:
                seen.add(spec)
                found.append((target, spec))
        return found

    def opened(self, target: BackendTarget, name: str) -> None:
        """The target's backend was opened under `name` (a server's default model resolved)."""
        self._opened[target.model_dump_json()] = name
