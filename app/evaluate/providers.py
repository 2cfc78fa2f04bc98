"""promptfoo provider entries as Chorus variant settings: where requests go, and with which sampling.

Supported ids (anything else is a problem, listed before anything runs):
- `openai:chat:<model>` / `openai:<model>` — an OpenAI-compatible server: `config.apiBaseUrl` (or `apiHost`),
  else $OPENAI_BASE_URL / $OPENAI_API_BASE_URL, else api.openai.com; key from $`config.apiKeyEnvar` or
  $OPENAI_API_KEY. `openai:completion:<model>` sends the prompt as raw text. promptfoo's defaults apply:
  temperature $OPENAI_TEMPERATURE or 0, top_p $OPENAI_TOP_P or 1, max_tokens $OPENAI_MAX_TOKENS or 1024.
- `ollama:chat:<model>` — Ollama's server at $OLLAMA_BASE_URL (default http://localhost:11434), through its
  OpenAI-compatible API. `ollama:<model>` and `ollama:completion:<model>` (Ollama's /api/generate, which applies
  the model's template to the prompt) are sent as one user message: the same text reaches the model.
- `llama` / `llama:<name>` — llama-server at $LLAMA_BASE_URL (default http://localhost:8080); the prompt is sent
  raw (its /completion endpoint), `n_predict` default 512 as promptfoo's provider.
- `echo` — the output is the rendered prompt.
- `file://model.gguf` (or a path ending .gguf) — a local GGUF on Chorus's own engine (Chorus's defaults).
Settings map by name: temperature, top_p, top_k, min_p, seed, presence/frequency/repeat_penalty,
repeat_last_n; max_tokens (OpenAI), num_predict (Ollama), n_predict (llama.cpp); stop; response_format
(json_object / json_schema → constrained output). The other samplers where promptfoo's provider forwards them:
typical_p (Ollama), mirostat, mirostat_tau, mirostat_eta (Ollama, llama); a local GGUF takes every sampler under
llama-server's name (dry_multiplier, dry_base, dry_allowed_length, dry_penalty_last_n, dry_sequence_breakers,
xtc_probability, xtc_threshold, typical_p, mirostat*, top_n_sigma, dynatemp_range, dynatemp_exponent).
A server's key is $`config.apiKeyEnvar`, else `config.apiKey`
(as promptfoo, the written key wins): a written key is moved out of the config at once into this process's
environment under a name of its own (`stash_key`), so the evaluation, its results and the session hold only
that name, never the key; a key that looks real, for a server that is not this machine, gets one warning
(api_keys.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

import yaml

from app.engine import SAMPLER_FIELDS, SamplingParams, limits
from app.evaluate import code_checks, cost, functions_call, tool_callbacks
from app.evaluate.api_keys import key_warning, stash_key
from app.evaluate.case_files import is_file
from app.evaluate.errors import Problems
from app.mcp import secrets as mcp_secrets
from app.mcp.config import parse_promptfoo
from app.session import tools as tool_defs
from app.session.evaluation import BackendTarget, sampling_dict

_SAMPLING_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "min_p": "min_p", "seed": "seed",
                  "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
                  "repeat_penalty": "repeat_penalty", "repeat_last_n": "penalty_last_n",
                  **{name: name for name in SAMPLER_FIELDS}}  # llama-server's names are SamplingParams'
_MIROSTAT = {"mirostat", "mirostat_tau", "mirostat_eta"}
_COMMON = {"stop", "temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"}
_KEYS = {"apiKey", "apiKeyEnvar",  # accepted everywhere; used by servers, ignored by a local GGUF and echo
         "cost", "inputCost", "outputCost"}  # prices per token, for `cost` assertions (_prices)
CONFIG_KEYS = {
    "openai": _COMMON | _KEYS | {"apiBaseUrl", "apiHost", "max_tokens", "response_format", "tools", "tool_choice",
                                 "mcp", tool_callbacks.KEY},
    "ollama": _COMMON | _KEYS | _MIROSTAT | {"top_k", "min_p", "num_predict", "repeat_penalty", "repeat_last_n",
                                             "response_format", "typical_p"},
    "llama": _COMMON | _KEYS | _MIROSTAT | {"top_k", "n_predict", "repeat_penalty", "repeat_last_n"},
    "gguf": _COMMON | _KEYS | set(SAMPLER_FIELDS) | {"top_k", "min_p", "max_tokens", "repeat_penalty",
                                                     "repeat_last_n", "response_format", "tools", "tool_choice",
                                                     "mcp", tool_callbacks.KEY},
    "echo": set(_KEYS),
    "foreign": _COMMON | {"top_k", "max_tokens"},  # what applies on a local model; the rest is left out
}
# Other providers' names for the settings that apply on a local model (anthropic, bedrock, google, vertex, …)
_FOREIGN_ALIASES = {"maxTokens": "max_tokens", "max_new_tokens": "max_tokens", "max_output_tokens": "max_tokens",
                    "maxOutputTokens": "max_tokens", "max_tokens_to_sample": "max_tokens", "max_gen_len": "max_tokens",
                    "num_predict": "max_tokens", "n_predict": "max_tokens", "topP": "top_p", "topK": "top_k",
                    "stopSequences": "stop", "stop_sequences": "stop"}


def foreign_config(config: dict) -> dict:
    """Another provider's config as the settings that apply on a local model (temperature, max tokens, top_p,
    top_k, seed, stop, penalties), under Chorus's names; everything else (keys, regions, …) left out."""
    found = {}
    for key, value in config.items():
        name = _FOREIGN_ALIASES.get(key, key)
        if name in CONFIG_KEYS["foreign"] and name not in found:
            found[name] = value
    return found


