"""`run` JSONL lines with video parts (`video_url`, as llama-server takes them): a file's path (relative to the
JSONL) is read and sent as a data URL with the file's name, a data URL goes as it is, `video_fps` and
`video_max_frames` reach the request; a missing file or a bad rate is named with its line and the other lines run.
A server gets the part without the name Chorus keeps."""

import base64
import json

from app.backends.server_params import create_arguments
from app.cli.inputs import open_input
from tests.fixtures.video_files import data_url, sample_video


def test_video_parts_in_run_lines_are_read_and_bad_ones_named_with_their_line(tmp_path):
    (tmp_path / "films").mkdir()
    video = sample_video(0, seconds=0.5)
    (tmp_path / "films" / "walk.mkv").write_bytes(video)

    def line(part, **extra):
        return json.dumps({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "What moves?"}, part]}], **extra})

    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join([
        line({"type": "video_url", "video_url": {"url": "films/walk.mkv"}}, video_fps=2, video_max_frames=8),
        line({"type": "input_video", "input_video": {"data": data_url(video)}}),
        line({"type": "video_url", "video_url": {"url": "films/gone.mp4"}}),
        line({"type": "video_url", "video_url": {"url": "films/walk.mkv"}}, video_fps=-1),
        line({"type": "video_url", "video_url": {"url": "https://example.org/a.mp4"}})]) + "\n")
    items, total, _ = open_input(jsonl)
    items = list(items)
    assert total == 5
    sent = items[0].request.messages[0]["content"][1]["video_url"]
    assert sent["name"] == "walk.mkv" and sent["url"] == data_url(video)
    assert (items[0].request.video_fps, items[0].request.video_max_frames) == (2.0, 8)
    assert items[1].error is None and items[1].request.messages[0]["content"][1]["video_url"]["url"] == data_url(video)
    assert items[1].request.video_fps == 4.0  # llama-server's default
    assert items[2].error.startswith("line 3: messages[0].content[1]: video not found:")
    assert "gone.mp4" in items[2].error
    assert items[3].error.startswith("line 4: video_fps must be a number of frames a second")
    assert "web address" in items[4].error
    _, arguments = create_arguments(items[0].request, "m", "llama.cpp")
    assert arguments["messages"][0]["content"][1] == {"type": "video_url", "video_url": {"url": data_url(video)}}
    assert base64.b64encode(video).decode()[:40] not in " ".join(i.error or "" for i in items)
