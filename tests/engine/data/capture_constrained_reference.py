"""Record what the engine generates under GBNF grammars (greedy and seeded top-k sampling) on the embedded model.

The file it writes, tests/engine/data/constrained_reference.json, was captured with the engine's earlier
implementation (llama.cpp's grammar sampler first in every request's chain); tests/engine/test_constrained.py checks
that today's engine gives the same tokens. A canary (one unconstrained greedy request) is recorded beside them:
where this build's numerics differ (another CPU, another llama.cpp), the canary differs and the file does not
apply. Run: `python tests/engine/data/capture_constrained_reference.py [OUT.json]`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from app.engine import Engine, EngineConfig, GenerationRequest, SamplingParams
from app.models import default_model_path

OUT = Path(__file__).resolve().parents[1] / "tests" / "engine" / "data" / "constrained_reference.json"

JSON_GBNF = r'''root ::= "{" space name-kv "," space age-kv "," space city-kv "}" space
name-kv ::= "\"name\"" space ":" space string
age-kv ::= "\"age\"" space ":" space integer
city-kv ::= "\"city\"" space ":" space string
string ::= "\"" char{0,24} "\"" space
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) space
space ::= | " " | "\n" [ \t]{0,20}
'''

# (name, user message, grammar, max_tokens)
GRAMMARS = [
    ("letters", "Tell me about rivers.", "root ::= [a-zA-Z .,]*", 40),
    ("yes-no", "Is the sky blue? Answer yes or no.", 'root ::= "yes" | "no"', 8),
    ("date", "When did the Second World War end? Give the date.", 'root ::= [0-9]{4} "-" [0-9]{2} "-" [0-9]{2}', 16),
    ("list", "Name some fruits.", 'root ::= item (", " item){2,4} "."\nitem ::= [a-z]+ (" " [a-z]+)?', 40),
    ("answer", "What is 12 times 12?", 'root ::= "The answer is " [0-9]+ "."', 16),
    ("json", "Describe a person as JSON.", JSON_GBNF, 60),
    ("arith", "Write a sum and its result.", 'root ::= expr " = " num\nexpr ::= num ((" + " | " - ") num)*\n'
                                             'num ::= [0-9]+', 24),
    ("csv", "List three cities and their populations.",
     'root ::= line line line\nline ::= [A-Za-z ]+ "," [0-9]+ "\\n"', 48),
]
SEEDED = [SamplingParams(temperature=0.8, seed=seed) for seed in (1, 2)]  # top-k 40, top-p 0.95, min-p 0.05
PENALISED = SamplingParams(temperature=0.0, repeat_penalty=1.3)
CANARY = GenerationRequest(messages=[{"role": "user", "content": "Tell me about rivers."}], max_tokens=24,
                           sampling=SamplingParams(temperature=0.0))


def cases() -> list[dict]:
    """Every recorded request as plain data (tests rebuild the GenerationRequest with `request()`)."""
    out = []
    for name, message, grammar, max_tokens in GRAMMARS:
        samplings = [("greedy", SamplingParams(temperature=0.0))] + [(f"seed{s.seed}", s) for s in SEEDED]
        if name in ("letters", "list"):
            samplings.append(("penalised", PENALISED))
        for label, sampling in samplings:
            out.append({"name": f"{name}/{label}", "message": message, "grammar": grammar, "max_tokens": max_tokens,
                        "sampling": {k: getattr(sampling, k) for k in ("temperature", "top_k", "top_p", "min_p",
                                                                         "repeat_penalty", "seed")}})
    return out


def request(case: dict) -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": case["message"]}], grammar=case["grammar"],
                             max_tokens=case["max_tokens"], sampling=SamplingParams(**case["sampling"]))


def main(out: Path) -> None:
    with Engine(EngineConfig(model_path=default_model_path(), n_slots=4, n_ctx_per_slot=512)) as engine:
        canary = engine.submit(CANARY).result(timeout=120)
        recorded = cases()
        handles = [engine.submit(request(case)) for case in recorded]
        for case, handle in zip(recorded, handles, strict=True):
            result = handle.result(timeout=600)
            assert result.finish_reason in ("stop", "length"), (case["name"], result.error)
            case.update(token_ids=result.token_ids, text=result.text, finish_reason=result.finish_reason)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"canary": {"token_ids": canary.token_ids, "text": canary.text}, "cases": recorded},
                              indent=1) + "\n")
    print(f"wrote {len(recorded)} cases to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
