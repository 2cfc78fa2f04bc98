"""Take the docs' screenshots from the real window (run under Xvfb: `xvfb-run -s '-screen 0 1600x1000x24'`).

Usage: python scripts/screenshots.py OUT_DIR [NAME...]  -> OUT_DIR/screenshot.png (mid-run),
OUT_DIR/screenshot-done.png, OUT_DIR/screenshot-conversation.png (two panes, each a three-turn conversation,
differing in temperature), OUT_DIR/screenshot-probabilities.png (a tinted reply, its alternatives popup, a branch and
a JSON-schema pane), OUT_DIR/screenshot-columns.png, -diff.png, -table.png (an 8-variant group in columns, the diff
view, the comparison table), OUT_DIR/screenshot-backends.png (panes on the local model and on a server, the server's
/metrics in the stats panel) and -backends-dialog.png; with NAME `reasoning` only, OUT_DIR/screenshot-reasoning.png
(a thinking variant of the embedded model: thinking on with its section opened, on with a small budget, folded, and
off). NAME limits it to some of: runs, conversation, probabilities, compare, backends, reasoning, arena
(OUT_DIR/screenshot-arena.png and -leaderboard.png: a 3-variant arena after a few votes, and its leaderboard), images
(OUT_DIR/screenshot-images.png: four panes on one chart, on SmolLM2 with the tiny random projector of
tests/fixtures/vision_gguf.py, and -models-vision.png: the Models dialog pairing it with SmolLM2; not in the default
set), eval (OUT_DIR/screenshot-eval.png: a promptfoo config with CSV tests and an llm-rubric judge, run in the
evaluation view), meaning (OUT_DIR/screenshot-meaning.png and -stability.png: a seed group's comparison table with
the meaning column, and its answers clustered by meaning), sizes (OUT_DIR/screenshot-800x560-light.png ...
-1920x1080-dark.png: three panes and the statistics at each size in both themes, and -eval-800x560.png ...: beside an
evaluation; needs a 1920x1080 screen; not in the default set), versions (OUT_DIR/screenshot-versions.png, a pane
showing version 2 of 3, and -run-compare.png, two runs of an evaluation compared; not in the default set), tools
(OUT_DIR/screenshot-tools.png: four panes calling a tool on llama-server, their cards, mock results and a continued
turn; needs llama-server built; not in the default set), examples (OUT_DIR/screenshot-examples.png and
-example-KEY.png: Help → Examples, each example run to its end; not in the default set), groupmocks
(OUT_DIR/screenshot-group-mocks.png: a group of three panes whose calls are answered by the group's mock results, one
pane's own mock taking precedence, the Tools section open on the group mock editor and Parallel calls; not in the
default set), mcp (OUT_DIR/screenshot-mcp.png: three panes of a group calling an MCP tool of a real server
(tests/fixtures/mcp_servers.py): one approved and answered, then its next turn; one replayed from the recording; one
waiting on its approval card; and -mcp-servers.png, the MCP servers dialog; not in the default set), quants
(OUT_DIR/screenshot-quants.png: Compare quantizations… ranking three requantizations of the embedded model against an
F16 reference, -quants-dialog.png: choosing them, -quants-diff.png: the diff view tinted by KLD; not in the default
set), wer (OUT_DIR/screenshot-wer.png: the comparison table ranking four takes of one sentence by word error rate
against their reference text, and -wer-diff.png: the diff view of the best and the worst; not in the default set).
`backends` needs a server running the same model: CHORUS_SCREENSHOT_SERVER=http://127.0.0.1:18080/v1
(e.g. llama-server -m MODEL -np 8 -t 2 --metrics)."""

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QSize

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout: tests.fixtures
from app.models import default_model_path  # noqa: E402
from app.ui.settings import THREADS  # noqa: E402
from app.ui.window.main_window import MainWindow  # noqa: E402
from tests.fixtures.fresh_window import run_fresh  # noqa: E402

PROMPTS = [
    ("Write a haiku about autumn rain.", 0.7),
    ("Explain what a hash table is to a ten-year-old.", 0.7),
    ("List five creative names for a coffee shop.", 1.0),
    ("Write a Python function that reverses a string.", 0.2),
    ("What are the three states of matter? Answer briefly.", 0.0),
    ("Describe the smell of a forest after rain.", 0.9),
]


