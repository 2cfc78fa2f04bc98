"""Image parts on a real llama-server: sent as OpenAI `image_url` data URLs; a server whose model takes no
images (no --mmproj) refuses them, and the pane names the server and the model and keeps its conversation."""

import pytest

from app.backends import OpenAIBackend
from app.session import images
from app.session.conversation import plan_run
from app.session.runner import SessionRunner
from app.session.state import PaneSpec, RunState
from tests.conftest import drive
from tests.fixtures.images import write_png

pytestmark = pytest.mark.servers


class OneServer:
    """The runner's Submitter over one server backend."""

    def __init__(self, backend):
        self.backend = backend

    def submit(self, request, _name):
        return self.backend.submit(request)

    def get(self, _name):
        return self.backend


def test_a_server_without_a_projector_refuses_the_image_and_the_pane_says_so(start_llama_server, tmp_path):
    server = start_llama_server()
    backend = OpenAIBackend.open(server.url)
    try:
        runner = SessionRunner(OneServer(backend))
        backend.subscribe(runner.feed)
        ref = images.add_file(write_png(tmp_path / "chart.png"))
        pane = PaneSpec(title="Charts", draft="What does this chart show?", draft_images=(ref,), number=1)
        request, _ = plan_run(pane)
        assert request.messages[-1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
        runner.run(pane)
        drive(runner)
        result = pane.result
        assert result.state == RunState.ERROR, result
        assert "refused the image" in result.error and backend.name in result.error, result.error
        assert "mmproj" in result.error or "image" in result.error.split("refused the image", 1)[1]
        # nothing is lost: the message and its image are the conversation's last turn, ready to run elsewhere
        assert pane.turns == [{"role": "user", "content": "What does this chart show?", "images": (ref,)}]
        text_only = PaneSpec(draft="Say hi.", max_tokens=4, number=2)
        runner.run(text_only)
        drive(runner)
        assert text_only.result.state == RunState.DONE and text_only.result.text  # the server still serves text
    finally:
        backend.close()
