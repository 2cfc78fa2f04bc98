"""Audio clips as the projector hears them: a file's bytes decoded to mono float32 samples at its sample rate.

miniaudio decodes wav, mp3, flac and ogg vorbis, downmixes to one channel and resamples in one call: the same
library (and decoder configuration: f32, 1 channel, the projector's rate) that libmtmd's own helper uses, so a
wav, mp3 or flac clip is heard here exactly as llama-server hears it (which does not read ogg). No llama.cpp here.
"""

from __future__ import annotations

import miniaudio
import numpy as np

FORMATS = ("wav", "mp3", "flac", "ogg")


class AudioDecodeError(ValueError):
    """A clip that cannot be decoded (the message names the part, and the file if it has a name)."""


def decode_clip(data: bytes, rate: int, where: str, fmt: str = "") -> np.ndarray:
    """The clip's samples: mono float32 at `rate` Hz. Raises AudioDecodeError naming `where`."""
    try:
        clip = miniaudio.decode(data, output_format=miniaudio.SampleFormat.FLOAT32, nchannels=1, sample_rate=rate)
    except miniaudio.MiniaudioError as exc:
        said = f" (said to be {fmt})" if fmt else ""
        raise AudioDecodeError(f"{where}: the audio{said} cannot be decoded ({len(data):,} bytes; "
                               f"{', '.join(FORMATS[:-1])} and {FORMATS[-1]} files can)") from exc
    samples = np.frombuffer(clip.samples, dtype=np.float32)
    if not len(samples):
        raise AudioDecodeError(f"{where}: the audio has no samples")
    return samples


def seconds(samples: np.ndarray, rate: int) -> float:
    return len(samples) / rate
