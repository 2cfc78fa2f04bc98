"""TextStream: whole characters only, and stop strings never leak, however the bytes are split."""

from app.engine.text import TextStream


def feed_all(stream: TextStream, pieces: list[bytes]) -> str:
    out = "".join(stream.feed(p) for p in pieces)
    return out + stream.finish()


def test_character_split_across_tokens_arrives_whole():
    data = "日本🙂".encode()
    stream = TextStream()
    outputs = [stream.feed(data[i:i + 1]) for i in range(len(data))]
    assert "".join(outputs) == "日本🙂"
    assert all("\ufffd" not in o for o in outputs)
    assert outputs[0] == "" and outputs[2] == "日"  # nothing until the third byte completes the character


def test_stop_string_split_over_pieces_is_never_emitted():
    stream = TextStream(("STOP",))
    emitted = [stream.feed(p) for p in [b"hello S", b"T", b"O", b"P and more"]]
    assert "".join(emitted) == "hello "
    assert stream.stopped and stream.text == "hello "
    assert stream.feed(b"later") == "" and stream.finish() == ""


def test_held_prefix_is_released_when_it_cannot_become_a_stop():
    stream = TextStream(("\n\n",))
    assert stream.feed(b"line\n") == "line"
    assert stream.feed(b"next") == "\nnext"
    assert not stream.stopped


def test_earliest_of_several_stops_wins():
    assert feed_all(TextStream(("bb", "a")), [b"xxabb"]) == "xx"


def test_finish_releases_held_prefix_but_drops_an_incomplete_character():
    stream = TextStream(("END",))
    assert stream.feed(b"done E") == "done "
    assert stream.feed("é".encode()[:1]) == ""
    assert stream.finish() == "E"
    assert stream.text == "done E"
