"""Assertions written as strings: a CSV cell (`__expected`) and the comma-separated values of contains-any.

`assertion_from_string` follows promptfoo's src/csv.ts: `javascript:`/`fn:`/`eval:` and `*.js` files become
javascript, `grade:`/`llm-rubric:` an llm-rubric (value kept as written), `python:` and `*.py` python; else
`^(not-)?TYPE(\\(N\\))?(:value)?$`, and a cell that matches nothing is an `equals` of the whole cell. Chorus's own
types (CHORUS_TYPES: promptfoo has no such assertion) are read the same way, without promptfoo's default threshold.
`split_values` is promptfoo's quote-aware comma parser (src/util/parseCommaSeparatedValues.ts).
"""

from __future__ import annotations

import re

# promptfoo's BaseAssertionTypes: the grammar recognises all of them; Chorus reports the ones it cannot run.
ASSERTION_TYPES = (
    "answer-relevance", "bleu", "classifier", "contains", "contains-all", "contains-any", "contains-html",
    "contains-json", "contains-sql", "contains-xml", "context-faithfulness", "context-recall", "context-relevance",
    "conversation-relevance", "cost", "equals", "factuality", "finish-reason", "g-eval", "gleu", "guardrails",
    "icontains", "icontains-all", "icontains-any", "is-html", "is-json", "is-refusal", "is-sql",
    "is-valid-function-call", "is-valid-openai-function-call", "is-valid-openai-tools-call", "is-xml",
    "javascript", "latency", "levenshtein", "llm-rubric", "max-score", "meteor", "model-graded-closedqa",
    "model-graded-factuality", "moderation", "perplexity", "perplexity-score", "pi", "python", "regex", "rouge-n",
    "ruby", "search-rubric", "select-best", "similar", "starts-with", "tool-call-f1", "trace-error-spans",
    "trace-span-count", "trace-span-duration", "webhook", "word-count",
)
CHORUS_TYPES = ("word-error-rate",)  # Chorus's own assertions (docs/evaluate.md): each takes a threshold
ARRAY_TYPES = frozenset({"contains-all", "contains-any", "icontains-all", "icontains-any"})
RAW_VALUE_TYPES = frozenset({"contains-json", "is-json"})
THRESHOLD_TYPES = frozenset({"answer-relevance", "classifier", "context-faithfulness", "context-recall",
                             "context-relevance", "cost", "latency", "levenshtein", "perplexity-score", "perplexity",
                             "rouge-n", "similar", "starts-with"})
DEFAULT_SIMILAR_THRESHOLD = 0.8
DEFAULT_CSV_THRESHOLD = 0.75
# Longest names first, so "contains-any" is tried before "contains" (JavaScript would backtrack the same way).
_GRAMMAR = re.compile(r"^(not-)?(" + "|".join(re.escape(t) for t in sorted(ASSERTION_TYPES + CHORUS_TYPES, key=len,
                                                                        reverse=True))
                      + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")


def _is_js_file(path: str) -> bool:
    return bool(re.search(r"\.(js|cjs|mjs|ts|cts|mts)(:\w+)?$", path))


def assertion_from_string(expected: str) -> dict:
    """The assertion (promptfoo's dict shape: type, value, threshold) a CSV cell stands for."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix):].strip()}
    if expected.startswith("file://") and _is_js_file(expected[7:]):  # kept whole, as promptfoo 0.123.1 does (a
        return {"type": "javascript", "value": expected.strip()}  # .py file loses its file://, as there, too)
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected[len(prefix):]}
    if expected.startswith("python:"):
        return {"type": "python", "value": expected[7:].strip()}
    if expected.startswith("file://") and (expected.endswith(".py") or ".py:" in expected):
        return {"type": "python", "value": expected[7:].strip()}
    match = _GRAMMAR.match(expected)
    if not match:
        return {"type": "equals", "value": expected}
    negated, kind, threshold_text, value = match.groups()
    full = f"not-{kind}" if negated else kind
    if kind in ARRAY_TYPES:
        return {"type": full, "value": [item.strip() for item in value.split(",")] if value else value}
    if kind in RAW_VALUE_TYPES:
        return {"type": full, "value": value}
    if kind in CHORUS_TYPES:  # the check's own default threshold when none is written
        threshold = {"threshold": float(threshold_text)} if threshold_text else {}
        return {"type": full, "value": value.strip() if value is not None else None, **threshold}
    if kind in THRESHOLD_TYPES:
        threshold = float(threshold_text) if threshold_text else None
        if threshold is None:
            threshold = DEFAULT_SIMILAR_THRESHOLD if kind == "similar" else DEFAULT_CSV_THRESHOLD
        return {"type": full, "value": value.strip() if value is not None else None, "threshold": threshold}
    return {"type": full, "value": value.strip() if value is not None else None}


def split_values(value: str) -> list[str]:
    """Fields of "a, b, \\"c, d\\"": commas split, double quotes group (with \\" and "" escapes), blanks and
    repeated commas are skipped. Raises ValueError for an unterminated or misplaced quote."""
    fields: list[str] = []
    i, n = 0, len(value)
    while i < n:
        while i < n and (value[i].isspace() or value[i] == ","):
            i += 1
        if i >= n:
            break
        if value[i] == '"':
            i += 1
            field, closed = [], False
            while i < n:
                if value[i] == "\\" and i + 1 < n and value[i + 1] in '"\\':
                    field.append(value[i + 1])
                    i += 2
                elif value[i] == '"' and i + 1 < n and value[i + 1] == '"':
                    field.append('"')
                    i += 2
                elif value[i] == '"':
                    i += 1
                    closed = True
                    break
                else:
                    field.append(value[i])
                    i += 1
            if not closed:
                raise ValueError("Unterminated quoted field in contains assertion value")
            fields.append("".join(field))
            while i < n and value[i].isspace():
                i += 1
            if i < n and value[i] != ",":
                raise ValueError("Expected comma after quoted field in contains assertion value")
        else:
            start = i
            while i < n and value[i] != ",":
                i += 1
            fields.append(value[start:i].strip())
    return fields
