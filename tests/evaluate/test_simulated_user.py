"""The simulated user's conversation as promptfoo's simulatedUser.ts holds it (no model needed): roles flipped for
the user, the provider's system message first, `###STOP###` ends it unkept, at most maxTurns turns, the transcript
joined by "\\n---\\n"."""

from app.evaluate.simulated_user import STOP, Conversation, agent_text


def test_a_conversation_flips_roles_for_the_user_stops_unkept_and_ends_as_promptfoos_transcript():
    talk = Conversation.of({"id": "promptfoo:simulated-user", "config": {"maxTurns": 3,
                                                                         "instructions": "You are {{ who }}."}},
                           {"who": "mia"}, "You are an agent.")
    assert "You are mia." in talk.user_request().messages[0]["content"]
    assert talk.user_said("Hi")
    assert talk.agent_messages() == [{"role": "system", "content": "You are an agent."},
                                     {"role": "user", "content": "Hi"}]
    talk.agent_said("Hello")
    assert [m["role"] for m in talk.user_request().messages[1:]] == ["assistant", "user"]  # flipped
    assert not talk.user_said(f"Thanks {STOP}") and talk.over
    assert talk.transcript() == "User: Hi\n---\nAssistant: Hello"


def test_max_turns_bounds_the_conversation_and_a_tool_call_reply_is_kept_as_json():
    talk = Conversation.of({"config": {"maxTurns": 1}}, {"instructions": "x"}, "p")
    assert talk.user_said("Book it") and talk.over
    assert agent_text("", [{"id": "1", "name": "book", "arguments": "{}"}]) == (
        '[{"id": "1", "type": "function", "function": {"name": "book", "arguments": "{}"}}]')
    assert agent_text("Done", [{"name": "book"}]) == "Done"
