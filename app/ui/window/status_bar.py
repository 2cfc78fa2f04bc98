"""StatusBar: the window's status bar, whose messages are elided to the room they have (the full text in a
tooltip) instead of being cut mid-word by the permanent readouts beside them.

QStatusBar paints a message itself, clipped where the permanent widgets begin. Here the message is shown by a
label of its own (`message`, object name "statusMessage", the leftmost permanent widget, stretching), fed by
`messageChanged`, so `showMessage`, `clearMessage` and `currentMessage` (and the actions' status tips) work as
in any status bar; the bar paints only its panel.
"""

from __future__ import annotations

from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QStatusBar, QStyle, QStyleOption, QWidget

from app.ui.widgets.elided_label import ElidedLabel

READOUT_SHARE = 0.6  # of the bar's width at most for each readout beside the message (the model's), so a
# message keeps room to be read in a narrow window


class StatusBar(QStatusBar):
    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.message = ElidedLabel(objectName="statusMessage")
        self.message.setAccessibleName("Status")
        self.addPermanentWidget(self.message, 1)
        self.messageChanged.connect(self.message.setText)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        for label in self.findChildren(ElidedLabel):
            if label is not self.message:
                label.setMaximumWidth(max(label.minimumSizeHint().width(), int(self.width() * READOUT_SHARE)))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PE_PanelStatusBar, option, painter, self)
