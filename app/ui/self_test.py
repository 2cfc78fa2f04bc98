"""`python -m app --self-test`: the real window, offscreen, four panes on the real engine, one JSON line.

Used by CI on the source tree and on the installed package, so it exercises the same code a user runs:
MainWindow, the bridge, the coordinator and the engine. It uses throwaway settings, never the user's. It also
runs each bundled part that has no window of its own once (`parts`): JavaScript checks in V8, audio decoding,
video decoding (PyAV's FFmpeg libraries: an MP4 made here, sampled as a pane's video is) and the MCP client,
so a package that lost one of them fails here rather than in a user's evaluation.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

SELF_TEST_PROMPTS = [
    "Write a haiku about the sea.",
    "Name the three primary colors.",
    "What is 12 times 12? Answer briefly.",
    "Give one tip for learning to program.",
]


def _wav(rate: int = 16000, samples: int = 1600) -> bytes:
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes(bytes(2 * samples))
    return out.getvalue()


def _mp4(frames: int = 4, rate: int = 4, edge: int = 32) -> bytes:
    """A second of MPEG-4 video in MP4, made with FFmpeg's own encoder (in every build of it, as x264 is not)."""
    import fractions
    import io

    import av
    import numpy as np

    out = io.BytesIO()
    with av.open(out, mode="w", format="mp4") as container:
        stream = container.add_stream("mpeg4", rate=rate)
        stream.width = stream.height = edge
        stream.pix_fmt = "yuv420p"
        stream.time_base = fractions.Fraction(1, rate)
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(np.full((edge, edge, 3), 60 * index, np.uint8), format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()


def parts_report() -> dict:
    """Each bundled part, run once: {name: "ok" or what went wrong}."""
    def js() -> str:
        from app.evaluate.js_code import call

        result = call("return output.length * 6", None, None, ("output",), ["seven"])
        return "ok" if result.error is None and result.value.value == 30 else f"got {result}"

    def audio() -> str:
        from app.engine.vision.audio import decode_clip

        samples = decode_clip(_wav(), 16000, "the self-test clip")
        return "ok" if len(samples) == 1600 else f"decoded {len(samples)} samples of 1600"

    def video() -> str:
        from app.engine.vision.video import decode_video

        decoded = decode_video(_mp4(), 2.0, 0, "the self-test video")  # 1 s at 2 fps: 2 frames
        shapes = [frame.rgb.shape for frame in decoded.frames]
        return "ok" if shapes == [(32, 32, 3)] * 2 else f"decoded frames {shapes}, not 2 of 32 x 32"

    def mcp() -> str:
        # what app/mcp/hub.py imports when it starts a server (it imports them late, so a package missing one
        # would fail only then)
        from mcp import Client  # noqa: F401
        from mcp.client.sse import sse_client  # noqa: F401
        from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: F401
        from mcp.client.streamable_http import streamable_http_client  # noqa: F401
        from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: F401
        from mcp_types import CONNECTION_CLOSED, Implementation  # noqa: F401
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: F401

        return "ok"

    report = {}
    for name, check in (("javascript", js), ("audio", audio), ("video", video), ("mcp_client", mcp)):
        try:
            report[name] = check()
        except Exception as exc:  # a missing part is reported, never a traceback: CI reads the JSON line
            report[name] = f"{type(exc).__name__}: {exc}"
    return report


def offload_report(window) -> dict:
    """Whether this build offloads to a GPU, the device, and where the loaded model's layers went."""
    from app.engine.devices import gpu, gpu_offload_supported

    device = gpu()
    main = window.bridge.main
    return {"gpu_offload": gpu_offload_supported(), "device": device.description or device.name if device else None,
            "offload": window.bridge.model_info.offload if window.bridge.model_info else None,
            "layers_on_gpu": bool(main and main.stats().gpu_layers)}


async def exercise(window, model: str | None, timeout: float) -> dict:
    from app.models import default_model_path

    model_path = model or str(default_model_path())
    info = await window.load_model(model_path)
    if info is None:
        return {"ok": False, "reason": window.messages[-1] if window.messages else "model did not load"}
    for pane in list(window.grid.panes):
        window.grid.remove_pane(pane)
    panes = []
    for prompt in SELF_TEST_PROMPTS:
        pane = window.grid.add_pane()
        pane.prompt.setPlainText(prompt)
        pane.sampling.temperature.setValue(0.0)
        pane.sampling.max_tokens.setValue(48)
        panes.append(pane)
    started = window.run_all()
    deadline = time.monotonic() + timeout
    while any(p.busy for p in panes) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    report = [{"pane": p.number, "state": p.state.value, "tokens": p.tokens,
               "chars": len(p.reply_text()), "text": p.reply_text()[:60]} for p in panes]
    failures = [r for r in report if r["state"] != "done" or r["tokens"] <= 0 or r["chars"] <= 0]
    result = {"ok": started == len(panes) and not failures, "model": info.name, "model_path": model_path,
              "frozen": bool(getattr(sys, "frozen", False)), "panes": report}
    if not result["ok"]:
        result["reason"] = f"started {started}/{len(panes)}; not done with text: {[r['pane'] for r in failures]}"
    return result


def run_self_test(model: str | None = None, timeout: float = 180.0, expect_gpu_offload: bool = False) -> int:
    """`expect_gpu_offload`: also require a GPU backend with the model's layers on it (the release workflow
    passes it on macOS arm64, whose build compiles Metal)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import qasync
    from PySide6.QtCore import QSettings

    from app.ui.application import create_app
    from app.ui.bridge import EngineBridge
    from app.ui.settings import Settings
    from app.ui.window.main_window import MainWindow

    app = create_app()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(QSettings(os.path.join(tmp, "self-test.ini"), QSettings.IniFormat))
        window = MainWindow(EngineBridge(), settings, autosave_path=Path(tmp) / "autosave.chorus.json")
        window.show()
        with loop:  # closing the loop also stops its worker threads
            try:
                result = loop.run_until_complete(exercise(window, model, timeout))
                result.update(offload_report(window))
                result["parts"] = parts_report()
                if any(v != "ok" for v in result["parts"].values()):
                    result["ok"] = False
                    result["reason"] = f"a bundled part failed: {result['parts']}"
                if expect_gpu_offload and not (result["gpu_offload"] and result["layers_on_gpu"]):
                    result["ok"] = False
                    result["reason"] = (f"GPU offload expected, but llama_supports_gpu_offload() is "
                                        f"{result['gpu_offload']} and the model runs on: {result['offload']}")
            except Exception as exc:  # report, never traceback: CI reads the JSON line
                result = {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
            finally:
                window.close()
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1
