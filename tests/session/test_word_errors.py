"""The word error rate (app/session/word_errors.py) on known pairs, and the comparison table's WER column against
each pane's reference text or a reference pane's reply."""

import pytest

from app.session import PaneSpec, Session, table
from app.session.result import PaneResult, RunState
from app.session.word_errors import normalise, word_errors


@pytest.mark.parametrize("reference, reply, counts, rate", [
    ("the cat sat on the mat", "the cat sat on the mat", (6, 0, 0, 0), 0.0),
    ("the cat sat on the mat", "the cat sit on the mat", (6, 1, 0, 0), 1 / 6),  # one substitution
    ("the cat sat on the mat", "the cat on the mat", (6, 0, 1, 0), 1 / 6),  # one deletion
    ("the cat sat on the mat", "the fat cat sat on the mat", (6, 0, 0, 1), 1 / 6),  # one insertion
    ("a b", "c d e f", (2, 2, 0, 2), 2.0),  # above 100 %: every word wrong and more added
    ("Hello, World!  It's   me.", "hello world its me", (4, 0, 0, 0), 0.0),  # case, punctuation, spaces
    ("one\ntwo\tthree", "one two three", (3, 0, 0, 0), 0.0),  # any whitespace separates words
    ("some words", "", (2, 0, 2, 0), 1.0),  # an empty reply: every word deleted
    ("", "", (0, 0, 0, 0), 0.0),  # nothing to say, nothing said
    ("", "hello there", (0, 0, 0, 2), None),  # an empty reference has no rate: no division by zero
    ("?!", "hi", (0, 0, 0, 1), None),  # punctuation only is empty too
])
def test_known_pairs(reference, reply, counts, rate):
    found = word_errors(reference, reply)
    assert (found.reference_words, found.substitutions, found.deletions, found.insertions) == counts
    assert found.rate == (None if rate is None else pytest.approx(rate))


def test_normalisation_and_descriptions():
    assert normalise("Don't STOP — state-of-the-art…") == ["dont", "stop", "stateoftheart"]
    assert word_errors("a b c d", "a x c").describe() == "2 errors in 4 words: 1 substituted, 1 deleted"
    assert word_errors("a", "a").describe() == "0 errors in 1 word"
    assert word_errors("", "x").describe() == "no rate: the reference has no words, the reply has 1 word"


def done(text: str, **fields) -> PaneSpec:
    pane = PaneSpec(**fields)
    pane.result = PaneResult(text=text, state=RunState.DONE, finish_reason="stop")
    return pane


def test_table_against_each_panes_reference_text():
    panes = [done("the cat sat on the mat", reference="The cat sat on the mat."),
             done("the hat sat on a mat", reference="The cat sat on the mat."),
             done("anything", reference=""),  # no reference text: no rate, and the detail says so
             done("words", reference="...")]  # a reference of no words
    Session(panes=panes)
    rows = table.rows(panes, wer=table.REFERENCE)
    assert [r["WER"] for r in rows] == [0.0, pytest.approx(2 / 6), None, None]
    assert rows[1]["WER detail"] == "against its reference text: 2 errors in 6 words: 2 substituted"
    assert rows[2]["WER detail"] == "no reference text"
    assert rows[3]["WER detail"] == "against its reference text: no rate: the reference has no words, the reply " \
                                    "has 1 word"
    assert [r["pane"] for r in table.sort(rows, "WER")] == [1, 2, 3, 4]  # unknown rates last
    assert [r["WER"] for r in table.rows(panes)] == [None] * 4  # not measured unless asked


def test_table_against_a_reference_pane_and_the_columns_it_brings_forward():
    reference = done("one two three four")
    panes = [reference, done("one two three for"), done("")]
    Session(panes=panes)
    rows = table.rows(panes, wer=reference)
    assert [r["WER"] for r in rows] == [0.0, 0.25, 1.0]
    assert rows[1]["WER detail"] == "against Pane 1's reply: 1 error in 4 words: 1 substituted"
    shown = table.columns(panes, wer=True)
    assert shown[shown.index("finish") + 1] == "WER"
    assert table.columns(panes) == table.COLUMNS
    csv = table.to_csv(rows).splitlines()
    at = csv[0].split(",").index("WER")
    assert [line.split(",")[at] for line in csv[1:]] == ["0.0", "0.25", "1.0"]


def test_the_reference_text_is_saved_and_copied_into_variants(tmp_path):
    pane = PaneSpec(title="clip", reference="the transcript")
    Session(panes=[pane]).save(tmp_path / "s.chorus.json")
    assert Session.load(tmp_path / "s.chorus.json").panes[0].reference == "the transcript"
    assert pane.copy().reference == "the transcript"  # variants and sweeps keep the clip's transcript


def test_the_markdown_report_gives_each_reference_text_and_its_rate():
    pane = done("the cat sit on the mat", title="take", reference="The cat sat on the mat.")
    report = Session(panes=[pane, done("no reference")]).to_markdown()
    assert "**Reference text** (word error rate 16.7 %: 1 error in 6 words: 1 substituted):\n\n> The cat sat on " \
           "the mat." in report
    assert report.count("**Reference text**") == 1
