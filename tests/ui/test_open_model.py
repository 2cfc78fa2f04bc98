"""*Open model…* asks for a vision projector only for a model whose GGUF says it reads images: never for the
embedded text model, once for a copy of it whose chat template writes image placeholders (Gemma 3's `<start_of_image>`;
no projector beside either file)."""

import shutil

from PySide6.QtWidgets import QFileDialog, QMessageBox

from app.models import projectors
from tests.fixtures.gguf_variants import write_variant

IMAGE_TEMPLATE = ("{% for m in messages %}<start_of_turn>{{ m.role }}\n{% if m.content is string %}{{ m.content }}"
                  "{% else %}{% for part in m.content %}{% if part.type == 'image' %}<start_of_image>{% else %}"
                  "{{ part.text }}{% endif %}{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
                  "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def test_a_text_model_is_never_asked_for_a_projector(window, model_path, tmp_path, monkeypatch):
    text_model = tmp_path / "text" / model_path.name
    text_model.parent.mkdir()
    shutil.copyfile(model_path, text_model)  # alone in its folder: no projector beside it
    (tmp_path / "vision").mkdir()
    vision_model = write_variant(model_path, tmp_path / "vision" / "tiny-vision.gguf", IMAGE_TEMPLATE)
    assert not projectors.takes_images(text_model) and projectors.takes_images(vision_model)
    asked, loaded = [], []
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kwargs: asked.append(args[2]) or QMessageBox.No)
    window.models.load_asked = lambda path, mmproj=None: loaded.append((path, mmproj))
    for path in (text_model, vision_model):
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, chosen=path, **kwargs: (str(chosen), ""))
        window.models.choose_model()
    assert loaded == [(str(text_model), None), (str(vision_model), None)]
    assert len(asked) == 1 and "tiny-vision.gguf reads images" in asked[0]
