"""promptfoo's `cost` assertion (src/assertions/cost.ts) on the prices a provider's config gives.

A provider's `config.cost` prices every token, `inputCost` / `outputCost` the prompt's and the reply's (each wins
over `cost`), in dollars per token, as promptfoo's calculateCost reads them. A cell's cost is prompt tokens ×
input price + generated tokens × output price. Chorus keeps no price tables: without prices in the config there
is no cost, and the check is an ERROR with promptfoo's message for a provider that reports none (promptfoo would
use its table price for a known remote model; the output here did not come from that model). `echo` and a given
output (`providerOutput`) cost 0, as in promptfoo.

Verdict (promptfoo 0.123.1): a `threshold` is required (else an ERROR); it passes when cost ≤ threshold
(`not-cost`: cost > threshold), score 1 / 0; the reason shows the cost to two significant digits.
"""

from __future__ import annotations

import math

from app.evaluate.check_types import CheckError, Output, verdict
from app.evaluate.errors import Problems
from app.evaluate.templates import js_string
from app.session.evaluation import Assertion, GradingResult


def prices(config: dict, where: str, problems: Problems) -> dict | None:
    """{input, output} dollars per token from the config, or None unless both directions are priced."""
    found = {}
    for key in ("cost", "inputCost", "outputCost"):
        value = config.get(key)
        if key in config and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            problems.add(f"{where}.config.{key}", f"a price per token is a number of dollars ≥ 0, got {value!r}")
        elif key in config:
            found[key] = float(value)
    input_cost, output_cost = found.get("inputCost", found.get("cost")), found.get("outputCost", found.get("cost"))
    return None if input_cost is None or output_cost is None else {"input": input_cost, "output": output_cost}


def cell_cost(priced: dict | None, prompt_tokens: int, generated_tokens: int) -> float | None:
    if priced is None:
        return None
    return priced["input"] * prompt_tokens + priced["output"] * generated_tokens


def of_cell(variant, case, cell) -> float | None:
    """A cell's cost in dollars: 0 for echo and a given output, else from its provider's prices (None: none)."""
    if variant.target.kind == "echo" or case.provider_output is not None:
        return 0.0
    return cell_cost(variant.prices, cell.prompt_tokens, cell.generated_tokens)


def to_precision(x: float, digits: int) -> str:
    """JavaScript's Number.prototype.toPrecision."""
    if x == 0:
        return "0" if digits == 1 else "0." + "0" * (digits - 1)
    rounded = float(f"{x:.{digits - 1}e}")
    exponent = math.floor(math.log10(abs(rounded)))
    if exponent < -6 or exponent >= digits:
        mantissa, _e, _rest = f"{x:.{digits - 1}e}".partition("e")
        return f"{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"
    return f"{x:.{max(digits - 1 - exponent, 0)}f}"


def check_cost(a: Assertion, value, out: Output, inverse: bool) -> GradingResult:
    if a.threshold is None:
        raise CheckError("Cost assertion must have a threshold")
    if out.cost is None:
        raise CheckError("Cost assertion does not support providers that do not return cost")
    passed = (out.cost <= a.threshold) != inverse
    relation = "less than or equal to" if inverse else "greater than"
    return verdict(passed, f"Cost {to_precision(out.cost, 2)} is {relation} threshold {js_string(a.threshold)}", a)
