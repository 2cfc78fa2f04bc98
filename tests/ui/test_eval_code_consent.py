"""An evaluation whose config runs code asks first, on the window's consent bar (the one MCP servers use), naming
its files and inline checks: not now, nothing runs; agreed, its javascript and python checks run (echo cells: no
model)."""

import yaml

from app.session.consent import CODE, MCP, Ask
from tests.ui.conftest import wait_until

CONFIG = {"prompts": ["Say {{word}}"], "providers": ["echo"],
          "tests": [{"vars": {"word": "dog"}, "assert": [{"type": "javascript", "value": "output.endsWith('dog')"},
                                                         {"type": "python", "value": "file://check.py"}]}]}


def test_code_runs_only_after_the_user_agreed(window, loop, tmp_path):
    (tmp_path / "check.py").write_text("def get_assert(output, context):\n    return 'dog' in output\n",
                                       encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(CONFIG), encoding="utf-8")
    bar = window.consent_bar
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    asked = bar.text.text()
    assert bar.isVisible() and bar.current.kind == CODE and bar.agree_button.text() == "Run it"
    assert str(tmp_path / "check.py") in asked and "javascript assertion (inline): output.endsWith('dog')" in asked
    assert not window.evals.running and all(cell.status == "pending" for cell in evaluation.cells)

    bar.later_button.click()  # not now: nothing runs, and Run asks again
    assert not bar.isVisible() and not window.evals.running
    assert all(cell.status == "pending" for cell in evaluation.cells)
    window.evals.run()
    assert bar.isVisible() and bar.current.kind == CODE

    bar.agree_button.click()  # agreed: the evaluation runs
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    (cell,) = evaluation.cells
    assert cell.status == "pass", (cell.error, cell.grading)
    window.evals.run_again()  # the same code: not asked again
    assert not bar.isVisible()
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    assert evaluation.cells[0].status == "pass"


def test_questions_wait_their_turn_and_one_of_a_kind_replaces_the_unanswered_one(window):
    bar, answered = window.consent_bar, []
    bar.ask(Ask(MCP, "servers", ("a: run-a",), "Start them", lambda: answered.append("mcp")))
    bar.ask(Ask(CODE, "code", ("• x.py",), "Run it", lambda: answered.append("code 1")))
    bar.ask(Ask(CODE, "code", ("• y.py",), "Run it", lambda: answered.append("code 2")))  # replaces x.py
    assert bar.text.text() == "servers\na: run-a\n(then 1 more question)" and bar.agree_button.text() == "Start them"
    bar.agree_button.click()
    assert bar.text.text() == "code\n• y.py" and bar.agree_button.text() == "Run it"
    bar.agree_button.click()
    assert answered == ["mcp", "code 2"] and not bar.isVisible()


def test_a_cell_whose_vars_need_code_opens_as_a_pane_only_after_it_ran(window, tmp_path):
    (tmp_path / "check.py").write_text("def get_assert(output, context):\n    return True\n", encoding="utf-8")
    config = {**CONFIG, "defaultTest": {"options": {"transformVars": "({word: vars.word.toUpperCase()})"}}}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert window.evals.open_config(path, run=False), window.messages
    (cell,) = window.session.evaluation.cells
    assert window.evals.open_cell(cell) is None  # a message, not an exception out of the window's handler
    assert "transformVars runs code" in window.messages[-1]


def test_web_hooks_to_another_computer_are_asked_about_first(window, loop, tmp_path):
    """A webhook runs no code, but sends outputs, prompts and vars away: the window names the address and asks
    (a hook on this computer is not asked about). Not now, nothing is sent."""
    config = {"prompts": ["Say {{word}}"], "providers": ["echo"],
              "tests": [{"vars": {"word": "dog"}, "assert": [
                  {"type": "webhook", "value": "https://hooks.example.com/grade"},
                  {"type": "webhook", "value": "http://127.0.0.1:9/local"}]}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    bar = window.consent_bar
    assert window.evals.open_config(path), window.messages
    assert bar.isVisible() and bar.agree_button.text() == "Send them"
    assert "• https://hooks.example.com/grade" in bar.text.text() and "127.0.0.1" not in bar.text.text()
    bar.later_button.click()
    assert all(cell.status == "pending" for cell in window.session.evaluation.cells)
    assert not window.evals.running


def test_the_window_asks_before_an_exec_prompt_or_a_template_filter_runs(window, loop, tmp_path):
    import stat

    marker = tmp_path / "ran"
    script = tmp_path / "make.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho 'say {{{{ word | up }}}}'\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "up.js").write_text("module.exports = s => s.toUpperCase();", encoding="utf-8")
    config = {"prompts": ["exec:./make.sh"], "providers": ["echo"], "nunjucksFilters": {"up": "up.js"},
              "tests": [{"vars": {"word": "dog"}}]}
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    bar = window.consent_bar
    assert window.evals.open_config(path), window.messages
    evaluation = window.session.evaluation
    asked = bar.text.text()
    assert bar.isVisible() and bar.current.kind == CODE
    assert f"the command {script}" in asked and f"nunjucks filter up: the file {tmp_path / 'up.js'}" in asked
    assert not marker.exists() and all(cell.status == "pending" for cell in evaluation.cells)
    bar.agree_button.click()
    wait_until(loop, lambda: not window.evals.running and not evaluation.unfinished(), timeout=60)
    assert marker.exists() and evaluation.cells[0].output == "say DOG"
