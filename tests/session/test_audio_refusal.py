"""A local model that cannot hear refuses a clip before it is sent, in words naming the model as the status bar
names it (`app.models.model_name`), and the sentence never quotes the clip."""

import base64

import pytest

from app.engine import GenerationRequest
from app.models import model_name
from app.session import BackendRegistry, BackendSpec
from app.session.result import PaneResult
from app.session.runner import SessionRunner
from tests.conftest import GREEDY, TEST_THREADS
from tests.fixtures.audio_gguf import about, encode, sample_clip, tiny_audio_mmproj
from tests.fixtures.vision_gguf import tiny_mmproj


@pytest.mark.parametrize("projector", [None, "vision", "audio"])
def test_a_model_that_cannot_hear_refuses_a_clip_naming_the_model(model_path, projector):
    registry = BackendRegistry(lambda event: None)
    mmproj = {"vision": tiny_mmproj, "audio": tiny_audio_mmproj}.get(projector)
    spec = registry.open(BackendSpec(kind="local", path=str(model_path), mmproj=str(mmproj()) if mmproj else None),
                         engine={"n_slots": 1, "n_ctx_per_slot": 512, "n_threads": TEST_THREADS})
    clip = encode(sample_clip(0))
    try:
        runner = SessionRunner(registry)
        request = about(clip, "What is this?", max_tokens=2)
        if projector == "audio":
            assert runner.submit(request, spec.name, PaneResult()).result(120).error is None
            return
        with pytest.raises(ValueError) as refused:
            runner.submit(request, spec.name, PaneResult())
        said = str(refused.value)
        assert said.startswith(model_name(str(model_path)))
        assert ("without an audio projector" if projector is None else "has no audio encoder") in said
        assert base64.b64encode(clip).decode()[:40] not in said and runner.active == 0
        text = GenerationRequest(messages=[{"role": "user", "content": "Hi"}], max_tokens=2, sampling=GREEDY)
        assert runner.submit(text, spec.name, PaneResult()).result(60).error is None
    finally:
        registry.close_all()
