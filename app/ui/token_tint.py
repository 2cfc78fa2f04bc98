"""How token probabilities look: the colour bands, the legend, the alternatives popup, and where each token's
text sits in a reply.

Low-confidence tokens stand out (red for < 10 %); confident ones are barely tinted, so a reply stays readable.
"""

from __future__ import annotations

import html
import math

from PySide6.QtGui import QColor

from app.engine.logprobs import TokenLogprob

# (lowest probability, background, legend text), most confident first.
BANDS = ((0.9, QColor("#ecfdf5"), "≥90%"), (0.5, QColor("#fef9c3"), "50–90%"),
         (0.1, QColor("#fed7aa"), "10–50%"), (0.0, QColor("#fecaca"), "<10%"))


def color_for(probability: float) -> QColor:
    for low, color, _ in BANDS:
        if probability >= low:
            return color
    return BANDS[-1][1]


def legend_html() -> str:
    swatches = "".join(f"<span style='background:{color.name()}'>&nbsp;{html.escape(text)}&nbsp;</span> "
                       for _, color, text in BANDS)
    return f"Token probability: {swatches}"


def shown(text: str) -> str:
    """A token's text, readable in a list: spaces and newlines made visible."""
    return html.escape(text.replace("\n", "⏎").replace(" ", "␣")) or "∅"


def alternatives_html(entry: TokenLogprob) -> str:
    rows = "".join(f"<tr><td>{'▶' if token == entry.token_id else ''}</td><td><code>{shown(text)}</code></td>"
                   f"<td align='right'>{_percent(logprob)}</td></tr>" for token, text, logprob in entry.top)
    chosen = (f"<br>chosen: <code>{shown(entry.text)}</code> {_percent(entry.logprob)}"
              if entry.token_id not in {t for t, _, _ in entry.top} else "")
    return (f"<b><code>{shown(entry.text)}</code></b> {_percent(entry.logprob)}"
            f"<table cellspacing='4'>{rows}</table>{chosen}")


def _percent(logprob: float) -> str:
    p = math.exp(logprob) * 100
    return f"{p:.1f} %" if p >= 0.1 else "< 0.1 %"


def token_spans(text: str, prefix: str, entries: list[TokenLogprob]) -> list[tuple[int, int, int]]:
    """(start, end, token index) of each token's piece in a reply `text` that starts with `prefix` (a branch's,
    which has no probabilities). Stops at the first piece that is not where expected (a stop string cut the
    text, or a character split across tokens), so a span never covers the wrong characters."""
    spans, position = [], len(prefix)
    for index, entry in enumerate(entries):
        if not entry.text:  # a control token shows nothing
            continue
        end = position + len(entry.text)
        if text[position:end] != entry.text:
            break
        spans.append((position, end, index))
        position = end
    return spans
