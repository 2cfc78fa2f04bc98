"""ChatTemplate without a server: the sandbox holds, and the llama.cpp behaviours templates rely on are there
(the parity with llama-server itself is tests/backends/test_template_parity.py)."""

from datetime import datetime

import pytest

from app.engine.chat.template.render import ChatTemplate, TemplateError

LOOP = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<a>{% endif %}"
TALK = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


def render(source: str, messages=TALK, **kwargs) -> str:
    return ChatTemplate(source, "<s>", "</s>").render(messages, **kwargs)


@pytest.mark.parametrize("escape", [
    "{{ messages.__class__.__mro__ }}",
    "{{ ''.__class__.__base__.__subclasses__() }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ lipsum.__globals__['os'] }}",
    "{{ self._TemplateReference__context }}",
    "{{ raise_exception.__globals__ }}",
    "{% include '/etc/passwd' %}",
    "{% import 'os' as os %}",
    "{{ messages.clear() }}",
    "{{ messages.pop() }}{{ messages[0].update({'role': 'x'}) }}",
])
def test_a_template_cannot_reach_python_objects_files_or_its_callers_data(escape):
    messages = [dict(m) for m in TALK]
    try:
        out = render(escape, messages)
    except TemplateError:
        out = ""
    assert "class" not in out and "root:" not in out and "module" not in out
    assert messages == TALK


def test_messages_render_with_the_generation_prompt_and_a_system_role():
    assert render(LOOP) == "<system>Be brief.<user>Hi<a>"
    assert render(LOOP, add_generation_prompt=False) == "<system>Be brief.<user>Hi"


def test_a_template_without_a_system_role_gets_it_folded_into_the_first_user_turn():
    source = ("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
              + LOOP)
    assert render(source) == "<user>Be brief.\nHi<a>"


def test_tools_are_undefined_without_tools_and_none_joins_a_string_as_empty():
    source = "{% if tools is defined %}T{% endif %}{{ none + 'x' }}{{ 'y' + undefined_thing }}{{ none }}"
    assert render(source) == "xy"
    assert render(source, tools=[{"type": "function", "function": {"name": "f"}}]).startswith("T")


def test_tojson_is_llama_cpp_s_not_python_s():
    source = "{{ {'b': 1, 'a': [1.5, none, true, 'é']} | tojson }}|{{ {'k': 'é'} | tojson(ensure_ascii=true) }}"
    assert render(source) == '{"b": 1, "a": [1.5, null, true, "é"]}|{"k": "\\u00e9"}'
    assert render("{{ {'a': [1]} | tojson(indent=2) }}") == '{\n  "a": [\n    1\n  ]\n}'


def test_the_date_is_the_one_given_in_the_c_locale():
    source = "{{ strftime_now('%d %b %Y') }}|{{ date_string }}|{{ datetime }}"
    assert render(source, now=datetime(2026, 3, 7)) == "07 Mar 2026|07 Mar 2026|Mar 07 2026"


def test_thinking_follows_the_template_and_the_caller():
    source = "{% if add_generation_prompt %}<a>{% if enable_thinking %}<think>{% endif %}{% endif %}"
    template = ChatTemplate(source, "", "")
    assert template.supports_thinking  # on by default, as llama-server has it for a template that thinks
    assert template.render(TALK) == "<a><think>"
    assert template.render(TALK, enable_thinking=False) == "<a>"
    assert template.render(TALK, extra={"enable_thinking": False}) == "<a>"
    assert ChatTemplate(LOOP + "{{ enable_thinking }}", "", "").render(TALK) == "<system>Be brief.<user>Hi<a>False"


def test_a_leading_bos_is_dropped_when_the_vocabulary_adds_its_own():
    template = ChatTemplate("{{ bos_token }}" + LOOP, "<s>", "</s>", add_bos=True)
    assert template.render(TALK) == "<system>Be brief.<user>Hi<a>"


def test_failures_name_their_cause():
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate("{% for m in messages %}", "", "")
    with pytest.raises(TemplateError, match="Only user and assistant"):
        render("{{ raise_exception('Only user and assistant roles') }}")