async def shoot(window: MainWindow, out: Path, names: set[str]) -> None:
    await window.load_model(str(default_model_path()))
    if "runs" in names:
        await shoot_runs(window, out)
    if "conversation" in names:
        await shoot_conversation(window, out)
    if "probabilities" in names:
        await shoot_probabilities(window, out)
    if "compare" in names:
        await shoot_compare(window, out)
    if "backends" in names:
        await shoot_backends(window, out)
    if "meaning" in names:
        await shoot_meaning(window, out)
    if "reasoning" in names:
        await shoot_reasoning(window, out)
    if "arena" in names:
        await shoot_arena(window, out)
    if "eval" in names:
        await shoot_eval(window, out)
    if "sizes" in names:
        await shoot_sizes(window, out)
    if "versions" in names:
        await shoot_versions(window, out)
    if "images" in names:
        await shoot_images(window, out)
    if "tools" in names:
        await shoot_tools(window, out)
    if "groupmocks" in names:
        await shoot_group_mocks(window, out)
    if "examples" in names:
        await shoot_examples(window, out)
    if "mcp" in names:
        await shoot_mcp(window, out)
    if "quants" in names:
        await shoot_quants(window, out)
    if "wer" in names:
        await shoot_wer(window, out)


def chart_png(path: Path) -> Path:
    """A small bar chart to ask about (drawn with Qt: no image files in the repository)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QImage, QPainter

    image = QImage(320, 200, QImage.Format_RGB32)
    image.fill(Qt.white)
    painter = QPainter(image)
    for i, (height, colour) in enumerate(zip((60, 140, 100, 170), ("#2563eb", "#059669", "#d97706", "#dc2626"),
                                             strict=True)):
        painter.fillRect(30 + i * 70, 180 - height, 50, height, QColor(colour))
    painter.setPen(Qt.black)
    painter.drawLine(20, 180, 310, 180)
    painter.drawText(20, 20, "Sales by quarter")
    painter.end()
    image.save(str(path))
    return path


IMAGE_QUESTIONS = ["What does this chart show?", "Which bar is the tallest?", "Describe the colours in this image.",
                   "What title would you give this picture?"]


async def shoot_images(window: MainWindow, out: Path) -> None:
    """The embedded SmolLM2 opened with the tiny random-weight projector of tests/fixtures/vision_gguf.py (its
    replies mean nothing), four panes asking about one attached chart, run together: the stats panel says the image was
    encoded once (OUT_DIR/screenshot-images.png). Then the Models dialog over a temporary LM Studio folder and
    Hugging Face cache holding SmolLM2 with that projector beside it (OUT_DIR/screenshot-models-vision.png)."""
    from tests.fixtures.vision_gguf import tiny_mmproj

    model, projector = default_model_path(), tiny_mmproj()
    if not await window.models.load_model(str(model), str(projector)):
        raise SystemExit(f"images: could not load {model.name} with {projector}")
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.stats_dock.show()
    window.columns_box.setValue(2)
    chart = chart_png(Path(tempfile.mkdtemp()) / "chart.png")
    for question in IMAGE_QUESTIONS:
        pane = window.grid.add_pane()
        pane.prompt.setPlainText(question)
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(48)
        window.controller.attach_image(pane.spec, str(chart))
    window.run_all()
    await finish_all(window)
    await asyncio.sleep(1.5)  # the stats panel's next sample
    window.grab().save(str(out / "screenshot-images.png"))
    await shoot_models_vision(window, out, model, projector)


async def shoot_models_vision(window: MainWindow, out: Path, model: Path, projector: Path) -> None:
    """Models on this computer over a temporary home: LM Studio's folder (symlinks to the model and projector)
    and the Hugging Face cache (blobs and snapshot links, as hf_hub_download leaves them), each pairing the
    projector with SmolLM2 ("· vision")."""
    from app.models import ScanCache
    from app.ui.models.dialog import ModelsDialog
    from tests.fixtures.app_trees import hub_download

    home = Path(tempfile.mkdtemp()) / "home"
    folder = home / ".lmstudio" / "models" / "chorus-tests" / "SmolLM2-135M-Instruct-vision-GGUF"
    folder.mkdir(parents=True)
    (folder / model.name).symlink_to(model)
    (folder / "mmproj-tiny-mlp-random-f16.gguf").symlink_to(projector)
    hub_download(home / ".cache" / "huggingface" / "hub", "chorus-tests/SmolLM2-135M-Instruct-vision-GGUF",
                 {model.name: model, "mmproj-tiny-mlp-random-f16.gguf": projector})
    dialog = ModelsDialog(window.settings, window, cache=ScanCache(home / "scan.json"),
                          scan_kwargs={"home": home, "env": {}, "platform": "linux"},
                          loaded=str(window.bridge.model_info.path), builtin=str(model))
    dialog.resize(1280, 420)
    dialog.show()
    while dialog.job is not None:
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    dialog.grab().save(str(out / "screenshot-models-vision.png"))
    dialog.close()


WEATHER_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city",
                                      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                     "required": ["city"]}}}]
WEATHER_MOCKS = {"get_weather": {"cases": [{"when": {"city": "Paris"}, "result": {"temp_c": 18, "sky": "clear"}},
                                           {"when": {"city": "Oslo"}, "result": {"temp_c": -3, "sky": "snow"}}],
                                 "result": {"temp_c": 24, "sky": "sunny"}}}


async def shoot_tools(window: MainWindow, out: Path) -> None:
    """Four panes of one group on llama-server --jinja (SmolLM2 carrying Qwen2.5's template, started here) call
    get_weather: cards with their arguments and validity, mock results (one pane has none: its card says so and
    it is not answered), then Continue with auto-continue: the next turn after the results
    (OUT_DIR/screenshot-tools.png). The 135M model starts its first reply with `<tool_call>` (a reply prefix)."""
    import json

    from app.models import default_model_path as model
    from app.session import BackendSpec
    from tests.fixtures.gguf_variants import write_variant
    from tests.fixtures.servers import llama_cpp_templates, llama_server

    variant = write_variant(model(), Path(tempfile.mkdtemp()) / "smollm2-qwen-template.gguf",
                            llama_cpp_templates()["Qwen-Qwen2.5-7B-Instruct"])
    server = llama_server(variant, "--jinja").start()
    try:
        reason = await window.backends.add(BackendSpec(kind="server", url=server.url))
        if reason:
            raise SystemExit(f"server: {reason}")
        for pane in list(window.grid.panes):
            window.grid.remove_pane(pane)
        window.stats_dock.hide()  # the panes get the width
        window.columns_box.setValue(2)
        for city in ("Paris", "Oslo", "Lima", "Kyoto"):
            pane = window.grid.add_pane()
            pane.spec.turns = [{"role": "user", "content": f"What is the weather in {city} right now?"}]
            mocks = {} if city == "Kyoto" else WEATHER_MOCKS
            pane.tools.load(json.dumps(WEATHER_TOOLS, indent=1), "required", json.dumps(mocks))
            pane.sampling.temperature.setValue(0.0)
            pane.sampling.max_tokens.setValue(40)  # one whole call (the model goes on calling until the limit)
            pane.commit_form()
            pane.spec.backend, pane.spec.group, pane.spec.reply_prefix = window.backends.last_added, "trip", \
                "<tool_call>\n"
        window.grid.set_backend_names(window.bridge.backend_names())
        window.run_all()
        await finish_all(window)
        for pane in window.grid.panes:
            pane.tools.choice.setCurrentText("auto")  # the next turn answers in words
            pane.commit_form()
        first = window.grid.panes[0].tool_cards
        first.auto_steps.setValue(2)
        first.continue_button.click()
        await finish_all(window)
        await asyncio.sleep(1.0)
        window.grab().save(str(out / "screenshot-tools.png"))
    finally:
        server.kill()


async def shoot_mcp(window: MainWindow, out: Path) -> None:
    """Three panes of one group call `lookup` on the counting MCP server: the first call approved (it runs, its
    result becomes the tool turn and the model goes on), the second replayed from that recording, the third waiting
    on its approval card (OUT_DIR/screenshot-mcp.png); then the MCP servers dialog (-mcp-servers.png)."""
    from tests.fixtures import mcp_servers

    servers, calls = window.mcp.servers, window.mcp.calls
    servers.set_server("weather", mcp_servers.command("counting", Path(tempfile.mkdtemp()) / "count.txt"))
    servers.start("weather")
    while servers.state("weather").status != "ready":
        await asyncio.sleep(0.1)
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.stats_dock.hide()  # the panes get the width
    window.columns_box.setValue(3)
    for _ in range(3):
        pane = window.grid.add_pane()
        pane.system_prompt.setPlainText("Call a tool once. Once you have its result, answer in one sentence.")
        pane.prompt.setPlainText("What is the weather in Paris?")
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(40)
        pane.tools.choice.setCurrentText("lookup")
        pane.tools.call_first.setChecked(True)
        pane.commit_form()
        pane.mcp_picker.toggle("weather/lookup", True)
        pane.tool_cards.auto_steps.setValue(0)
        pane.spec.group = "paris"
    window.run_all()
    await finish_all(window)
    first, second, third = window.grid.panes
    first.tool_cards.continue_button.click()
    first.tool_cards.act(_card(first), "approve")
    while not all(s.status == "done" for s in calls.states(first.spec).values()):
        await asyncio.sleep(0.1)
    second.tool_cards.act(_card(second), "approve")
    await finish_all(window)
    while not all(s.status == "done" for s in calls.states(second.spec).values()) or any(
            p.busy for p in window.grid.panes):
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-mcp.png"))
    dialog = window.mcp.open_servers()
    await asyncio.sleep(0.5)
    dialog.grab().save(str(out / "screenshot-mcp-servers.png"))
    dialog.close()


def _card(view):
    from app.session import tool_loop
    return tool_loop.cards(view.spec, view.controller.group_mocks(view.spec),
                           view.controller.mcp_calls.answers(view.spec))[0]


async def shoot_group_mocks(window: MainWindow, out: Path) -> None:
    """Three panes of one group waiting with get_weather calls (given as data: the embedded model's own template
    has no call format), the group's mock results typed in the first pane's Tools section (Parallel calls on),
    the first pane with its own mock for Paris; Continue answers all three and the model writes the next turns
    (OUT_DIR/screenshot-group-mocks.png)."""
    import json

    from app.session import PaneResult, RunState

    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.stats_dock.hide()
    window.columns_box.setValue(3)
    group = {"get_weather": {"cases": [{"when": {"city": "Oslo"}, "result": {"temp_c": -3, "sky": "snow"}}],
                             "result": {"temp_c": 24, "sky": "sunny"}}}
    for i, city in enumerate(("Paris", "Oslo", "Lima")):
        pane = window.grid.add_pane()
        own = {"get_weather": {"result": {"temp_c": 18, "sky": "clear"}}} if i == 0 else {}
        pane.tools.load(json.dumps(WEATHER_TOOLS), "auto", json.dumps(own) if own else "")
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(32)
        pane.commit_form()
        calls = [{"id": f"call_{city}", "name": "get_weather", "arguments": json.dumps({"city": city})}]
        pane.spec.group = "trip"
        pane.spec.turns = [{"role": "user", "content": f"What is the weather in {city}?"},
                           {"role": "assistant", "content": "", "tool_calls": calls}]
        pane.spec.result = PaneResult(state=RunState.DONE, finish_reason="tool_calls", tool_calls=calls)
    first = window.grid.panes[0]
    first.tools.parallel.setCurrentText("on")
    first.group_mocks.editor.setPlainText(json.dumps(group, indent=1))
    first.group_mocks.check()
    first._toggles[3].setChecked(True)  # open its Tools section
    first.tool_cards.auto_steps.setValue(0)
    first.tool_cards.continue_button.click()
    await finish_all(window)
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-group-mocks.png"))


SIZES = [(800, 560), (1280, 800), (1920, 1080)]


async def shoot_sizes(window: MainWindow, out: Path) -> None:
    """Three panes that ran (3 columns) and the statistics, at each of SIZES in the light and the dark theme
    (OUT_DIR/screenshot-800x560-light.png ... -1920x1080-dark.png), then two panes beside an evaluation at each size
    (OUT_DIR/screenshot-eval-800x560.png ...). Needs a 1920x1080 screen: xvfb-run -s '-screen 0 1920x1080x24'."""
    from app.ui.theme import Theme

    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.columns_box.setValue(3)
    for prompt, temperature in PROMPTS[:3]:
        pane = window.grid.add_pane()
        pane.prompt.setPlainText(prompt)
        pane.sampling.temperature.setValue(temperature)
        pane.sampling.seed.setText("3")
        pane.sampling.max_tokens.setValue(70)
    window.grid.panes[0].options.probabilities.setChecked(True)
    window.stats_dock.show()
    window.run_all()
    while any(p.busy for p in window.grid.panes):
        await asyncio.sleep(0.1)
    window.move(0, 0)
    theme = Theme.of()
    for scheme in ("light", "dark"):
        theme.use(scheme)
        for width, height in SIZES:
            window.resize(width, height)
            await asyncio.sleep(1.0)
            window.grab().save(str(out / f"screenshot-{width}x{height}-{scheme}.png"))
    theme.use("light")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "promptfooconfig.yaml"
        config.write_text(EVAL_CONFIG.split("defaultTest:")[0].replace(  # the CSV's checks, no judge: quick
            "MODEL", str(default_model_path())), encoding="utf-8")
        (Path(tmp) / "tests.csv").write_text("\n".join(EVAL_TESTS.splitlines()[:5]) + "\n", encoding="utf-8")
        if not window.evals.open_config(config):
            raise SystemExit(f"sizes: {window.messages[-1]}")
        while window.evals.running:
            await asyncio.sleep(0.1)
    for width, height in SIZES:
        window.resize(width, height)
        await asyncio.sleep(1.0)
        window.grab().save(str(out / f"screenshot-eval-{width}x{height}.png"))


async def shoot_examples(window: MainWindow, out: Path) -> None:
    """Each of Help → Examples opened and run to its end (OUT_DIR/screenshot-example-KEY.png), and the dialog
    (OUT_DIR/screenshot-examples.png)."""
    from PySide6.QtWidgets import QMessageBox

    from app.session.examples import EXAMPLES

    QMessageBox.question = lambda *a, **k: QMessageBox.Discard  # one example replaces the last: no question
    window.resize(1400, 900)
    dialog = window.examples.open_dialog()
    dialog.select("tools")
    await asyncio.sleep(0.5)
    dialog.grab().save(str(out / "screenshot-examples.png"))
    dialog.close()

    def busy() -> bool:
        arena = window.examples.arena.arena
        return (window.evals.running or any(p.result.busy for p in window.session.panes)
                or (arena is not None and arena.isVisible() and not arena.votable()))

    for item in EXAMPLES:
        window.examples.open(item.key)
        await asyncio.sleep(1.0)
        while busy() or window.examples._pending is not None or window.examples._rerun is not None:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.0)
        arena = window.examples.arena.arena
        shown = arena if item.key == "arena" and arena is not None else window
        shown.grab().save(str(out / f"screenshot-example-{item.key}.png"))
        if arena is not None:
            arena.close()


EVAL_CONFIG = """description: Quiz
prompts:
  - raw: 'Answer in one short sentence: {{question}}'
providers:
  - id: file://MODEL
    label: greedy
    config: {temperature: 0, max_tokens: 40}
  - id: file://MODEL
    label: warm
    config: {temperature: 0.9, seed: 3, max_tokens: 40}
tests: file://tests.csv
defaultTest:
  assert:
    - type: llm-rubric
      value: The answer is correct
      metric: correct
"""
EVAL_TESTS = """question,__expected
What is the capital of France?,icontains:paris
Which planet is known as the Red Planet?,icontains:mars
Who wrote Romeo and Juliet?,icontains:shakespeare
What is the boiling point of water in Celsius?,contains:100
How many legs does a spider have?,"icontains-any:eight,8"
What do bees make?,icontains:honey
What is the largest ocean on Earth?,icontains:pacific
What colour is the sky on a clear day?,icontains:blue
"""


async def shoot_eval(window: MainWindow, out: Path) -> None:
    """A promptfoo config with CSV tests and an llm-rubric judge, run in the window's evaluation view."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "promptfooconfig.yaml"
        config.write_text(EVAL_CONFIG.replace("MODEL", str(default_model_path())), encoding="utf-8")
        (Path(tmp) / "tests.csv").write_text(EVAL_TESTS, encoding="utf-8")
        window.stats_dock.show()
        if not window.evals.open_config(config):
            raise SystemExit(f"eval: {window.messages[-1]}")
        if os.environ.get("CHORUS_SCREENSHOT_MIDRUN"):  # a look at the streaming view (not in the docs)
            await asyncio.sleep(float(os.environ["CHORUS_SCREENSHOT_MIDRUN"]))
            window.grab().save(str(out / "screenshot-eval-running.png"))
        while window.evals.running:
            await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-eval.png"))


async def shoot_versions(window: MainWindow, out: Path) -> None:
    """A pane run three times (other temperatures), showing version 2 of 3 (OUT_DIR/screenshot-versions.png);
    then an evaluation run twice, the second time with the warm variant cut to 6 tokens, and its two runs
    compared (OUT_DIR/screenshot-run-compare.png)."""
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.columns_box.setValue(2)
    pane = window.grid.add_pane()
    pane.prompt.setPlainText("Write a haiku about autumn rain.")
    pane.sampling.max_tokens.setValue(60)
    for temperature, seed in ((0.2, "1"), (0.9, "2"), (1.2, "3")):
        pane.sampling.temperature.setValue(temperature)
        pane.sampling.seed.setText(seed)
        pane.run()
        while pane.busy:
            await asyncio.sleep(0.1)
    other = window.grid.add_pane()
    other.prompt.setPlainText("Write a haiku about autumn rain.")
    other.sampling.max_tokens.setValue(60)
    other.run()
    while other.busy:
        await asyncio.sleep(0.1)
    pane.version_bar.back.click()
    await asyncio.sleep(1.0)
    window.grid.grab().save(str(out / "screenshot-versions.png"))

    from app.session.evaluation import Variant

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "promptfooconfig.yaml"
        config.write_text(EVAL_CONFIG.split("defaultTest:")[0].replace("MODEL", str(default_model_path())),
                          encoding="utf-8")
        (Path(tmp) / "tests.csv").write_text(EVAL_TESTS, encoding="utf-8")
        if not window.evals.open_config(config):
            raise SystemExit(f"versions: {window.messages[-1]}")
        while window.evals.running:
            await asyncio.sleep(0.1)
        evaluation = window.session.evaluation
        evaluation.variants = [v if v.label != "warm" else Variant(**{**v.model_dump(), "max_tokens": 6})
                               for v in evaluation.variants]  # the change whose effect we want to know
        window.evals.run_again()
        await asyncio.sleep(0.5)
        while window.evals.running:
            await asyncio.sleep(0.1)
    dialog = window.evals.compare_runs()
    dialog.resize(1000, 460)
    await asyncio.sleep(1.0)
    dialog.grab().save(str(out / "screenshot-run-compare.png"))


async def shoot_reasoning(window: MainWindow, out: Path) -> None:
    from tests.fixtures.gguf_variants import THINKING_TEMPLATE, write_variant

    with tempfile.TemporaryDirectory() as tmp:
        variant = write_variant(default_model_path(), Path(tmp) / "SmolLM2-thinking.gguf", THINKING_TEMPLATE)
        await window.load_model(str(variant))
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.columns_box.setValue(3)
    for title, thinking, budget in (("On, 24", 0, 24), ("On, 8", 0, 8),
                                    ("Off", 2, -1)):
        pane = window.grid.add_pane()
        pane.spec.title = title
        pane.prompt.setPlainText("Why is the sky blue? Answer in one sentence.")
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(90)
        pane.sampling.thinking.mode.setCurrentIndex(1 if thinking == 0 else 2)
        pane.sampling.thinking.budget.setValue(budget)
    window.run_all()
    await finish_all(window)
    window.grid.panes[0].thinking_view.toggle.click()  # open the first pane's thinking again
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-reasoning.png"))


async def shoot_runs(window: MainWindow, out: Path) -> None:
    while len(window.grid.panes) < len(PROMPTS):
        window.grid.add_pane()
    for pane, (prompt, temperature) in zip(window.grid.panes, PROMPTS, strict=False):
        pane.prompt.setPlainText(prompt)
        pane.sampling.temperature.setValue(temperature)
        pane.sampling.max_tokens.setValue(160)
    window.columns_box.setValue(3)
    window.run_all()
    await asyncio.sleep(2.5)
    window.grab().save(str(out / "screenshot.png"))
    while any(p.busy for p in window.grid.panes):
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-done.png"))


CONVERSATION = ["Suggest a name for a friendly robot.", "Why that name?", "Now write it a one-line motto."]


async def shoot_conversation(window: MainWindow, out: Path) -> None:
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.columns_box.setValue(2)
    for temperature in (0.0, 0.8):
        pane = window.grid.add_pane()
        pane.system_prompt.setPlainText("Answer in at most three sentences.")
        pane.sampling.temperature.setValue(temperature)
        pane.sampling.seed.setText("7")
        pane.sampling.max_tokens.setValue(70)
    for message in CONVERSATION:
        for pane in window.grid.panes:
            pane.prompt.setPlainText(message)
        window.run_all()
        while any(p.busy for p in window.grid.panes):
            await asyncio.sleep(0.1)
    window.grid.panes[0].prompt.setPlainText("And a slogan for its charging station?")
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-conversation.png"))


async def finish_all(window: MainWindow) -> None:
    while any(p.busy for p in window.grid.panes):
        await asyncio.sleep(0.1)


async def shoot_probabilities(window: MainWindow, out: Path) -> None:
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.columns_box.setValue(3)
    source = window.grid.add_pane()
    source.prompt.setPlainText("Name a famous scientist and say in one sentence why they matter.")
    source.sampling.temperature.setValue(0.0)
    source.sampling.max_tokens.setValue(40)
    source.options.probabilities.setChecked(True)
    schema = window.grid.add_pane()
    schema.prompt.setPlainText("Describe a famous scientist as JSON.")
    schema.sampling.temperature.setValue(0.0)
    schema.sampling.max_tokens.setValue(80)
    schema.options.kind.setCurrentIndex(schema.options.kind.findData("schema"))
    schema.options.editor.setPlainText('{"type": "object", "properties": {"name": {"type": "string"}, '
                                       '"field": {"enum": ["physics", "chemistry", "biology"]}, '
                                       '"born": {"type": "integer"}}, "required": ["name", "field", "born"]}')
    window.run_all()
    await finish_all(window)
    entries = source.spec.result.token_logprobs
    index = min(range(1, len(entries)), key=lambda i: entries[i].logprob)  # the least sure token
    source.branch(index, entries[index].top[1][1])
    await finish_all(window)
    await asyncio.sleep(0.5)
    view = source.output
    start = next(s for s, _e, i in view.token_spans if i == index)
    cursor = view.textCursor()
    cursor.setPosition(start + 1)
    point = view.viewport().mapToGlobal(view.cursorRect(cursor).center())
    from PySide6.QtWidgets import QToolTip

    from app.ui.widgets.token_tint import alternatives_html

    QToolTip.showText(point, alternatives_html(entries[index]), view)
    await asyncio.sleep(1.0)
    window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(out / "screenshot-probabilities.png"))


