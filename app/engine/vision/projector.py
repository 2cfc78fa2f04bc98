"""The multimodal projector (libmtmd): images and audio clips tokenised into the prompt, encoded once, their
embeddings decoded.

A prompt with images is one int32 array like any other: its text tokens, and for each image token a negative
*placeholder* `-(serial * SPAN + index + 1)`, where `serial` numbers the distinct images (by content hash) this
engine has seen and `index` is the row of that image's embeddings. So two prompts with the same picture have
equal placeholders there, and the prompt cache, fan-out copies and coalescing share an image's KV exactly as
they share text. `ImageStore.embeddings(serial)` encodes an image the first time it is needed (mtmd_encode_chunk)
and keeps the result: N panes on one picture encode it once. A clip comes decoded to the projector's sample rate
(audio.py, before its request queued: prepare.py) and libmtmd cuts it into windows (30 s for Whisper-style
encoders), each an audio chunk: chunk k of a clip is keyed `<sha256>#k`, so it is shared exactly as an image is. A
prompt whose clips were all tokenised before is tokenised without libmtmd (clips.py), which would compute each
clip's spectrogram again. A video comes decoded to frames (video.py, before its request queued: prepare.py) and
is given to libmtmd as llama-server's helper gives it, a lazy bitmap that yields "Video:", the frames and their
timestamps; each frame is an image keyed `f:<sha256 of its pixels>`, so a frame is encoded once for every pane,
rate and video it appears in. Runs on the engine thread only.

With an M-RoPE projector (Qwen2-VL style: `mtmd_decode_use_mrope`) each image also keeps its grid: its rows'
(t, y, x, z) positions relative to its first position, and the positions it takes in the sequence (`n_pos`,
max(nx, ny), not its token count); positions.py turns a prompt's placeholders into KV positions with them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from app.engine import native
from app.engine.context import BatchBuffers
from app.engine.native import LlamaModel
from app.engine.prompt import PromptError
from app.engine.vision import audio
from app.engine.vision.clips import ClipLayouts
from app.engine.vision.media import MARKER, ImageData
from app.engine.vision.positions import PositionMap
from app.engine.vision.video import Frame, VideoDecodeError, decode_video

SPAN = 1 << 16  # most image tokens in one image; placeholders of one image are SPAN apart from the next's
MAX_KEPT = 32  # images whose embeddings are kept beyond the requests that use them (least recently used go)


def placeholder(serial: int, index: int) -> int:
    return -(serial * SPAN + index + 1)


def image_of(token: int) -> tuple[int, int]:
    """(serial, row) of a placeholder token."""
    return divmod(-int(token) - 1, SPAN)


def serials(prompt: np.ndarray) -> set[int]:
    """The images a prompt holds. (Not np.unique: its first call imports numpy.ma, ~30 ms on the engine thread in
    the admission of the first request beside a running one with an image, measured.)"""
    prompt = np.asarray(prompt)
    return set(((-prompt[prompt < 0] - 1) // SPAN).tolist())


@dataclass
class ImageEntry:
    key: str  # SHA-256 of the image's bytes: its mtmd bitmap id
    serial: int
    n_tokens: int
    non_causal: bool  # mtmd_decode_use_non_causal: its tokens go in one decode with causal attention off
    chunk: object | None  # an owned mtmd_input_chunk copy, freed once encoded
    embd: np.ndarray | None = None  # (n_tokens, n_embd) float32 once encoded
    used: int = 0
    n_pos: int = 0  # positions it takes in the sequence (M-RoPE: max(nx, ny); else n_tokens)
    grid: np.ndarray | None = None  # M-RoPE: (n_tokens, 4) int32 (t, y, x, z) of each row from its first position
    audio: bool = False  # a window of an audio clip (key "<sha256>#<window>")

    @property
    def frame(self) -> bool:
        """A frame of a video (key "f:<sha256 of its pixels>")."""
        return self.key.startswith(FRAME)


FRAME = "f:"  # the key prefix of a video's frames

_libc = ctypes.CDLL(None)
_libc.strdup.restype, _libc.strdup.argtypes = ctypes.c_void_p, [ctypes.c_char_p]


class ImageStore:
    """One mtmd context for one text model and its projector (vision, audio or both); raises ValueError for a
    file it cannot load."""

    def __init__(self, model: LlamaModel, path: str | Path, n_threads: int):
        # mtmd's own log (clip loading, per-image debug lines) goes where llama.cpp's does (native.py)
        mtmd.mtmd_helper_log_set(native._LOG_CALLBACK, None)
        params = mtmd.mtmd_context_params_default()
        params.media_marker = MARKER.encode()
        params.n_threads = n_threads
        params.print_timings = False
        self.path = Path(path)
        self.ptr = mtmd.mtmd_init_from_file(str(path).encode(), model.ptr, params)
        if not self.ptr:
            raise ValueError(f"cannot load the projector {path}: not an mmproj GGUF, or not one made for "
                             f"this model (its embedding size must be the model's); see the log for llama.cpp's reason")
        self.vision = bool(mtmd.mtmd_support_vision(self.ptr))
        self.audio = bool(mtmd.mtmd_support_audio(self.ptr))
        self.sample_rate = mtmd.mtmd_get_audio_sample_rate(self.ptr) if self.audio else 0
        if not (self.vision or self.audio):
            self.close()
            raise ValueError(f"{path} has neither a vision nor an audio encoder: it cannot take images or audio")
        self.mrope = bool(mtmd.mtmd_decode_use_mrope(self.ptr))
        self.n_embd = llama_cpp.llama_model_n_embd_inp(model.ptr)
        self._by_key: dict[str, ImageEntry] = {}
        self._by_serial: dict[int, ImageEntry] = {}
        self._serial = 0
        self._geometry: dict[int, tuple[int, int]] = {}  # serial -> (n_tokens, n_pos), kept after the entry goes
        self._clock = 0
        self.encoded = 0  # mtmd encodes run (one per distinct image while its embeddings are kept)
        self.clips = ClipLayouts(lambda segment: model.tokenize(segment, add_special=False),
                                 [model.bos_id] if model.add_bos and model.bos_id >= 0 else [],
                                 [model.eos_id] if model.add_eos and model.eos_id >= 0 else [])
        self.frames: dict[str, tuple[int, float]] = {}  # the last prompt's videos' (frames, fps), by their keys

    def tokenize(self, text: str, images: list[ImageData], pinned: set[int]) -> list[int]:
        """The prompt's tokens: `text` holds one MARKER per image, in order. `pinned`: images that running or
        waiting requests still need (never dropped to make room). Raises PromptError naming a bad image."""
        self.frames = {}
        clips = [image.key for image in images if image.kind == "audio"]
        if len(clips) == len(images):
            tokens = self.clips.build(text, clips, self._window_rows)
            if tokens is not None:  # every clip heard before: no spectrogram computed again
                return tokens
        bitmaps, feeds = [], []
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            for image in images:
                if image.kind == "video":
                    bitmap, feed = self._video_bitmap(image)
                    feeds.append(feed)  # the callback lives until mtmd_tokenize has expanded it
                else:
                    bitmap = self._clip_bitmap(image) if image.kind == "audio" else self._image_bitmap(image)
                bitmaps.append(bitmap)
                mtmd.mtmd_bitmap_set_id(bitmap, image.key.encode())
            raw = text.encode()
            inp = mtmd.mtmd_input_text(raw, len(raw), True, True)
            array = (mtmd.mtmd_bitmap_p_ctypes * max(1, len(bitmaps)))(*bitmaps)
            rc = mtmd.mtmd_tokenize(self.ptr, chunks, ctypes.byref(inp), array, len(bitmaps))
            if rc == 1:
                raise PromptError(f"the prompt has {text.count(MARKER)} media markers for {len(images)} images and "
                                  f"clips: remove the text {MARKER!r} from the messages")
            if rc != 0:
                raise PromptError(f"the projector could not prepare the media (mtmd_tokenize returned {rc})")
            tokens, windows = self._tokens(chunks, pinned)
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            for bitmap in bitmaps:
                mtmd.mtmd_bitmap_free(bitmap)
        for clip in set(clips):
            if clips.count(clip) == 1 and clip in windows:  # (two alike side by side read as one of two windows)
                self.clips.remember(clip, windows[clip])
        if len(clips) == len(images):
            self.clips.learn(text, clips, tokens, self._window_rows)
        return tokens

    def _window_rows(self, key: str) -> list[int] | None:
        """A kept clip window's placeholder tokens (it counts as used now); None if it was dropped."""
        entry = self._by_key.get(key)
        if entry is None:
            return None
        self._clock += 1
        entry.used = self._clock
        return [placeholder(entry.serial, j) for j in range(entry.n_tokens)]

    def _image_bitmap(self, image: ImageData):
        buf = (ctypes.c_uint8 * len(image.data)).from_buffer_copy(image.data)
        bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(self.ptr, buf, len(image.data), False)
        if not bitmap:
            raise PromptError(f"{image.where}: the image cannot be decoded ({len(image.data)} bytes; "
                              "PNG, JPEG, BMP, GIF, TGA, PSD, HDR and PNM images can)")
        return bitmap

    def _clip_bitmap(self, clip: ImageData):
        """An audio bitmap of the clip's samples at the projector's rate (audio.py); PromptError if unreadable."""
        samples = clip.decoded
        if samples is None:  # (the engine reads every clip before its request queues: prepare.py)
            try:
                samples = audio.decode_clip(clip.data, self.sample_rate, clip.where, clip.fmt)
            except audio.AudioDecodeError as exc:
                raise PromptError(str(exc)) from exc
        return mtmd.mtmd_bitmap_init_from_audio(len(samples), samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))

    def _video_bitmap(self, video: ImageData):
        """A lazy bitmap that gives libmtmd the video's items (video.py) as mtmd_helper_bitmap_init_from_buf does:
        text items as text, frames as mergeable images keyed by their pixels. PromptError if unreadable."""
        decoded = video.decoded
        if decoded is None:  # (the engine reads every video before its request queues: prepare.py)
            try:
                decoded = decode_video(video.data, video.fps, video.max_frames, video.where)
            except VideoDecodeError as exc:
                raise PromptError(str(exc)) from exc
        self.frames[video.key] = (len(decoded.frames), decoded.fps)
        items = iter(decoded.items())
        pair_keys = self.mrope  # Qwen-VL projectors merge two frames into one chunk, which takes the first's id

        def key_of(frame: Frame, following: Frame | None) -> str:
            return FRAME + frame.key + (f"+{following.key}" if pair_keys and following is not None else "")

        frames = decoded.frames
        keys = {id(f): key_of(f, frames[i + 1] if i + 1 < len(frames) else None) for i, f in enumerate(frames)}

        def feed(_index, _user, out_bitmap, out_text) -> int:
            try:
                item = next(items)
            except StopIteration:
                return -1
            if isinstance(item, str):
                ctypes.cast(out_text, ctypes.POINTER(ctypes.c_void_p))[0] = _libc.strdup(item.encode())
                return 0
            height, width = item.rgb.shape[:2]
            bitmap = mtmd.mtmd_bitmap_init(width, height, item.rgb.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)))
            mtmd.mtmd_bitmap_set_mergeable(bitmap, True)
            mtmd.mtmd_bitmap_set_id(bitmap, keys[id(item)].encode())
            out_bitmap[0] = bitmap
            return 0

        callback = mtmd.mtmd_bitmap_lazy_callback(feed)
        return mtmd.mtmd_bitmap_init_lazy(self.ptr, video.key.encode(), None, callback), callback

    def _tokens(self, chunks, pinned: set[int]) -> tuple[list[int], dict[str, list[str]]]:
        """The chunks' tokens, and each clip's windows (clip key -> the windows' keys, in order)."""
        tokens: list[int] = []
        windows: dict[str, list[str]] = {}
        pinned = set(pinned)  # this prompt's own images too, as they are registered
        window, last_clip = 0, None  # a clip's windows are consecutive audio chunks with its id
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                pointer = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                tokens.extend(pointer[:n.value])
                last_clip = None if n.value else last_clip
                continue
            key = mtmd.mtmd_input_chunk_get_id(chunk).decode()
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_AUDIO:
                window = window + 1 if key == last_clip else 0
                last_clip, key = key, f"{key}#{window}"
                windows.setdefault(last_clip, []).append(key)
            entry = self._entry(chunk, key, pinned)
            pinned.add(entry.serial)
            tokens.extend(placeholder(entry.serial, j) for j in range(entry.n_tokens))
        return tokens, windows

    def _entry(self, chunk, key: str, pinned: set[int]) -> ImageEntry:
        self._clock += 1
        entry = self._by_key.get(key)
        if entry is None:
            audio_chunk = mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_AUDIO
            n_tokens = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
            if n_tokens >= SPAN:
                raise PromptError(f"a piece of media of {n_tokens} tokens is more than the engine takes ({SPAN - 1})")
            self._serial += 1
            entry = ImageEntry(key, self._serial, n_tokens, bool(mtmd.mtmd_decode_use_non_causal(self.ptr, chunk)),
                               mtmd.mtmd_input_chunk_copy(chunk), n_pos=mtmd.mtmd_input_chunk_get_n_pos(chunk),
                               grid=(self._line(n_tokens) if audio_chunk else self._grid(chunk, n_tokens))
                               if self.mrope else None,
                               audio=audio_chunk)
            self._by_key[key] = self._by_serial[entry.serial] = entry
            self._geometry[entry.serial] = (n_tokens, entry.n_pos)
            self._evict(pinned | {entry.serial})
        entry.used = self._clock
        return entry

    @staticmethod
    def _grid(chunk, n_tokens: int) -> np.ndarray:
        """The rows' M-RoPE positions from the image's first one, in llama_batch section order (t, y, x, z), as
        mtmd_helper_decode_image_chunk sets them (set_position_mrope_2d)."""
        out = (mtmd.mtmd_decoder_pos * n_tokens)()
        mtmd.mtmd_helper_image_get_decoder_pos(mtmd.mtmd_input_chunk_get_tokens_image(chunk), 0, out)
        return np.array([(p.t, p.y, p.x, p.z) for p in out], dtype=np.int32).reshape(n_tokens, 4)

    @staticmethod
    def _line(n_tokens: int) -> np.ndarray:
        """A clip's rows' M-RoPE positions: one line (t = y = x = row, z = 0), as mtmd's set_position_mrope_1d."""
        rows = np.arange(n_tokens, dtype=np.int32)
        return np.stack([rows, rows, rows, np.zeros_like(rows)], axis=1)

    def geometry(self, serial: int) -> tuple[int, int]:
        """(n_tokens, n_pos) of an image this store has tokenised (known even after its entry is dropped)."""
        return self._geometry[serial]

    def positions(self, prompt: np.ndarray) -> PositionMap | None:
        """The prompt's token -> position map (positions.py); None with plain positions (not M-RoPE)."""
        return PositionMap.of_prompt(prompt, image_of, self.geometry) if self.mrope else None

    def _evict(self, pinned: set[int]) -> None:
        spare = sorted((e for e in self._by_serial.values() if e.serial not in pinned), key=lambda e: e.used)
        for entry in spare[:max(0, len(self._by_serial) - MAX_KEPT)]:
            self._drop(entry)

    def _drop(self, entry: ImageEntry) -> None:
        del self._by_key[entry.key], self._by_serial[entry.serial]
        if entry.audio:
            self.clips.forget(entry.key)
        if entry.chunk:
            mtmd.mtmd_input_chunk_free(entry.chunk)
            entry.chunk = None

    def entry(self, serial: int) -> ImageEntry:
        return self._by_serial[serial]

    def embeddings(self, serial: int) -> np.ndarray:
        """The image's embeddings, encoded now if this is their first use. Raises RuntimeError if mtmd fails."""
        entry = self._by_serial[serial]
        if entry.embd is None:
            rc = mtmd.mtmd_encode_chunk(self.ptr, entry.chunk)
            if rc != 0:
                what = "clip" if entry.audio else "image"
                raise RuntimeError(f"the projector failed to encode the {what} (mtmd_encode_chunk returned {rc})")
            out = mtmd.mtmd_get_output_embd(self.ptr)
            entry.embd = np.ctypeslib.as_array(out, shape=(entry.n_tokens * self.n_embd,)).reshape(
                entry.n_tokens, self.n_embd).copy()
            mtmd.mtmd_input_chunk_free(entry.chunk)
            entry.chunk = None
            self.encoded += 1
        return entry.embd

    def close(self) -> None:
        for entry in list(self._by_serial.values()):
            self._drop(entry)
        if self.ptr:
            mtmd.mtmd_free(self.ptr)
            self.ptr = None


