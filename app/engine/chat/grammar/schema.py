"""JSON schemas as llama.cpp's json-schema-to-grammar reads them: an object schema that lists `properties` and says
nothing of other keys is closed (`closed_objects`). Both the tools' grammars (build.py) and a request's JSON schema
(app/engine/sampling/grammar.py) close them so."""

from __future__ import annotations

# Keys whose value is one schema, a list of schemas, or a map of names to schemas (JSON Schema 2020-12 and draft 7).
_ONE = ("items", "additionalItems", "contains", "not", "if", "then", "else", "additionalProperties",
        "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def closed_objects(schema, in_all_of: bool = False):
    """A copy of `schema` where every object schema with `properties` and no word on other keys
    (`additionalProperties`, `patternProperties`, `unevaluatedProperties`) forbids other keys, as llama.cpp's
    json-schema-to-grammar does. Members of an `allOf` stay open: closing them would forbid each other's keys."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _ONE:
        if isinstance(out.get(key), dict):
            out[key] = closed_objects(out[key])
    for key in _LIST:
        if isinstance(out.get(key), list):
            out[key] = [closed_objects(item, in_all_of=key == "allOf") for item in out[key]]
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed_objects(item) for name, item in out[key].items()}
    said = any(key in out for key in ("additionalProperties", "patternProperties", "unevaluatedProperties"))
    if isinstance(out.get("properties"), dict) and not said and not in_all_of:
        out["additionalProperties"] = False
    return out
