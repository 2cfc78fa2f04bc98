"""The constrained-output workloads: a grammar and a JSON schema whose output never has to end.

The throughput requests generate a fixed count of tokens with end-of-generation banned, so both constraints must
allow long output: the grammar any run of letters and punctuation, the schema an array of at least 20 objects
(four typed fields each, one an enum), which 96 tokens never finish.
"""

from __future__ import annotations

FREE_GRAMMAR = "root ::= [a-zA-Z .,]*"

BENCH_SCHEMA = {
    "type": "array",
    "minItems": 20,
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string", "maxLength": 16},
            "price": {"type": "number"},
            "kind": {"enum": ["book", "tool", "food", "toy"]},
        },
        "required": ["id", "name", "price", "kind"],
        "additionalProperties": False,
    },
}


def constrained_tps(model_path, prompts: list[str], max_tokens: int, threads: int, n_ctx: int) -> dict[str, float]:
    """Steady decode t/s of the same N requests as free text, under FREE_GRAMMAR and under BENCH_SCHEMA, run back
    to back (so the ratios compare runs minutes apart at most: a busy host hits the three alike)."""
    from app.bench.scenarios import engine_decode_tps

    args = (model_path, prompts, max_tokens, threads, n_ctx)
    return {"free": engine_decode_tps(*args),
            "grammar": engine_decode_tps(*args, request_fields={"grammar": FREE_GRAMMAR}),
            "json_schema": engine_decode_tps(*args, request_fields={"json_schema": BENCH_SCHEMA})}
