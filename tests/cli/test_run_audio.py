"""`run` JSONL lines with audio parts (OpenAI's `input_audio`): base64 data goes as it is, a `path` (relative to the
JSONL) is read and sent as base64 with its format and name; a missing file or bad base64 is named with its line,
and the other lines still run. A server gets the parts without the names Chorus keeps."""

import base64
import json

from app.backends.server_params import create_arguments
from app.cli.inputs import open_input
from tests.fixtures.audio_gguf import encode, sample_clip


def test_audio_parts_in_run_lines_are_read_and_bad_ones_named_with_their_line(tmp_path):
    (tmp_path / "clips").mkdir()
    clip = encode(sample_clip(0))
    (tmp_path / "clips" / "tone.wav").write_bytes(clip)
    data = base64.b64encode(clip).decode()

    def line(audio):
        return json.dumps({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is this?"}, {"type": "input_audio", "input_audio": audio}]}]})

    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join([line({"path": "clips/tone.wav"}), line({"data": data, "format": "wav"}),
                                line({"path": "clips/gone.flac"}), line({"data": "not base64!", "format": "wav"}),
                                line({"format": "wav"})]) + "\n")
    items, total, _ = open_input(jsonl)
    items = list(items)
    assert total == 5
    sent = items[0].request.messages[0]["content"][1]["input_audio"]
    assert (base64.b64decode(sent["data"]), sent["format"], sent["name"]) == (clip, "wav", "tone.wav")
    assert items[1].error is None and items[1].request.messages[0]["content"][1]["input_audio"]["data"] == data
    assert items[2].error.startswith("line 3: messages[0].content[1]: audio clip not found:")
    assert "gone.flac" in items[2].error
    assert items[3].error.startswith("line 4: messages[0].content[1]: input_audio data is not base64")
    assert items[4].error.startswith(
        "line 5: messages[0].content must be a string or a list of text, image, audio and video")
    _, arguments = create_arguments(items[0].request, "m", "llama.cpp")
    assert arguments["messages"][0]["content"][1] == {"type": "input_audio",
                                                      "input_audio": {"data": sent["data"], "format": "wav"}}
