"""The top level of promptfooconfig.yaml, declared with pydantic (tests and assertions are in model.py).

Unknown keys are errors (`extra="forbid"`); `validate` turns pydantic's error list into problem lines that name
the place (`tests[3].assert[0]`) and say what is wrong in words, so every problem is reported at once.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.evaluate.errors import Problems


class _Strict(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ProviderEntry(_Strict):
    id: str
    label: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    prompts: list[str] | None = None  # labels of the prompts this provider runs (exact, or "label:" prefix)
    transform: Any = None  # JavaScript: unsupported when set
    delay: Any = None  # unsupported when set (Chorus batches; it does not pace calls)
    env: Any = None  # unsupported when set


class EvaluateOptions(_Strict):
    max_concurrency: int | None = Field(None, alias="maxConcurrency", ge=1)
    repeat: int | None = Field(None, ge=1)


class ConfigFile(_Strict):
    description: str = ""
    prompts: Any = None
    providers: Any = None
    tests: Any = None
    default_test: dict[str, Any] | None = Field(None, alias="defaultTest")
    output_path: str | list[str] | None = Field(None, alias="outputPath")
    evaluate_options: EvaluateOptions | None = Field(None, alias="evaluateOptions")
    sharing: Any = None  # Chorus never uploads results: any value means the same here
    tags: dict[str, Any] | None = None  # descriptive only
    metadata: dict[str, Any] | None = None  # descriptive only
    yaml_schema: str | None = Field(None, alias="$schema")


def _place(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def surrogate_keys(data, where: str):
    """(place, key) for each mapping key holding a lone surrogate (JSON's "\\udcff": half a character). Such a
    value is kept and written escaped, but a key cannot be: results and the session file could not be saved.
    Walks without recursion, each container once (YAML anchors can make a structure contain itself)."""
    seen: set[int] = set()
    stack = [(where, data)]
    while stack:
        place, value = stack.pop()
        if not isinstance(value, (dict, list)) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, list):
            stack += [(f"{place}[{i}]", item) for i, item in enumerate(value)]
            continue
        for key, item in value.items():
            if isinstance(key, str) and any("\ud800" <= ch <= "\udfff" for ch in key):
                yield place or "the config", key
            else:
                stack.append((f"{place}.{key}" if place else str(key), item))


def validate(model: type[BaseModel], data, where: str, problems: Problems):
    """The validated model, or None after adding one problem line per pydantic error (and per key holding a
    lone surrogate)."""
    bad_keys = list(surrogate_keys(data, where))
    for place, key in bad_keys:
        problems.add(place, f"the key {ascii(key)} holds a lone surrogate (half a character): write it as text")
    if bad_keys:
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            loc = _place(error["loc"])
            place = f"{where}.{loc}" if where and loc else (where or loc)
            if error["type"] == "extra_forbidden":
                key = error["loc"][-1]
                parent = place[: -len(str(key))].rstrip(".") or "the config"
                problems.add(parent, f"unknown key {key!r} (Chorus does not support it)")
            elif error["type"] == "missing":
                problems.add(place, "missing (required)")
            else:
                problems.add(place, f"{error['msg']} (got {error.get('input')!r})")
        return None