async def shoot_compare(window: MainWindow, out: Path) -> None:
    """An 8-variant seed group in columns mode, then the diff view of two of its replies."""
    from app.session import sweep

    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    source = window.grid.add_pane()
    source.prompt.setPlainText("Write a two-line poem about the moon.")
    source.sampling.temperature.setValue(0.9)
    source.sampling.seed.setText("1")
    source.sampling.max_tokens.setValue(60)
    source.options.probabilities.setChecked(True)
    source.commit_form()
    window.compare.add_variants(source, sweep.seeds(source.spec, 7, first=2), include_source=True)
    window.stats_dock.hide()  # the whole width for the 8 columns
    window.compare.show_columns(source)
    await finish_all(window)
    await asyncio.sleep(1.0)
    window.grab().save(str(out / "screenshot-columns.png"))
    group = [v for v in window.grid.panes if v.spec.group == source.spec.group]
    dialog = window.compare.open_diff(group[0], group[1])
    dialog.resize(1100, 520)
    await asyncio.sleep(1.0)
    dialog.grab().save(str(out / "screenshot-diff.png"))
    table = window.compare.open_table(source)
    await asyncio.sleep(0.5)
    table.grab().save(str(out / "screenshot-table.png"))


async def shoot_wer(window: MainWindow, out: Path) -> None:
    """Four takes of one sentence (four temperatures), their reference text set from the comparison table, ranked
    by word error rate (the embedded model hears nothing: copying a sentence stands in for transcribing a clip)."""
    from app.session import sweep

    sentence = "The quick brown fox jumps over the lazy dog near the old river bank."
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    source = window.grid.add_pane()
    source.prompt.setPlainText(f"Copy this sentence exactly, nothing else:\n{sentence}")
    source.sampling.temperature.setValue(0.0)
    source.sampling.seed.setText("3")
    source.sampling.max_tokens.setValue(48)
    source.commit_form()
    window.compare.add_variants(source, sweep.expand(source.spec, {"temperature": [0.8, 1.4, 2.0]}),
                                include_source=True)
    await finish_all(window)
    table = window.compare.open_table(source)
    table.set_reference(sentence)  # no row selected: every row of the group
    table.sort_by(table.columns.index("WER"))
    table.resize(1180, 300)
    await asyncio.sleep(0.5)
    from PySide6.QtWidgets import QToolTip

    at = table.columns.index("WER")
    item = table.table.item(table.table.rowCount() - 1, at)  # the worst take: what its rate counts
    rect = table.table.visualItemRect(item)
    QToolTip.showText(table.table.viewport().mapToGlobal(rect.center()), item.toolTip(), table.table)
    await asyncio.sleep(1.0)
    table.screen().grabWindow(0).copy(table.frameGeometry()).save(str(out / "screenshot-wer.png"))
    QToolTip.hideText()
    ranked = [window.session.pane_by_id(row["id"]) for row in table.rows()]
    dialog = window.compare.open_diff(ranked[0], ranked[-1])  # the best take against the worst
    dialog.resize(1000, 360)
    await asyncio.sleep(1.0)
    dialog.grab().save(str(out / "screenshot-wer-diff.png"))


