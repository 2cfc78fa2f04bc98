"""JSON schemas as people write them: each one constrains the output (validated by jsonschema) or is refused up
front with the reason. Several of these llama-cpp-python's GBNF converter (the path before llguidance) rejects
(a recursive `$ref`) or accepts while ignoring what it cannot do (`if`/`then`, number bounds)."""

import json

import jsonschema
import pytest

from app.engine import SamplingParams
from app.engine.sampling.grammar import GrammarError, check_request, closed_objects
from tests.conftest import ask

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 16},
                                           "age": {"type": "integer", "minimum": 0, "maximum": 130}},
          "required": ["name", "age"], "additionalProperties": False}

CONSTRAINED = {
    "nested": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20},
        "address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                     "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                    "required": ["city", "zip"], "additionalProperties": False}},
        "required": ["name", "address"], "additionalProperties": False},
    "enum-and-bounds": {"type": "object", "properties": {
        "answer": {"enum": ["yes", "no", "maybe"]}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
        "required": ["answer", "confidence"], "additionalProperties": False},
    "anyOf": {"type": "object", "properties": {"contact": {"anyOf": [
        {"type": "object", "properties": {"email": {"type": "string", "maxLength": 30}}, "required": ["email"],
         "additionalProperties": False},
        {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\+?[0-9]{7,12}$"}},
         "required": ["phone"], "additionalProperties": False}]}}, "required": ["contact"],
        "additionalProperties": False},
    "pattern": {"type": "object", "properties": {"date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"},
                                                 "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{3}$"}},
                "required": ["date", "code"], "additionalProperties": False},
    "minItems": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string",
                                                                                      "maxLength": 12},
                                                           "minItems": 2, "maxItems": 4}}, "required": ["tags"],
                 "additionalProperties": False},
    "$ref": {"$defs": {"person": PERSON}, "type": "object",
             "properties": {"author": {"$ref": "#/$defs/person"}, "editor": {"$ref": "#/$defs/person"}},
             "required": ["author", "editor"], "additionalProperties": False},
    "recursive-$ref": {"$defs": {"node": {"type": "object", "properties": {
        "value": {"type": "integer", "minimum": 0, "maximum": 99},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["value"], "additionalProperties": False}}, "$ref": "#/$defs/node"},
    "oneOf-const": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
         "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
         "required": ["kind", "side"], "additionalProperties": False}]},
    "allOf": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                        {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}],
              "properties": {"a": True, "b": True}, "additionalProperties": False},
    "tuple": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 10}, {"type": "integer"}],
              "items": False},
    "any-json": {},
}

# Any JSON: asked for "an example", greedy SmolLM2 may write an object with one key repeated forever, and
# whether it does depends on the CPU's rounding (it stopped on the Xeons, ran to the limit on an AMD EPYC).
PROMPTS = {"any-json": "Give a small JSON array of three numbers."}

REFUSED = {  # schema, words the reason must contain
    "not": ({"type": "object", "properties": {"x": {"not": {"type": "string"}}}}, "not"),
    "if-then": ({"type": "object", "properties": {"a": {"type": "integer"}}, "if": {"required": ["a"]},
                 "then": {"properties": {"a": {"const": 1}}}}, "if"),
    "lookahead": ({"type": "string", "pattern": "^(?!abc)[a-z]+$"}, "look-around"),
    "uniqueItems": ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "uniqueItems"),
    "not-a-type": ({"type": "nonsense"}, "nonsense"),
}


def test_every_schema_of_the_set_constrains_the_output(make_engine):
    engine = make_engine(n_slots=4, n_ctx_per_slot=512)
    handles = {name: engine.submit(ask(PROMPTS.get(name, f"Give an example ({name}) as JSON."), max_tokens=200,
                                       json_schema=schema))
               for name, schema in CONSTRAINED.items() if name != "recursive-$ref"}
    for name, handle in handles.items():
        result = handle.result(timeout=600)
        assert result.finish_reason == "stop", (name, result.finish_reason, result.error, result.text)
        jsonschema.validate(json.loads(result.text), CONSTRAINED[name])


def test_a_recursive_schema_nests_and_ends(make_engine):
    """Greedy, the model nests children forever; sampled, some trees end (every one that ends is valid)."""
    engine = make_engine(n_slots=4, n_ctx_per_slot=512)
    schema = CONSTRAINED["recursive-$ref"]
    handles = [engine.submit(ask("A small tree as JSON.", max_tokens=200, json_schema=schema,
                                 sampling=SamplingParams(temperature=0.8, seed=seed))) for seed in range(8)]
    ended = [r for r in (h.result(timeout=600) for h in handles) if r.finish_reason == "stop"]
    assert ended
    for result in ended:
        jsonschema.validate(json.loads(result.text), schema)


def test_what_cannot_be_enforced_is_refused_up_front_with_the_reason(make_engine):
    engine = make_engine(n_slots=2, n_ctx_per_slot=256)
    for name, (schema, words) in REFUSED.items():
        with pytest.raises(GrammarError, match=words):
            check_request(None, schema)
        message = engine.check_grammar(json_schema=schema)
        assert message and words in message, name
        result = engine.submit(ask("JSON please.", max_tokens=8, json_schema=schema)).result(timeout=120)
        assert result.finish_reason == "error" and result.error_kind == "grammar" and result.error == message


def test_objects_that_say_nothing_of_other_keys_are_closed_as_llama_cpp_closes_them(make_engine):
    """CI caught the open reading: greedy, the model answered {"answer": "no", "description": ..., "description": ...}
    until max_tokens. llama.cpp's converter (and llama-server's json_schema) forbids unlisted keys unless
    additionalProperties says otherwise; allOf members stay open so they don't forbid each other's keys."""
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"]}
    closed = closed_objects(schema)
    assert closed["additionalProperties"] is False and "additionalProperties" not in schema
    assert closed_objects({**schema, "additionalProperties": True})["additionalProperties"] is True
    merged = closed_objects({"allOf": [{"properties": {"a": {"type": "object", "properties": {"x": True}}}},
                                       {"properties": {"b": True}}]})
    assert all("additionalProperties" not in member for member in merged["allOf"])
    assert merged["allOf"][0]["properties"]["a"]["additionalProperties"] is False
    named = closed_objects({"type": "object", "properties": {"properties": {"type": "string"}}})
    assert named["properties"] == {"properties": {"type": "string"}}  # a key named "properties" is not a schema
    engine = make_engine(n_slots=1, n_ctx_per_slot=256)
    result = engine.submit(ask("Is the sky blue? Answer as JSON.", max_tokens=60, json_schema=schema)).result(600)
    assert result.finish_reason == "stop", result.text
    assert set(json.loads(result.text)) == {"answer"}
