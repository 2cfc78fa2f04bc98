"""Prompt templates render as promptfoo's Nunjucks does, inside Jinja2's sandbox."""

from app.evaluate import templates


def test_undefined_renders_empty_and_values_print_as_javascript():
    assert templates.render("[{{ missing }}|{{ missing.deep.attr }}|{{ missing | upper }}]", {}) == "[||]"
    assert templates.render("{{ t }} {{ f }} {{ i }} {{ n }} {{ o }}",
                            {"t": True, "f": 2.0, "i": 3, "n": None, "o": {"a": [1, 2]}}) == 'true 2 3  {"a":[1,2]}'


def test_filters_and_trailing_newline():
    assert templates.render("{{ x | dump }}|{{ (s | load).k }}", {"x": {"a": 1}, "s": '{"k": "v"}'}) == '{"a":1}|v'
    assert templates.render("line\n", {}) == "line\n"  # the template's own newline stays (Nunjucks keeps it)


def test_string_vars_lose_one_trailing_newline_and_references_resolve():
    assert templates.render_prompt("<{{ a }}>", {"a": "text\n\n"}) == "<text\n>"
    assert templates.render_prompt("{{ a }}", {"a": "x {{ b }}", "b": "y {{ c }}", "c": "z"}) == "x y z"


def test_chat_prompts_render_leaf_by_leaf():
    raw = '[{"role": "user", "content": "Say {{ q }}"}]'
    rendered = templates.render_prompt(raw, {"q": 'the "word"\nplease'})
    assert rendered == '[\n  {\n    "role": "user",\n    "content": "Say the \\"word\\"\\nplease"\n  }\n]'
    assert templates.chat_messages(rendered) == [{"role": "user", "content": 'Say the "word"\nplease'}]
    assert templates.chat_messages("plain [text]") is None
    assert templates.chat_messages('[1, 2]') is None


def test_the_sandbox_keeps_templates_away_from_python():
    assert templates.render("{{ ''.__class__.__mro__ }}", {}) == ""
    assert templates.render("{{ x.__init__.__globals__ }}", {"x": templates}) == ""
    try:
        templates.render("{{ x.mro() }}", {"x": int})
        raise AssertionError("the sandbox let a template call a method of a class")
    except templates.TemplateProblem as exc:
        assert "unsafe" in str(exc) or "access" in str(exc) or "not safely callable" in str(exc)
    assert templates.check("{{ oops") is not None and templates.check("{{ fine }}") is None
