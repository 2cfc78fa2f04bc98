"""promptfoo's video vars: a `file://` var with a video extension becomes a data URL (as promptfoo loads it), and
a chat prompt's `video_url` part carries it; a file that is not a video is named with its test and var; a cell
opened as a pane shows the video on its message."""

import json

import pytest
import yaml

from app.evaluate import cells, load_config
from app.evaluate.errors import ConfigError
from app.evaluate.panes import cell_pane
from app.session import images
from tests.fixtures.video_files import data_url, sample_video

CHAT = [{"role": "user", "content": [{"type": "text", "text": "What moves in {{what}}?"},
                                     {"type": "video_url", "video_url": {"url": "{{film}}"}}]}]
SERVER = {"id": "openai:chat:omni", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}


def _config(tmp_path, tests):
    (tmp_path / "chat.json").write_text(json.dumps(CHAT))
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump({"prompts": ["file://chat.json"], "providers": [SERVER], "tests": tests}))
    return path


def test_a_file_video_var_is_sent_as_a_video_url_part_and_opens_on_a_pane(tmp_path):
    film = sample_video(0, seconds=0.5)
    (tmp_path / "walk.mkv").write_bytes(film)
    evaluation = load_config(_config(tmp_path, [{"vars": {"what": "this", "film": "file://walk.mkv"}}])).evaluation()
    request = cells.prepare(evaluation, evaluation.cell(0, 0)).request
    text, video = request.messages[0]["content"]
    assert text == {"type": "text", "text": "What moves in this?"}
    assert video == {"type": "video_url", "video_url": {"url": data_url(film)}}
    pane = cell_pane(evaluation, evaluation.cell(0, 0), "local")
    assert pane.draft == "What moves in this?" and [images.data(r) for r in pane.draft_images] == [film]
    assert pane.draft_images[0].is_video


def test_a_bad_video_var_is_named_with_its_test_and_var(tmp_path):
    (tmp_path / "notes.mp4").write_text("words")
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, [{"vars": {"what": "it", "film": "file://notes.mp4"}}]))
    message = str(caught.value)
    assert "tests[0].vars.film" in message and "notes.mp4 is not an image or clip" in message, message