async def shoot_quants(window: MainWindow, out: Path) -> None:
    """The embedded model requantized (tests/fixtures/quant_files.py) to F16 (the reference) and Q8_0, Q5_0, Q4_0:
    the dialog that picks them, the panes and the ranking once measured, and the diff view tinted by KLD."""
    from app.models import ScanCache
    from app.ui.compare.quant_dialog import QuantDialog
    from tests.fixtures.quant_files import requantize

    folder = Path(tempfile.mkdtemp(prefix="chorus-quants-"))
    files = {kind: str(requantize(default_model_path(), folder / f"SmolLM2-135M-Instruct.{kind}.gguf", kind))
             for kind in ("F16", "Q8_0", "Q5_0", "Q4_0")}
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    source = window.grid.add_pane()
    source.prompt.setPlainText("Explain in two sentences why the sky is blue.")
    source.sampling.max_tokens.setValue(48)
    source.commit_form()
    dialog = QuantDialog(files["F16"], window.quants.check, window, folders=[str(folder)],
                         scan_kwargs={"home": folder / "home", "env": {}}, cache=ScanCache(folder / "scan.json"))
    dialog.show()
    while not dialog.scanning.done():
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    dialog.grab().save(str(out / "screenshot-quants-dialog.png"))
    dialog.close()
    comparison = await window.quants.start(source.spec, files["F16"], [files[k] for k in ("Q8_0", "Q5_0", "Q4_0")])
    while comparison.running:
        await asyncio.sleep(0.5)
    ranking = window.quants.views[-1]
    ranking.resize(1180, 230)
    ranking.move(window.frameGeometry().left() + 190, window.frameGeometry().bottom() - 300)
    await asyncio.sleep(1.0)
    window.screen().grabWindow(0).copy(window.frameGeometry()).save(str(out / "screenshot-quants.png"))
    ranking.table.selectRow(3)
    dialog = window.quants.show_diff(comparison, ranking.rows[3].path)
    dialog.resize(1100, 560)
    await asyncio.sleep(1.0)
    dialog.grab().save(str(out / "screenshot-quants-diff.png"))


