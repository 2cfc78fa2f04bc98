"""Images in the engine's steps: a request's images tokenised at admission, their embeddings decoded in pieces.

`VisionStep`, on the engine thread only. At admission a request with image parts is rendered with one
`media.MARKER` per image (as llama-server renders it) and tokenised by libmtmd into text tokens and image
placeholders (projector.py). The scheduler never puts a placeholder into a text batch (`Sequence.text_ready`
stops a text run at the next image); instead each step first decodes one piece of image embeddings, at most
`prefill_chunk` rows (fewer beside generating panes: what the pacer lets a prompt add to their step), for the
first sequence (in admission order) whose prompt goes on with an image, and then runs the usual step without
that sequence's text (the piece was its share of the step), so the other panes keep decoding while an image
is prefilled. An image is encoded the
first time a piece of it is decoded and never again while its embeddings are kept; a sequence that copies a
prefix holding an image from another slot (or finds it in the prompt cache) decodes nothing of it.

Invariants: a piece of one image goes into a llama_decode of its own, at the sequence's next positions (with an
M-RoPE projector, the (t, y, x) of its rows from the image's first position, and the text after the image
`n_pos` positions on: positions.py); an image that mtmd says needs non-causal attention
goes whole into one decode with causal attention off, and causal attention is back on when it returns.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time

import llama_cpp

from app.engine.core_share import CORES
from app.engine.events import EventBuilder
from app.engine.loop import Loop
from app.engine.prompt import PromptError
from app.engine.request import Sequence
from app.engine.scheduler import PrefillPacer
from app.engine.types import EngineConfig, GenerationRequest
from app.engine.vision import media
from app.engine.vision.prepare import Prepared, prepare
from app.engine.vision.projector import EmbdBatch, ImageStore, image_of, serials

log = logging.getLogger("chorus.engine")

NO_PROJECTOR = ("this model was opened without a vision projector (mmproj), so it cannot read images: open it "
                "with its projector, or remove the images from the messages")
NO_EYES_FOR_VIDEO = ("this model was opened without a vision projector (mmproj), so it cannot watch a video: open it "
                     "with its projector, or remove the videos from the messages")
NO_EARS = ("this model was opened without an audio projector (mmproj), so it cannot hear: open it with an audio "
           "projector, or remove the clips from the messages")


def image_piece_rows(config: EngineConfig, pacer: PrefillPacer, n_decode: int, spent_s: float = 0.0) -> int:
    """Rows of an image piece: `prefill_chunk` while no pane is generating; beside `n_decode` generating panes,
    what the pacer lets a prompt add to their step at `image_step_factor` x that step (scheduler.py), at least
    `min_prefill_per_step`, less the rows that `spent_s` (this iteration's admission, prefix copy and encode of
    that prompt) would have cost at the pacer's per-token estimate; 0 when that leaves less than the minimum:
    then its share of the step is spent, and its piece waits for the next step."""
    if not n_decode:
        return config.prefill_chunk
    allowance = pacer.prefill_allowance(n_decode, config.image_step_factor)
    if spent_s > 0 and pacer.prefill_token_s:
        allowance -= math.ceil(spent_s / pacer.prefill_token_s)
        if allowance < config.min_prefill_per_step:
            return 0
    return max(config.min_prefill_per_step, min(allowance, config.prefill_chunk))


class VisionStep:
    """Owns the vision projector's image store (`store`, None for a text-only model), the batch its image
    pieces are decoded from, and this iteration's engine-thread time per prompt outside its pieces (`spend`).
    Works on the engine's renderer, context, running sequences, pacer, stats and LoRA adapters; ends a request
    whose image fails through `finish`."""

    def __init__(self, loop: Loop, store: ImageStore | None, renderer):
        self.config, self._ctx, self._stats, self._pacer = loop.config, loop.ctx, loop.stats, loop.pacer
        self._adapters, self._running, self._finish, self._id = loop.adapters, loop.running, loop.finish, loop.engine_id
        self.store = store
        self._renderer = renderer
        self.embd_batch: EmbdBatch | None = None
        self.spent: dict[Sequence, float] = {}  # this iteration's admission/copy/encode time per prompt

    def new_iteration(self) -> None:
        """A new iteration of the engine thread: nothing spent yet on any prompt outside its pieces."""
        self.spent = {}

    def prompt_tokens(self, request: GenerationRequest, prepared: Prepared | None = None
                      ) -> tuple[str, list[int], list[media.ImageData]]:
        """The request's prompt text (markers in place of images and clips), its tokens and its images and clips.
        `prepared`: its media read before it queued (prepare.py: videos' frames, clips' samples), else read here.
        Raises PromptError for media the model cannot take, an image or clip that cannot be read, or one last."""
        if not media.has_parts(request.messages):
            text = self._renderer.text(request)
            return text, self._renderer.tokens(request, text), []
        self.check_media(request.messages)
        prepared = prepared or prepare(request)
        if prepared.error is not None:
            raise PromptError(prepared.error)
        messages, images = prepared.messages, prepared.parts
        text = self._renderer.text(dataclasses.replace(request, messages=messages))
        pinned = set().union(*(serials(seq.prompt) for seq in self._running))
        tokens = self.store.tokenize(text + request.reply_prefix, images, pinned)  # one string, as prompt.py
        if tokens and tokens[-1] < 0:
            raise PromptError("the prompt ends with an image or a clip: the chat template must put text after it")
        return text, tokens, images

    def check_media(self, messages: list[dict]) -> None:
        """PromptError if the projector (or its absence) cannot take the messages' images or clips."""
        if media.has_images(messages) and (self.store is None or not self.store.vision):
            raise PromptError(NO_PROJECTOR if self.store is None else
                              f"the projector {self.store.path.name} has no vision encoder, so this model cannot "
                              "read images: remove the images from the messages")
        if media.has_video(messages) and (self.store is None or not self.store.vision):
            raise PromptError(NO_EYES_FOR_VIDEO if self.store is None else
                              f"the projector {self.store.path.name} has no vision encoder, so this model cannot "
                              "watch a video: remove the videos from the messages")
        if media.has_audio(messages) and (self.store is None or not self.store.audio):
            raise PromptError(NO_EARS if self.store is None else
                              f"the projector {self.store.path.name} has no audio encoder, so this model cannot "
                              "hear: open it with an audio projector, or remove the clips from the messages")

    def clip_windows(self, prompt) -> int:
        """The audio windows (chunks of clips, each encoded on its own) a tokenised prompt holds."""
        return sum(self.store.entry(serial).audio for serial in serials(prompt))

    def too_long(self, n_prompt: int, n_media: int, media_parts: list[media.ImageData], n_ctx: int) -> str:
        """Why a prompt does not fit its slot, with the sizes: its tokens, those of its media, what a slot holds."""
        counts = [(sum(m.kind == kind for m in media_parts), noun)
                  for kind, noun in (("image", "image"), ("audio", "audio clip"), ("video", "video"))]
        what = " and ".join(f"{n} {noun}{'s' if n > 1 else ''}" for n, noun in counts if n)
        videos = [self.store.frames[m.key] for m in media_parts if m.kind == "video" and m.key in self.store.frames]
        frames = "; ".join(f"{n} frames at {fps:g} fps" for n, fps in videos)
        media_tokens = f", {n_media} of them for {what}{f' ({frames})' if frames else ''}," if media_parts else ""
        fix = "lower the video's fps or frame budget, shorten it" if videos else "shorten it"
        return (f"the prompt is {n_prompt} tokens{media_tokens} but a slot holds {n_ctx} (prompt plus reply): "
                f"{fix} or raise the context per slot")

    def video_frames(self, prompt) -> int:
        """The distinct video frames a tokenised prompt holds."""
        return sum(self.store.entry(serial).frame for serial in serials(prompt))

    def marked_text(self, request: GenerationRequest) -> str:
        """The prompt text of a request with images or clips, a marker in place of each (what `render_prompt`
        shows)."""
        if media.has_parts(request.messages):
            request = dataclasses.replace(request, messages=media.split_images(request.messages)[0])
        return self._renderer.text(request)

    def prefill(self, events: EventBuilder) -> Sequence | None:
        """Decode one piece of image embeddings for the first sequence whose prompt goes on with an image.
        Returns that sequence (a piece decoded, or it ended with an error), None if no prompt is at an image.
        The piece is the sequence's share of this step: the step plans no text of it (app/engine/step.py), so the step
        that finishes an image does not also take the text after it."""
        for seq in self._running:
            if (seq.finished or seq.donor is not None or seq.pending_token is not None
                    or seq.prompt_remaining <= 0 or seq.prompt[seq.n_prompt_done] >= 0):
                continue
            self.piece(seq, events)
            return seq
        return None

    def piece(self, seq: Sequence, events: EventBuilder) -> None:
        serial, row = image_of(seq.prompt[seq.n_prompt_done])
        entry = self.store.entry(serial)
        left = entry.n_tokens - row
        if entry.non_causal and left > self._ctx.n_batch:
            self._finish(seq, "error", events, f"the image is {entry.n_tokens} tokens, which this model must "
                         f"decode at once, but a batch holds {self._ctx.n_batch}: raise the batch size", kind="prompt")
            return
        try:
            before, started = self.store.encoded, time.perf_counter()
            embd = self.store.embeddings(serial)
            if self.store.encoded > before:
                kind = "clips_encoded" if entry.audio else "frames_encoded" if entry.frame else "encoded"
                self._stats.record_images(**{kind: 1})
                self.spend(seq, time.perf_counter() - started)
        except RuntimeError as exc:
            self._finish(seq, "error", events, str(exc), kind="prompt")
            return
        n = left if entry.non_causal else min(left, self._image_piece_rows(seq))
        if n <= 0:  # its share of this step went to its admission, prefix copy or encode
            return
        if left - n == 1 and n > 1:  # never leave a one-row piece: alone in its ubatch it meets another kernel
            n -= 1
        if self.embd_batch is None:
            self.embd_batch = EmbdBatch(self._ctx.n_batch, self.store.n_embd)
        first = seq.position(seq.n_past - row)  # the image's first position (positions.py)
        if entry.grid is None:
            self.embd_batch.fill(embd[row:row + n], first + row, seq.slot)
        else:  # M-RoPE: (t, y, x) from the image's first position
            self.embd_batch.fill(embd[row:row + n], first, seq.slot, entry.grid[row:row + n])
        self._adapters.apply(self._ctx, seq.request.lora_key)  # the image's rows see its request's LoRA set
        rc, elapsed = self._decode_embd(entry.non_causal)
        if rc != 0:
            why = "no room left in the KV cache" if rc == 1 else f"llama_decode returned {rc}"
            log.error("image piece of %s tokens for request %s failed: %s", n, seq.id, why)
            self._finish(seq, "error", events, f"decoding the image failed ({why})", kind="decode")
            return
        seq.n_past += n
        seq.n_prompt_done += n
        self._stats.record_step(0, n, elapsed)
        self._stats.record_images(**{"clip_rows" if entry.audio else "image_rows": n})
        if not entry.non_causal and any(other.pending_token is not None for other in self._running):
            self._pacer.observe_piece(n, elapsed)  # a piece the pacer sized, beside generating panes

    def _image_piece_rows(self, seq: Sequence) -> int:
        """Rows of the sequence's image piece in this step (`image_piece_rows`)."""
        n_decode = sum(other.pending_token is not None for other in self._running)
        return image_piece_rows(self.config, self._pacer, n_decode, self.spent.get(seq, 0.0))

    def spend(self, seq: Sequence, seconds: float) -> None:
        """Engine-thread time spent on the sequence's prompt in this iteration outside its pieces (admission,
        prefix copy, encode): taken out of its share of the step (`image_piece_rows`)."""
        self.spent[seq] = self.spent.get(seq, 0.0) + seconds

    def _decode_embd(self, non_causal: bool) -> tuple[int, float]:
        ctx = self._ctx
        ctx.share_threads(CORES.busy(self._id))
        if non_causal:
            llama_cpp.llama_set_causal_attn(ctx.ptr, False)
        started = time.perf_counter()
        try:
            rc = llama_cpp.llama_decode(ctx.ptr, self.embd_batch.struct)
        finally:
            if non_causal:
                llama_cpp.llama_set_causal_attn(ctx.ptr, True)
        return rc, time.perf_counter() - started

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
