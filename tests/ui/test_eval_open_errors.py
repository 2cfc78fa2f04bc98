"""File → Open evaluation… with files that cannot be read: each is a message naming the file (and line), the
window keeps what it had, nothing escapes as an exception."""

import yaml


def write_config(tmp_path, config: dict):
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_broken_var_files_and_files_that_are_not_utf8_are_messages(window, tmp_path):
    (tmp_path / "vars.yaml").write_text("city: [Paris\n", encoding="utf-8")
    (tmp_path / "tests.csv").write_bytes("city\nMontr\xe9al\n".encode("cp1252"))
    config = {"prompts": ["{{city}}"], "providers": ["echo"],
              "tests": [{"vars": {"city": "file://vars.yaml"}}, "file://tests.csv"]}
    assert not window.evals.open_config(write_config(tmp_path, config), run=False)
    assert window.session.evaluation is None
    message = window.messages[-1]
    assert "vars.yaml: not valid YAML/JSON" in message and "tests.csv:2: not UTF-8 (byte 0xe9" in message, message
    assert message.endswith("Nothing was changed.")


def test_a_config_that_cannot_be_read_at_all_is_a_message(window, tmp_path):
    (tmp_path / "folder.yaml").mkdir()
    assert not window.evals.open_config(tmp_path / "folder.yaml", run=False)
    assert "folder.yaml" in window.messages[-1] and window.session.evaluation is None
