"""`run` JSONL lines with image parts: a path (relative to the JSONL) or a data URL becomes a data-URL part; a bad
path or a file that is not an image is named with its line, and the other lines still run."""

import base64
import json

from app.cli.inputs import open_input
from tests.fixtures.images import png, write_png


def test_image_parts_in_run_lines_are_read_and_bad_ones_named_with_their_line(tmp_path):
    (tmp_path / "pics").mkdir()
    write_png(tmp_path / "pics" / "red.png")
    (tmp_path / "notes.png").write_text("words")
    data_url = "data:image/png;base64," + base64.b64encode(png(rgb=(0, 0, 9))).decode()

    def line(url):
        return json.dumps({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": url}}]}]})

    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join([line("pics/red.png"), line(data_url), line("pics/gone.png"), line("notes.png"),
                                line(f"file://{tmp_path / 'pics' / 'red.png'}"), line("https://example.com/a.png"),
                                json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})])
                     + "\n")
    items, total, _ = open_input(jsonl)
    items = list(items)
    assert total == 7
    sent = items[0].request.messages[0]["content"][1]["image_url"]["url"]
    assert base64.b64decode(sent.split(",", 1)[1]) == png() and items[0].error is None
    assert items[1].request.messages[0]["content"][1]["image_url"]["url"] == data_url
    assert items[2].error.startswith("line 3: messages[0].content[1]: image not found:")
    assert "gone.png" in items[2].error
    assert "line 4: messages[0].content[1]: " in items[3].error and "notes.png is not an image" in items[3].error
    assert items[4].error is None and items[4].request.messages[0]["content"][1]["image_url"]["url"] == sent
    assert "line 6" in items[5].error and "web address" in items[5].error
    assert items[6].error.startswith(
        "line 7: messages[0].content must be a string or a list of text, image, audio and video")