_MAX_TOKENS_KEY = {"openai": "max_tokens", "ollama": "num_predict", "llama": "n_predict", "gguf": "max_tokens",
                   "foreign": "max_tokens"}
JUDGE_SETTINGS = frozenset(_SAMPLING_KEYS) | frozenset(_MAX_TOKENS_KEY.values())  # what a judge's config sets


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


def defaults(family: str) -> tuple[dict, int]:
    """(sampling overrides, max_tokens) a provider family starts from before its config."""
    if family == "openai":
        return ({"temperature": _env_float("OPENAI_TEMPERATURE", 0.0), "top_p": _env_float("OPENAI_TOP_P", 1.0)},
                int(_env_float("OPENAI_MAX_TOKENS", 1024)))
    if family == "llama":
        return {}, 512
    return {}, limits.MAX_TOKENS.default


_JS_FILE = re.compile(r"\.(js|cjs|mjs|ts|cts|mts)$", re.IGNORECASE)


def parse_id(provider_id: str, base: Path, any_family: bool = False) -> tuple[str, BackendTarget] | str:
    """(family, target) for a provider id, or a sentence saying why Chorus cannot run it. `any_family`: the run
    puts every provider on one model (`eval --model` / `--server`), so any other id (anthropic:, bedrock:, https:,
    …) is family "foreign", its target a placeholder that `variants.retarget` replaces."""
    if provider_id == "echo":
        return "echo", BackendTarget(kind="echo")
    if "://" not in provider_id and _JS_FILE.search(provider_id):  # promptfoo's isJavascriptFile: a custom provider
        provider_id = f"file://{provider_id}"
    if provider_id.startswith(("python:", "ruby:")):  # promptfoo's script providers: `ruby:x.rb` is file://x.rb
        provider_id = f"file://{provider_id.split(':', 1)[1]}"
    if provider_id.startswith("exec:"):
        command = provider_id[5:].strip()
        return ("code", BackendTarget(kind="code", path=f"exec:{command}")) if command else (
            f"the provider {provider_id!r} names no command")
    if provider_id.startswith("file://") and code_checks.is_script_ref(provider_id):
        path, function = code_checks.split_file(provider_id, base)
        if not path.is_file():
            return f"provider file not found: {path}"
        if path.suffix == ".ts":
            return f"the provider {provider_id!r} is TypeScript, which Chorus does not run: write it in JavaScript"
        return "code", BackendTarget(kind="code", path=str(path) + (f":{function}" if function else ""))
    if provider_id.lower().endswith(".gguf"):
        path = Path(provider_id[len("file://"):] if provider_id.startswith("file://") else provider_id)
        path = path if path.is_absolute() else base / path
        return ("gguf", BackendTarget(kind="local", path=str(path))) if is_file(path) else (
            f"model file not found: {path}")
    family, _, rest = provider_id.partition(":")
    if family == "openai":
        mode, _, model = rest.partition(":")
        if mode not in ("chat", "completion"):
            if mode in ("embedding", "embeddings", "assistant", "image", "realtime", "responses", "moderation"):
                return f"the provider {provider_id!r} (openai:{mode}) is not supported: use openai:chat:<model>"
            mode, model = "chat", rest
        if not model:
            return f"the provider {provider_id!r} names no model: write openai:chat:<model>"
        return "openai", BackendTarget(kind="server", model=model, raw_prompt=mode == "completion",
                                       api_key_env="OPENAI_API_KEY")
    if family == "ollama":
        mode, _, model = rest.partition(":")
        if mode in ("embedding", "embeddings"):
            return f"the provider {provider_id!r} (embeddings) is not supported"
        if mode not in ("chat", "completion"):
            model = rest
        if not model:
            return f"the provider {provider_id!r} names no model: write ollama:chat:<model>"
        url = os.environ.get("OLLAMA_BASE_URL", "http://localhost:11434").rstrip("/") + "/v1"
        return "ollama", BackendTarget(kind="server", url=url, model=model, api_key_env="OLLAMA_API_KEY")
    if family == "llama":
        url = os.environ.get("LLAMA_BASE_URL", "http://localhost:8080").rstrip("/") + "/v1"
        return "llama", BackendTarget(kind="server", url=url, model=rest or None, raw_prompt=True)
    if any_family:
        return "foreign", BackendTarget(kind="server", model=provider_id)
    return (f"the provider {provider_id!r} cannot run here as written: run it on a local model with --model "
            f"PATH.gguf (or --server URL); as written Chorus runs openai:chat:<model>, ollama:chat:<model>, "
            f"llama:<name>, echo, file://<model>.gguf, and file://provider.py / .js / .rb or exec:<command>")


