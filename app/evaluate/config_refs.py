"""`$ref` in a config, resolved as promptfoo resolves it before reading the config (src/util/config/load.ts
dereferenceConfig, through json-schema-ref-parser).

`{$ref: "#/assertionTemplates/isPolite"}` is replaced by what the JSON pointer names in the config (`~1` is "/",
`~0` is "~", %-escapes decoded); `{$ref: "other.yaml#/path"}` by what it names in that YAML or JSON file (relative
to the file that holds the reference; no pointer: the whole file). A `$ref` beside other keys is merged under
them (the other keys win), as the parser's extended references are. The `parameters` of a provider's
`config.functions[]` and `config.tools[].function` are left as written (promptfoo keeps JSON schemas there
untouched). A reference to a web address, one that points at nothing, or one that refers back to itself is a
problem naming it.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import yaml

from app.evaluate.errors import Problems

_MISSING = object()


def dereference(data, base: Path, problems: Problems):
    """The config with every `$ref` replaced (see the module); a structure that holds itself (a YAML anchor
    inside its own value) is a problem, and the config is returned as it was."""
    try:
        return _dereference(data, base, problems)
    except RecursionError:
        problems.add("", "the config holds itself (a YAML alias inside its own anchor) or is nested too deeply")
        return data


def _dereference(data, base: Path, problems: Problems):
    if not isinstance(data, dict) or "providers" not in data:
        return _resolve(data, data, base, problems, (), "")
    kept, providers = {}, data["providers"]
    for index, provider in enumerate(providers if isinstance(providers, list) else []):
        config = provider.get("config") if isinstance(provider, dict) else None
        for name in ("functions", "tools"):
            for j, item in enumerate(config.get(name) or [] if isinstance(config, dict) else []):
                holder = item.get("function") if name == "tools" and isinstance(item, dict) else item
                if isinstance(holder, dict) and "parameters" in holder:
                    kept[(index, name, j)] = holder["parameters"]
    resolved = _resolve(data, data, base, problems, (), "")
    for (index, name, j), parameters in kept.items():
        try:
            item = resolved["providers"][index]["config"][name][j]
            (item["function"] if name == "tools" else item)["parameters"] = parameters
        except (KeyError, IndexError, TypeError):
            continue
    return resolved


def _resolve(node, root, base: Path, problems: Problems, seen: tuple, where: str):
    if isinstance(node, list):
        return [_resolve(item, root, base, problems, seen, f"{where}[{i}]") for i, item in enumerate(node)]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return {key: _resolve(value, root, base, problems, seen, f"{where}.{key}".lstrip("."))
                for key, value in node.items()}
    place = where or "the config"
    if ref in seen:
        problems.add(place, f"$ref {ref!r} refers back to itself")
        return None
    target, target_root, target_base = _target(ref, root, base, problems, place)
    if target is _MISSING:
        return None
    resolved = _resolve(target, target_root, target_base, problems, (*seen, ref), where)
    siblings = {key: _resolve(value, root, base, problems, seen, f"{where}.{key}".lstrip("."))
                for key, value in node.items() if key != "$ref"}
    if siblings and isinstance(resolved, dict):
        return {**resolved, **siblings}
    return resolved


def _target(ref: str, root, base: Path, problems: Problems, place: str):
    address, _, pointer = ref.partition("#")
    if address.startswith(("http://", "https://")):
        problems.unsupported(place, f"$ref {ref!r} to a web address")
        return _MISSING, root, base
    if address:
        path = (base / unquote(address)).resolve()
        try:
            root = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeError, yaml.YAMLError) as exc:
            problems.add(place, f"$ref {ref!r}: cannot read {path}: {exc}")
            return _MISSING, root, base
        base = path.parent
    node = root
    for token in (t for t in pointer.split("/")[1:]):
        token = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            problems.add(place, f"$ref {ref!r} points at nothing in {'the config' if not address else address}")
            return _MISSING, root, base
    return node, root, base
