"""Where models come from: the embedded default, a user's GGUF file, and the models other apps downloaded.

Qt-free, and below the engine (the engine imports this package, never the other way round).
"""

from app.models.default import (
    DEFAULT_MODEL_FILE,
    DEFAULT_MODEL_PACKAGE,
    DEFAULT_MODEL_WHEEL,
    GGUF_MAGIC,
    InvalidModelError,
    ModelNotFoundError,
    default_model_path,
    validate_gguf,
)
from app.models.discover import ModelEntry, discover
from app.models.info import ModelFacts
from app.models.memory import KV_TYPES, MemoryEstimate, estimate_memory
from app.models.names import model_name
from app.models.scan_cache import ScanCache

__all__ = ["DEFAULT_MODEL_FILE", "DEFAULT_MODEL_PACKAGE", "DEFAULT_MODEL_WHEEL", "GGUF_MAGIC", "KV_TYPES",
           "InvalidModelError", "MemoryEstimate", "ModelEntry", "ModelFacts", "ModelNotFoundError", "ScanCache",
           "default_model_path", "discover", "estimate_memory", "model_name", "validate_gguf"]