def _openai_url(config: dict) -> str:
    if config.get("apiBaseUrl"):
        return str(config["apiBaseUrl"]).rstrip("/")
    if config.get("apiHost"):
        return f"https://{config['apiHost']}/v1"
    return (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE_URL")
            or "https://api.openai.com/v1").rstrip("/")


def _json_schema(response_format, where: str, problems: Problems) -> dict | None:
    if not isinstance(response_format, dict) or response_format.get("type") not in ("json_object", "json_schema"):
        problems.unsupported(where, f"response_format {response_format!r}", "use json_object or json_schema")
        return None
    if response_format["type"] == "json_object":
        return {"type": "object"}
    inner = response_format.get("json_schema")
    schema = inner.get("schema") if isinstance(inner, dict) else None
    if not isinstance(schema, dict):
        problems.add(where, "response_format.json_schema.schema must be a JSON schema object")
        return None
    return schema


def _http_url(value) -> bool:
    try:
        return isinstance(value, str) and urlparse(value).scheme in ("http", "https") and bool(urlparse(value).netloc)
    except ValueError:  # e.g. an unclosed "[" of an IPv6 address
        return False


def _typed(config: dict, where: str, problems: Problems) -> dict:
    """The config without values of the wrong type, each of which is a problem naming its key."""
    kept = {}
    for key, value in config.items():
        if key == "dry_sequence_breakers":
            ok, what = isinstance(value, list) and all(isinstance(s, str) for s in value), "a list of strings"
        elif key in _SAMPLING_KEYS or key in _MAX_TOKENS_KEY.values():
            ok, what = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
        elif key == "apiBaseUrl":
            ok, what = _http_url(value), "an http:// or https:// URL"
        elif key in ("apiHost", "apiKeyEnvar"):
            ok, what = isinstance(value, str), "a string"
        elif key == "stop":
            ok, what = value is None or isinstance(value, str) or (
                isinstance(value, list) and all(isinstance(s, str) for s in value)), "a string or a list of strings"
        else:
            ok, what = True, ""
        if ok:
            kept[key] = value
        else:
            problems.add(f"{where}.config.{key}", f"must be {what}, got {value!r:.60}")
    return kept


