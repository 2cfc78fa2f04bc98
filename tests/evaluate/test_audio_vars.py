"""promptfoo's audio vars: a `file://` var with an audio extension becomes the file's base64 (as promptfoo loads
it), and a chat prompt's `input_audio` part carries it; a file that is not a clip is named with its test and var;
a cell opened as a pane shows the clip on its message."""

import base64
import json

import pytest
import yaml

from app.evaluate import cells, load_config
from app.evaluate.errors import ConfigError
from app.evaluate.panes import cell_pane
from app.session import images
from tests.fixtures.audio_gguf import encode, sample_clip

CHAT = [{"role": "user", "content": [{"type": "text", "text": "Transcribe {{what}}."},
                                     {"type": "input_audio", "input_audio": {"data": "{{clip}}", "format": "wav"}}]}]
SERVER = {"id": "openai:chat:omni", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}


def _config(tmp_path, tests, chat=CHAT):
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump({"prompts": ["file://chat.json"], "providers": [SERVER], "tests": tests}))
    return path


def test_a_file_audio_var_is_sent_as_an_input_audio_part_and_opens_on_a_pane(tmp_path):
    wav = encode(sample_clip(0))
    (tmp_path / "tone.wav").write_bytes(wav)
    evaluation = load_config(_config(tmp_path, [{"vars": {"what": "this", "clip": "file://tone.wav"}}])).evaluation()
    request = cells.prepare(evaluation, evaluation.cell(0, 0)).request
    text, audio = request.messages[0]["content"]
    assert text == {"type": "text", "text": "Transcribe this."}
    assert audio == {"type": "input_audio", "input_audio": {"data": base64.b64encode(wav).decode(), "format": "wav"}}
    pane = cell_pane(evaluation, evaluation.cell(0, 0), "local")
    assert pane.draft == "Transcribe this." and [images.data(r) for r in pane.draft_images] == [wav]
    assert pane.draft_images[0].is_audio


def test_a_bad_audio_var_is_named_with_its_test_and_var(tmp_path):
    (tmp_path / "notes.wav").write_text("words")
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, [{"vars": {"what": "it", "clip": "file://notes.wav"}}]))
    message = str(caught.value)
    assert "tests[0].vars.clip" in message and "notes.wav is not an image or clip" in message, message
