"""`derivedMetrics`: named scores computed from a column's named scores, as promptfoo's evaluator computes them
(src/evaluator.ts, with mathjs's `evaluate`).

For each column (prompt × provider), the named scores are summed over its finished cells (promptfoo's
`metrics.namedScores`); then each derived metric, in the order written, is its expression evaluated over those
sums and the derived metrics before it; one whose expression names a metric no cell has, or fails, stays 0 (as
promptfoo leaves it). A config written in YAML or JSON gives each `value` as a mathjs expression, never a
JavaScript function, so no user code runs here. The expressions read mathjs's arithmetic: numbers, names,
`+ - * / % ^` (`^` is power, right-associative, above unary minus), `mod`, parentheses, and the functions abs,
ceil, exp, floor, log (natural; `log(x, base)`), log10, log2, max, min, pow, round (`round(x, n)`), sqrt, mean,
sum; division by zero gives ±Infinity (NaN for 0/0), as mathjs does. Anything else is a config problem naming
the metric.
"""

from __future__ import annotations

import math
import re
from statistics import fmean

_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z_0-9]*)|(.))")


def _round(x: float, n: float = 0) -> float:
    scale = 10 ** int(n)
    return math.floor(abs(x) * scale + 0.5) / scale * (1 if x >= 0 else -1)


FUNCTIONS = {"abs": abs, "ceil": math.ceil, "exp": math.exp, "floor": math.floor, "log10": math.log10,
             "log2": math.log2, "max": max, "min": min, "pow": math.pow, "sqrt": math.sqrt, "round": _round,
             "log": lambda x, b=None: math.log(x) if b is None else math.log(x) / math.log(b),
             "mean": lambda *xs: fmean(xs), "sum": lambda *xs: math.fsum(xs)}


class ExpressionError(ValueError):
    pass


def _divide(a: float, b: float) -> float:
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b)
    return a / b


class _Parser:
    def __init__(self, text: str):
        self.tokens = [(m.group(1), m.group(2), m.group(3)) for m in _TOKEN.finditer(text) if m.group(0).strip()]
        self.at = 0

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None, None)

    def take(self, symbol: str) -> bool:
        if self.peek()[2] == symbol or (self.peek()[1] == symbol):
            self.at += 1
            return True
        return False

    def parse(self):
        node = self.sum()
        if self.at != len(self.tokens):
            raise ExpressionError(f"unexpected {''.join(t for t in self.peek() if t)!r}")
        return node

    def sum(self):
        node = self.product()
        while self.peek()[2] in ("+", "-"):
            op = self.tokens[self.at][2]
            self.at += 1
            node = ("+" if op == "+" else "-", node, self.product())
        return node

    def product(self):
        node = self.unary()
        while self.peek()[2] in ("*", "/", "%") or self.peek()[1] == "mod":
            op = self.peek()[2] or "%"
            self.at += 1
            node = (op, node, self.unary())
        return node

    def unary(self):
        if self.take("-"):
            return ("neg", self.unary())
        if self.take("+"):
            return self.unary()
        return self.power()

    def power(self):
        node = self.atom()
        if self.take("^"):
            return ("^", node, self.unary())  # right-associative; -2^2 = -4, 2^-1 = 0.5
        return node

    def atom(self):
        number, name, symbol = self.peek()
        self.at += 1
        if number:
            return ("num", float(number))
        if name:
            if self.take("("):
                args = [] if self.take(")") else self._args()
                if name not in FUNCTIONS:
                    raise ExpressionError(f"unknown function {name}")
                return ("call", name, args)
            return ("name", name)
        if symbol == "(":
            node = self.sum()
            if not self.take(")"):
                raise ExpressionError("a parenthesis is not closed")
            return node
        raise ExpressionError(f"unexpected {symbol or 'end'!r}")

    def _args(self):
        args = [self.sum()]
        while self.take(","):
            args.append(self.sum())
        if not self.take(")"):
            raise ExpressionError("a function call is not closed")
        return args


def parse(expression: str):
    """The expression's tree; raises ExpressionError (what is wrong) when mathjs could not read it either."""
    return _Parser(expression).parse()


def _value(node, scores: dict[str, float]) -> float:
    kind = node[0]
    if kind == "num":
        return node[1]
    if kind == "name":
        if node[1] not in scores:
            raise ExpressionError(f"Undefined symbol {node[1]}")
        return scores[node[1]]
    if kind == "neg":
        return -_value(node[1], scores)
    if kind == "call":
        return float(FUNCTIONS[node[1]](*(_value(arg, scores) for arg in node[2])))
    a, b = _value(node[1], scores), _value(node[2], scores)
    if kind == "+":
        return a + b
    if kind == "-":
        return a - b
    if kind == "*":
        return a * b
    if kind == "/":
        return _divide(a, b)
    if kind == "%":
        return math.nan if b == 0 else a - b * math.floor(a / b)
    try:
        return math.pow(a, b)
    except (OverflowError, ValueError):
        return math.inf if a > 0 else math.nan


def apply(metrics, named_sums: dict[str, float]) -> dict[str, float]:
    """The column's named scores with its derived metrics added (see the module)."""
    scores = dict(named_sums)
    for metric in metrics:
        scores.setdefault(metric.name, 0.0)
        try:
            scores[metric.name] = _value(parse(metric.value), scores)
        except (ExpressionError, ArithmeticError, TypeError, ValueError):
            continue  # promptfoo logs it and keeps the value it had
    return scores
