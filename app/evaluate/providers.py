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
(json_object / json_schema → constrained output). An API key written in the config is refused (Chorus never
writes keys to files): name an environment variable with `apiKeyEnvar`.
"""

from __future__ import annotations

import os
from pathlib import Path

from app.engine import SamplingParams, limits
from app.evaluate.errors import Problems
from app.session.evaluation import BackendTarget, sampling_dict

_SAMPLING_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "min_p": "min_p", "seed": "seed",
                  "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
                  "repeat_penalty": "repeat_penalty", "repeat_last_n": "penalty_last_n"}
_COMMON = {"stop", "temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"}
CONFIG_KEYS = {
    "openai": _COMMON | {"apiBaseUrl", "apiHost", "apiKeyEnvar", "max_tokens", "response_format"},
    "ollama": _COMMON | {"top_k", "min_p", "num_predict", "repeat_penalty", "repeat_last_n", "response_format"},
    "llama": _COMMON | {"top_k", "n_predict", "repeat_penalty", "repeat_last_n"},
    "gguf": _COMMON | {"top_k", "min_p", "max_tokens", "repeat_penalty", "repeat_last_n", "response_format"},
    "echo": set(),
}
_MAX_TOKENS_KEY = {"openai": "max_tokens", "ollama": "num_predict", "llama": "n_predict", "gguf": "max_tokens"}


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


def parse_id(provider_id: str, base: Path) -> tuple[str, BackendTarget] | str:
    """(family, target) for a provider id, or a sentence saying why Chorus cannot run it."""
    if provider_id == "echo":
        return "echo", BackendTarget(kind="echo")
    if provider_id.lower().endswith(".gguf"):
        path = Path(provider_id[len("file://"):] if provider_id.startswith("file://") else provider_id)
        path = path if path.is_absolute() else base / path
        return ("gguf", BackendTarget(kind="local", path=str(path))) if path.is_file() else (
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
    return (f"the provider {provider_id!r} is not supported (Chorus runs openai:chat:<model>, ollama:chat:<model>, "
            f"llama:<name>, echo and file://<model>.gguf)")


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
    schema = (response_format.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        problems.add(where, "response_format.json_schema.schema must be a JSON schema object")
        return None
    return schema


def settings(family: str, target: BackendTarget, config: dict, where: str, problems: Problems) -> dict:
    """Variant fields (target, sampling, max_tokens, stop, json_schema) from a provider's config."""
    for key in sorted(set(config) - CONFIG_KEYS[family]):
        if key == "apiKey":
            problems.add(where, "an API key written in the config is refused (Chorus never writes keys to files): "
                                "set an environment variable and name it with apiKeyEnvar")
        else:
            problems.unsupported(where, f"the {family} provider setting {key!r}",
                                 f"known: {', '.join(sorted(CONFIG_KEYS[family])) or 'none'}")
    if family == "openai":
        target = target.model_copy(update={"url": _openai_url(config),
                                           "api_key_env": config.get("apiKeyEnvar") or target.api_key_env})
    overrides, max_tokens = defaults(family)
    overrides.update({_SAMPLING_KEYS[k]: v for k, v in config.items() if k in _SAMPLING_KEYS})
    if overrides.get("seed") is not None:
        overrides["seed"] = int(overrides["seed"])
    try:
        sampling = sampling_dict(SamplingParams(**overrides))
    except (TypeError, ValueError) as exc:
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
    stop = [stop] if isinstance(stop, str) else [str(s) for s in stop]
    schema = _json_schema(config["response_format"], where, problems) if "response_format" in config else None
    return {"target": target, "sampling": sampling, "max_tokens": max_tokens, "stop": stop, "json_schema": schema}