async def shoot_meaning(window: MainWindow, out: Path) -> None:
    """A seed group of 8 on one question: the comparison table with its meaning column (OUT_DIR/
    screenshot-meaning.png) and the stability view, its answers clustered by meaning (screenshot-stability.png),
    both on the main model as the embedder (the default, a weak one: the views say so)."""
    from app.session import sweep

    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    source = window.grid.add_pane()
    source.prompt.setPlainText(os.environ.get("CHORUS_SCREENSHOT_QUESTION",
                                              "What is the capital of Australia? Answer in a few words."))
    source.sampling.temperature.setValue(float(os.environ.get("CHORUS_SCREENSHOT_T", "1.0")))
    source.sampling.seed.setText("1")
    source.sampling.max_tokens.setValue(24)
    source.commit_form()
    window.compare.add_variants(source, sweep.seeds(source.spec, 7, first=2), include_source=True)
    await finish_all(window)
    table = window.compare.open_table(source)
    table.resize(1280, 420)
    while any(row["meaning"] is None for row in table.rows()) and not window.meaning.meaning.error:
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    table.grab().save(str(out / "screenshot-meaning.png"))
    table.close()
    dialog = window.compare.open_stability(source)
    dialog.resize(1100, 560)
    while "largest cluster" not in dialog.tree.topLevelItem(0).text(2) and not window.meaning.meaning.error:
        await asyncio.sleep(0.1)
    top = dialog.tree.topLevelItem(0)
    for i in range(min(2, top.childCount())):
        top.child(i).setExpanded(True)
    await asyncio.sleep(0.5)
    dialog.grab().save(str(out / "screenshot-stability.png"))