def settings(family: str, target: BackendTarget, config: dict, where: str, problems: Problems,
             notes: list[str] | None = None, base: Path | None = None) -> dict:
    """Variant fields (target, sampling, max_tokens, stop, json_schema, tools, tool_choice) from a provider's
    config; a warning about a written key goes to `notes`; `file://` tools are read relative to `base`."""
    prices = cost.prices(config, where, problems)
    functions = config.get("functions") if family in ("openai", "gguf") else None
    config = functions_call.as_tools(config, where, problems) if family in ("openai", "gguf") else config
    if family == "foreign":
        if tool_callbacks.KEY in config:  # its tools are in that provider's own format: not read here
            problems.unsupported(where, f"{tool_callbacks.KEY!r} on this provider", "Chorus runs them on openai "
                                 "and GGUF providers")
        config = foreign_config(config)
    config = _typed(stash_key(config, where, problems), where, problems)
    for key in sorted(set(config) - CONFIG_KEYS[family]):
        problems.unsupported(where, f"the {family} provider setting {key!r}",
                             f"known: {', '.join(sorted(CONFIG_KEYS[family])) or 'none'}")
    if family == "openai":
        target = target.model_copy(update={"url": _openai_url(config)})
    if target.kind == "server" and isinstance(config.get("apiKeyEnvar"), str) and config["apiKeyEnvar"]:
        target = target.model_copy(update={"api_key_env": config["apiKeyEnvar"]})
    warning = key_warning(config, target.url) if target.kind == "server" else None
    if warning and notes is not None and warning not in notes:
        notes.append(warning)
    overrides, max_tokens = defaults(family)
    overrides.update({_SAMPLING_KEYS[k]: v for k, v in config.items() if k in _SAMPLING_KEYS})
    try:
        if overrides.get("seed") is not None:
            overrides["seed"] = int(overrides["seed"])
        sampling = sampling_dict(SamplingParams(**overrides))
    except (TypeError, ValueError, OverflowError) as exc:
        problems.add(where, f"provider settings: {exc}")
        sampling = sampling_dict(SamplingParams())
    key = _MAX_TOKENS_KEY.get(family)
    if key and key in config:
        value = config[key]
        if not isinstance(value, int) or isinstance(value, bool) or not (
                limits.MAX_TOKENS.low <= value <= limits.MAX_TOKENS.high):
            problems.add(where, f"{key} must be a whole number from {limits.MAX_TOKENS.low:g} to "
                                f"{limits.MAX_TOKENS.high:g}, got {value!r}")
        else:
            max_tokens = value
    stop = config.get("stop") or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    schema = _json_schema(config["response_format"], where, problems) if "response_format" in config else None
    tools, choice = _tools(config, base or Path("."), where, problems, mcp="mcp" in config)
    return {"target": target, "sampling": sampling, "max_tokens": max_tokens, "stop": stop, "json_schema": schema,
            "tools": tools, "tool_choice": choice, "mcp": _mcp(config.get("mcp"), where, problems),
            "prices": prices, "functions": functions if isinstance(functions, list) else None,
            "callbacks": tool_callbacks.check(config.get(tool_callbacks.KEY), base or Path("."), where, problems)}


def _mcp(value, where: str, problems: Problems) -> dict | None:
    """promptfoo's `config.mcp` as a variant keeps it: its servers as mcpServers entries and the call timeout
    (app/mcp/config.py parse_promptfoo); nothing starts here."""
    if value is None:
        return None
    servers, timeout_s, found = parse_promptfoo(value)
    for problem in found:
        problems.add(f"{where}.config", problem)
    if servers is None or found:
        return None
    kept = mcp_secrets.stash(servers, mcp_secrets.process_keys(), remember=False)  # out of the evaluation's data
    return {"servers": kept.to_json()["mcpServers"], "timeout_s": timeout_s}


