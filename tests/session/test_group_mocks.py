"""A group's mock results: they answer every pane of the group, a pane's own mock for a tool wins, they are
checked against the group's tools, bad ones stop Continue and auto-continue with nothing submitted, and they
travel in the session file (older files without them still open)."""

import json
import re

import pytest

from app.session import Session, SessionController, SessionModel, SessionRunner, tool_loop
from app.session.mocks import MockError, parse_mocks
from app.session.store import SessionFileError
from tests.session.test_tool_loop import MOCKS, TOOLS, Recorder, call, waiting_pane

TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
GROUP = json.dumps({"get_weather": {"result": {"temp_c": 7}}, "get_time": {"result": "noon"}})


def grouped(session: SessionModel, *panes):
    for pane in panes:
        pane.group = "trip"
        session.adopt(pane)
    return panes


def test_the_groups_mocks_answer_unless_the_pane_has_its_own_for_that_tool():
    session = SessionModel()
    controller = SessionController(session, SessionRunner(Recorder()))
    own, bare = grouped(session, waiting_pane([call()]), waiting_pane([call(), call("get_time", "{}", "call_2")],
                                                                      mocks="", tools=json.dumps([
                                                                          json.loads(TOOLS)[0], TIME])))
    controller.set_group_mocks("trip", GROUP)
    assert session.group_mocks == {"trip": GROUP}
    card = tool_loop.cards(own, controller.group_mocks(own))[0]
    assert card.answer == '{"temp_c": 18}' and not card.from_group  # the pane's own case for Paris wins
    weather, time_ = tool_loop.cards(bare, controller.group_mocks(bare))
    assert (weather.answer, weather.from_group) == ('{"temp_c": 7}', True)
    assert (time_.answer, time_.from_group) == ("noon", True)
    assert tool_loop.cards(bare)[0].answer is None  # without its group's mocks nothing answers it
    other = session.adopt(waiting_pane([call()], mocks=""))  # in no group: the group's mocks are not its
    assert controller.group_mocks(other) == tool_loop.NO_GROUP
    tool_loop.continue_pane(bare, controller.group_mocks(bare))
    assert [t["content"] for t in bare.turns[2:]] == ['{"temp_c": 7}', "noon"]


def test_group_mocks_are_checked_against_the_tools_of_the_groups_panes():
    assert tool_loop.group_tool_names([waiting_pane([]), waiting_pane([], tools=json.dumps([TIME])),
                                       waiting_pane([], tools="[")]) == ("get_weather", "get_time")
    with pytest.raises(MockError, match=r"group mock results: 'get_date' is not one of the group's tools "
                                        r"\(get_weather\)"):
        parse_mocks('{"get_date": {"result": 1}}', ("get_weather",), owner="group")
    with pytest.raises(MockError, match="group mock results: not JSON"):
        parse_mocks("{", (), owner="group")


@pytest.mark.parametrize(("text", "message"), [
    ("{", r"call 1 \(get_weather\) is not answered: group mock results: not JSON \(.* line 1, column 2\)"),
    ('{"get_weather": 3}', r"group mock results: 'get_weather' must be \{\"result\": ...\}"),
    ('{"get_date": {"result": 1}}', "group mock results: 'get_date' is not one of the group's tools"),
])
def test_bad_group_mocks_stop_continue_and_auto_continue_with_nothing_submitted(text, message):
    recorder = Recorder()
    session = SessionModel()
    controller = SessionController(session, SessionRunner(recorder))
    panes = grouped(session, waiting_pane([call()], mocks=""), waiting_pane([call()]))  # the second has its own
    controller.set_group_mocks("trip", text)
    before = [[dict(t) for t in p.turns] for p in panes]
    report = controller.continue_tools(list(panes))
    assert report.started == 0 and [p for p, _ in report.problems] == list(panes), report
    assert all(re.search(message, why) for _, why in report.problems), report.problems
    loop = controller.auto_continue(list(panes), steps=3)
    assert loop.done and loop.rounds == 0 and set(loop.stopped) == {p.id for p in panes}
    assert recorder.submitted == [] and [p.turns for p in panes] == before


def test_group_mocks_travel_in_the_session_file_and_older_files_still_open(tmp_path):
    session = Session()
    controller = SessionController(session, SessionRunner(Recorder()))
    grouped(session, waiting_pane([call()]), waiting_pane([call()], mocks=""))
    changes = []
    session.events.group_mocks.connect(lambda new, _old: changes.append(new))
    controller.set_group_mocks("trip", "{")  # kept as written even while it does not check
    controller.set_group_mocks("gone", GROUP)  # a group no pane is in any more: not saved
    assert changes == [{"trip": "{"}, {"trip": "{", "gone": GROUP}]
    path = tmp_path / "s.chorus.json"
    session.save(path)
    saved = json.loads(path.read_text())
    assert saved["group_mocks"] == {"trip": "{"}
    assert Session.load(path).group_mocks == {"trip": "{"}
    fresh = SessionModel()  # New / Open: the window's session takes the file's content
    SessionController(fresh, SessionRunner(Recorder())).replace(Session.load(path))
    assert fresh.group_mocks == {"trip": "{"}
    controller.set_group_mocks("trip", "")
    assert session.group_mocks == {"gone": GROUP}
    del saved["group_mocks"]  # a file from before group mocks
    path.write_text(json.dumps(saved))
    back = Session.load(path)
    assert back.group_mocks == {} and [p.mocks for p in back.panes] == [MOCKS, ""]
    saved["group_mocks"] = {"trip": 3}
    path.write_text(json.dumps(saved))
    with pytest.raises(SessionFileError, match="group_mocks"):
        Session.load(path)
