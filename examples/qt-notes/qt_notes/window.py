"""The main window: an editor, a status line, open and save actions. Everything the app does goes through it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction, QImage
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow, QPlainTextEdit, QVBoxLayout, QWidget

from .notebook import NotesError, read_note, write_note


class NotesWindow(QMainWindow):
    def __init__(self, notebook: Path) -> None:
        super().__init__()
        self.notebook = notebook
        self.setWindowTitle("Qt Notes")
        self.editor = QPlainTextEdit()
        self.status = QLabel("ready")
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.editor)
        layout.addWidget(self.status)
        self.setCentralWidget(body)
        self.name = "untitled.txt"
        self.save_action = QAction("Save", self)
        self.save_action.triggered.connect(self._save)
        self.addAction(self.save_action)
        self.last_error: NotesError | None = None
        self.resize(640, 420)

    def open_note(self, name: str) -> None:
        text = read_note(self.notebook, name)
        self.name = name
        self.editor.setPlainText(text)
        self.status.setText(f"{name}: {len(text)} characters")

    def _save(self) -> None:
        try:
            written = write_note(self.notebook, self.name, self.editor.toPlainText())
        except NotesError as exc:
            self.last_error = exc
            self.status.setText(exc.message)
            return
        self.last_error = None
        self.status.setText(f"saved {self.name}: {written} bytes")

    def render_window(self) -> QImage:
        """The window as it is drawn now (under Xvfb, offscreen or a desktop alike)."""
        QApplication.processEvents()
        return self.grab().toImage()


def image_is_drawn(image: QImage) -> bool:
    """A real rendering has a size and more than one colour (a blank or failed grab has neither)."""
    if image.isNull() or image.width() == 0 or image.height() == 0:
        return False
    first = image.pixel(0, 0)
    step_x, step_y = max(1, image.width() // 40), max(1, image.height() // 40)
    return any(image.pixel(x, y) != first for x in range(0, image.width(), step_x)
               for y in range(0, image.height(), step_y))
