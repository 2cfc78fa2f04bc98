"""How token probabilities look: the colour bands, the legend, the alternatives popup, and where each token's
text sits in a reply. The same bands, by KL divergence instead of probability, tint a quantization's tokens
(`kld_color`, `kld_legend_html`): the closer to the reference, the fainter.

Low-confidence tokens stand out (red for < 10 %); confident ones are barely tinted, so a reply stays readable.
Each band's background is the text area's base colour moved part of the way towards the band's hue
(app/ui/theme.py), so the text keeps its contrast in a light and a dark theme alike.
"""

from __future__ import annotations

import html
import math

from PySide6.QtGui import QColor, QPalette

from app.engine.sampling.logprobs import TokenLogprob
from app.ui.theme import blend

# (lowest probability, hue, how far the background moves towards the hue, legend text), most confident first.
BANDS = ((0.9, "#10b981", 0.10, "≥90%"), (0.5, "#eab308", 0.25, "50–90%"),
         (0.1, "#f97316", 0.35, "10–50%"), (0.0, "#ef4444", 0.40, "<10%"))
# (highest KL divergence in nats, hue, amount, legend text), closest to the reference first: the same hues.
KLD_BANDS = ((0.001, BANDS[0][1], 0.0, "<0.001"), (0.01, BANDS[0][1], 0.10, "0.001–0.01"),
             (0.1, BANDS[1][1], 0.25, "0.01–0.1"), (1.0, BANDS[2][1], 0.35, "0.1–1"),
             (math.inf, BANDS[3][1], 0.40, "≥1"))


def color_for(probability: float, base: QColor) -> QColor:
    """The background of a token with this probability, on a text area whose base colour is `base`."""
    for low, hue, amount, _ in BANDS:
        if probability >= low:
            return blend(base, hue, amount)
    return blend(base, BANDS[-1][1], BANDS[-1][2])


def kld_color(kld: float, base: QColor) -> QColor:
    """The background of a token whose KL divergence from the reference is `kld`."""
    hue, amount = next(((hue, amount) for high, hue, amount, _ in KLD_BANDS if kld < high), KLD_BANDS[-1][1:3])
    return blend(base, hue, amount)


def _swatches(bands, base: QColor, text: str) -> str:
    return "".join(f"<span style='background:{blend(base, hue, amount).name()}; color:{text}'>"
                   f"&nbsp;{html.escape(label)}&nbsp;</span> " for _, hue, amount, label in bands)


def legend_html(palette: QPalette) -> str:
    """The bands on the conversation's base colour (conversation_view.py draws on AlternateBase)."""
    base, text = palette.color(QPalette.AlternateBase), palette.color(QPalette.Text).name()
    return f"Token probability: {_swatches(BANDS, base, text)}"


def kld_legend_html(palette: QPalette) -> str:
    """The KLD bands on a text area's base colour."""
    return f"KLD per token: {_swatches(KLD_BANDS, palette.color(QPalette.Base), palette.color(QPalette.Text).name())}"


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
