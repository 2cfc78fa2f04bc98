"""promptfoo's video vars: a `file://` var with a video extension becomes a data URL (as promptfoo loads it), and
a chat prompt's `video_url` part carries it; a file that is not a video is named with its test and var; a cell
opened as a pane shows the video on its message."""

import pytest

from app.evaluate import cells, load_config
from app.evaluate.errors import ConfigError
from app.evaluate.panes import cell_pane
from app.session import images
from tests.evaluate.test_audio_vars import _config as audio_config
from tests.fixtures.video_files import data_url, sample_video

CHAT = [{"role": "user", "content": [{"type": "text", "text": "What moves in {{what}}?"},
                                     {"type": "video_url", "video_url": {"url": "{{film}}"}}]}]


def _config(tmp_path, tests):
    return audio_config(tmp_path, tests, CHAT)


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
    with pytest.raises(ConfigError, match=r"(?s)tests\[0\]\.vars\.film.*notes\.mp4 is not an image or clip"):
        load_config(_config(tmp_path, [{"vars": {"what": "it", "film": "file://notes.mp4"}}]))
