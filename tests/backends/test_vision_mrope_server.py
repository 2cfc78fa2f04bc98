"""The M-RoPE vision oracle: greedy replies from the engine and from llama-server `--mmproj` on the same
two files, the tiny Qwen2-VL-style pair of tests/fixtures/vision_qwen2vl.py (SmolLM2's weights as `qwen2vl`, a random
`qwen2vl_merger` projector), are the same for 2 images x 2 prompts, and the prompt has the same number of tokens.
The images are not square (8 x 4 and 3 x 7 tokens), so rows and columns take different M-RoPE positions, and the
text after an image starts max(nx, ny) positions after it, not nx * ny. One request at a time on each.
"""

import pytest

from tests.fixtures.vision_gguf import sample_png
from tests.fixtures.vision_oracle import PROMPTS, assert_same_reply, messages, pair_fixtures
from tests.fixtures.vision_qwen2vl import tiny_qwen2vl

pytestmark = pytest.mark.servers

IMAGES = {"wide": sample_png(0, 64, 32), "tall": sample_png(2, 24, 56)}
server, engine = pair_fixtures(tiny_qwen2vl)


@pytest.mark.parametrize("order,question", PROMPTS, ids=[p[0] for p in PROMPTS])
@pytest.mark.parametrize("image", sorted(IMAGES))
def test_greedy_replies_about_an_mrope_image_match_llama_server(server, engine, image, order, question):
    assert_same_reply(server, engine, messages(IMAGES[image], order, question))