async def shoot_backends(window: MainWindow, out: Path) -> None:
    """Two prompts, each on the local model and on a server, mid-run, the stats panel on the server."""
    from app.session import MAIN, BackendSpec

    spec = BackendSpec(kind="server", url=os.environ["CHORUS_SCREENSHOT_SERVER"])
    reason = await window.backends.add(spec)
    if reason:
        raise SystemExit(f"server: {reason}")
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    window.stats_dock.show()
    window.columns_box.setValue(2)
    for prompt, _ in PROMPTS[:2]:
        for backend in (MAIN, window.backends.last_added):
            pane = window.grid.add_pane()
            pane.prompt.setPlainText(prompt)
            pane.sampling.temperature.setValue(0.7)
            pane.sampling.max_tokens.setValue(220)
            pane.spec.backend = backend
    window.grid.set_backend_names(window.bridge.backend_names())
    window.stats_panel.backend_box.setCurrentText(window.backends.last_added)
    window.run_all()
    await asyncio.sleep(4.0)
    window.grab().save(str(out / "screenshot-backends.png"))
    dialog = window.open_backends()
    await asyncio.sleep(0.5)
    dialog.grab().save(str(out / "screenshot-backends-dialog.png"))
    dialog.close()
    await finish_all(window)


async def shoot_arena(window: MainWindow, out: Path) -> None:
    """A 3-variant arena (three temperatures) after a few votes, a pair waiting for its vote, and the leaderboard.
    The votes follow a fixed rule (the cooler variant wins, every third pair is a tie), standing in for a person;
    the embedded model judges the first three pairs too."""
    from app.engine import SamplingParams
    from app.session import PaneSpec

    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    prompt = "Suggest a name for a small bakery and explain it in one sentence."
    panes = [PaneSpec(draft=prompt, sampling=SamplingParams(temperature=t, seed=7), max_tokens=60)
             for t in (0.2, 0.9, 1.6)]
    source = window.controller.add_pane(panes[0])
    window.controller.add_variants(source, panes[1:], run=False)
    window._last_pane = window.grid.view_of(source)
    view = window.arena.open_arena()
    view.resize(1200, 440)
    temperature = {c.key: c.pane.sampling.temperature for c in view.arena.contenders}
    for i in range(9):
        while not view.ready():
            await asyncio.sleep(0.05)
        m = view.matchup
        view.judge_box.setChecked(i < 3)  # the main model judges the first three pairs too (both orders)
        view.vote("tie" if i % 3 == 2 else "a" if temperature[m.a] < temperature[m.b] else "b")
        view.next_pair()
    while not view.ready():
        await asyncio.sleep(0.05)
    view.judge_box.setChecked(False)
    while window.runner.active > 2:  # the judge's last requests (the pair on screen is the other two)
        await asyncio.sleep(0.05)
    view.note.setText("A answers in one sentence, as asked")
    await asyncio.sleep(0.5)
    view.grab().save(str(out / "screenshot-arena.png"))
    board = window.arena.open_leaderboard()
    board.resize(1100, 640)
    await asyncio.sleep(1.0)
    board.grab().save(str(out / "screenshot-leaderboard.png"))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    names = set(sys.argv[2:]) or {"runs", "conversation", "probabilities", "compare", "backends", "eval"}
    if "reasoning" in names and len(names) > 1:
        sys.exit("take `reasoning` alone: it loads another model")
    out.mkdir(parents=True, exist_ok=True)
    settings = {}
    if os.environ.get("CHORUS_SCREENSHOT_THREADS"):  # a machine busy with other work: 1 is often faster
        settings[THREADS] = int(os.environ["CHORUS_SCREENSHOT_THREADS"])
    run_fresh(shoot, out, names, size=QSize(1560, 940), settings=settings)


if __name__ == "__main__":
    main()
