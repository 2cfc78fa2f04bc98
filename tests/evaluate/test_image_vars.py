"""promptfoo's image vars: a `file://` var with an image extension becomes `data:<mime>;base64,...` (promptfoo's
renderPrompt), and a chat prompt's `image_url` part carries it as an OpenAI part; a bad image is named with its
test and var; a cell opened as a pane shows the image on its message."""

import base64
import json

import pytest
import yaml

from app.evaluate import cells, load_config
from app.evaluate.errors import ConfigError
from app.evaluate.panes import cell_pane
from app.session import images
from tests.fixtures.images import png, write_png

CHAT = [{"role": "user", "content": [{"type": "text", "text": "What colour is {{thing}}?"},
                                     {"type": "image_url", "image_url": {"url": "{{image}}"}}]}]
SERVER = {"id": "openai:chat:vlm", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}


def _config(tmp_path, tests):
    (tmp_path / "chat.json").write_text(json.dumps(CHAT))
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump({"prompts": ["file://chat.json"], "providers": [SERVER], "tests": tests}))
    return path


def test_a_file_image_var_is_sent_as_a_data_url_part(tmp_path):
    write_png(tmp_path / "red.png")
    evaluation = load_config(_config(tmp_path, [{"vars": {"thing": "this", "image": "file://red.png"}}])).evaluation()
    request = cells.prepare(evaluation, evaluation.cell(0, 0)).request
    text, image = request.messages[0]["content"]
    assert text == {"type": "text", "text": "What colour is this?"}
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png()).decode()
    pane = cell_pane(evaluation, evaluation.cell(0, 0), "local")
    assert pane.draft == "What colour is this?" and [images.data(r) for r in pane.draft_images] == [png()]


def test_a_bad_image_var_is_named_with_its_test_and_var(tmp_path):
    (tmp_path / "notes.png").write_text("words")
    with pytest.raises(ConfigError) as caught:
        load_config(_config(tmp_path, [{"vars": {"thing": "it", "image": "file://notes.png"}},
                                       {"vars": {"thing": "it", "image": "file://gone.jpg"}}]))
    message = str(caught.value)
    assert "tests[0].vars.image" in message and "notes.png is not an image" in message, message
    assert "tests[1].vars.image" in message and "gone.jpg" in message


def test_the_html_report_shows_an_image_var_as_a_thumbnail(tmp_path):
    from app.evaluate.reports import to_html

    write_png(tmp_path / "red.png")
    evaluation = load_config(_config(tmp_path, [{"vars": {"thing": "this", "image": "file://red.png"}}])).evaluation()
    page = to_html(evaluation)
    assert "<img class='thumb' alt='image' src='data:image/png;base64," in page