class EmbdBatch(BatchBuffers):
    """A llama_batch of image embeddings (token = NULL) over numpy buffers: one sequence, consecutive positions,
    or M-RoPE positions (4 per row, section-major, as llama_batch takes them for embeddings)."""

    def __init__(self, capacity: int, n_embd: int):
        super().__init__(capacity)
        self.embd = np.zeros((capacity, n_embd), np.float32)
        self.struct.embd = self.embd.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        self.pos = np.zeros(4 * capacity, np.int32)  # room for M-RoPE's 4 sections
        self.struct.pos = self.pos.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))

    def fill(self, rows: np.ndarray, first_pos: int, seq_id: int, grid: np.ndarray | None = None) -> None:
        """`rows` at positions first_pos, first_pos + 1, ...; with `grid` (those rows' (t, y, x, z) from their
        image's first position, vision.ImageEntry.grid), at first_pos + t, + y, + x and z instead."""
        n = len(rows)
        if n > self.capacity:
            raise OverflowError(f"an image piece of {n} tokens is more than the batch holds ({self.capacity})")
        self.embd[:n] = rows
        if grid is None:
            self.pos[:n] = np.arange(first_pos, first_pos + n, dtype=np.int32)
        else:  # section-major: pos[j * n + i] is row i's section j; z (unused) is not offset, as in mtmd
            sections = grid.T + np.array([[first_pos], [first_pos], [first_pos], [0]], dtype=np.int32)
            self.pos[:4 * n] = sections.reshape(-1)
        self.seq[:n] = seq_id
        self.struct.n_tokens = n