def judge_settings(judge, where: str = "", problems: Problems | None = None) -> tuple[dict, int | None]:
    """What a judge provider's config asks of its requests: (sampling overrides by SamplingParams name,
    max_tokens or None), only the settings it writes (a judge keeps Chorus's own for the rest). `judge` is a
    provider id, {id, config}, or {config} (the evaluation's judge with these settings: what `--judge` leaves of
    the config's judge provider). Values of the wrong type or range go to `problems` and are left out."""
    config = judge.get("config") if isinstance(judge, dict) else None
    if not isinstance(config, dict):
        return {}, None
    problems = problems if problems is not None else Problems()
    config = _typed({k: v for k, v in config.items() if k in JUDGE_SETTINGS}, where, problems)
    overrides = {_SAMPLING_KEYS[k]: v for k, v in config.items() if k in _SAMPLING_KEYS}
    try:
        SamplingParams(**overrides)
    except (TypeError, ValueError, OverflowError) as exc:
        problems.add(where, f"judge settings: {exc}")
        overrides = {}
    max_tokens = None
    for key in sorted(set(config) & set(_MAX_TOKENS_KEY.values())):
        value = config[key]
        if isinstance(value, int) and limits.MAX_TOKENS.low <= value <= limits.MAX_TOKENS.high:
            max_tokens = value
        else:
            problems.add(f"{where}.config.{key}", f"must be a whole number from {limits.MAX_TOKENS.low:g} to "
                                                  f"{limits.MAX_TOKENS.high:g}, got {value!r}")
    return overrides, max_tokens


def _tools_file(ref: str, base: Path):
    """The tools a `file://tools.json` (or .yaml) holds: a list of definitions, or one."""
    path = base / ref.removeprefix("file://")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise tool_defs.ToolsError(f"tools: cannot read {path}: {exc.strerror or exc}") from exc
    if path.suffix.lower() not in (".yaml", ".yml"):
        return tool_defs.parse_tools(text, checked=False)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise tool_defs.ToolsError(f"tools: {path.name} is not valid YAML: {exc}") from exc


def _tools(config: dict, base: Path, where: str, problems: Problems, mcp: bool = False) -> tuple[list[dict], str]:
    """promptfoo's `config.tools` (a list, or `file://tools.json`) and `tool_choice` (a word, or
    {type: function, function: {name}}), checked as a pane's tools are (with `mcp`, the choice is checked once
    the servers' tools join: eval.py)."""
    raw, choice = config.get("tools"), config.get("tool_choice", "auto")
    if isinstance(choice, dict):
        choice = (choice.get("function") or {}).get("name") if choice.get("type") == "function" else None
    try:
        if isinstance(raw, str) and raw.startswith("file://"):
            found = tool_defs.check_tools(_tools_file(raw, base))
        elif isinstance(raw, list) and any(isinstance(item, str) and item.startswith("file://") for item in raw):
            # promptfoo: each file:// item is read; when every item holds a list, the lists are joined
            loaded = [_tools_file(item, base) if isinstance(item, str) and item.startswith("file://") else item
                      for item in raw]
            lists = [isinstance(item, list) for item in loaded]
            if any(lists) and not all(lists):
                raise tool_defs.ToolsError("tools: the files hold lists of tools and single tools mixed: "
                                           "promptfoo does not join those")
            found = tool_defs.check_tools([t for item in loaded for t in item] if all(lists) else loaded)
        else:
            found = tool_defs.check_tools(raw) if raw is not None else []
        if not isinstance(choice, str):
            raise tool_defs.ToolsError(f"tool_choice: must be auto, none, required or a function, got {choice!r}")
        if mcp:
            return found, choice
        if found:
            choice = tool_defs.check_tool_choice(choice, found)
        return found, choice if found else "auto"
    except tool_defs.ToolsError as exc:
        problems.add(f"{where}.config", str(exc))
        return [], "auto"
