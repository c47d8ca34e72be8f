"""The launch probe: start the GUI for real and report named checks (qualify-probe v2)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import PySide6
from PySide6.QtWidgets import QApplication

from . import __version__
from .build_info import build_info
from .notebook import NotesError, read_note, write_note
from .window import NotesWindow, image_is_drawn


def _own_executable_sha256() -> str:
    # The installed file that was started (the zipapp): the producer compares it with the installed manifest.
    digest = hashlib.sha256()
    with Path(os.path.realpath(sys.argv[0])).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _checks() -> list[dict[str, object]]:
    checks: list[dict[str, object]] = []
    platform_name = QApplication.platformName()
    checks.append({"name": "qt-platform-loaded", "passed": bool(platform_name),
                   "detail": f"Qt {PySide6.__version__} on the {platform_name!r} platform"})
    with tempfile.TemporaryDirectory() as folder:
        window = NotesWindow(Path(folder))
        window.show()
        image = window.render_window()
        checks.append({"name": "window-renders", "passed": image_is_drawn(image),
                       "detail": f"main window drawn at {image.width()}x{image.height()}"})
        try:
            write_note(Path(folder), "probe.txt", "Grüße ✓")
            same = read_note(Path(folder), "probe.txt") == "Grüße ✓"
            detail = "a UTF-8 note written and read back"
        except (NotesError, OSError) as exc:
            same, detail = False, str(exc)[:300]
        checks.append({"name": "notebook-roundtrip", "passed": same, "detail": detail})
    info = build_info()
    checks.append({"name": "build-info-embedded", "passed": info["platform"] != "unbuilt",
                   "detail": f"built from {info['build_sha'][:12]} for {info['platform']}"})
    return checks


def probe(record: Path) -> int:
    info = build_info()
    checks = _checks()
    report = {"kind": "qualify-probe", "version": 2, "app_version": __version__, "build_sha": info["build_sha"],
              "platform": info["platform"], "executable_sha256": _own_executable_sha256(), "checks": checks}
    record.write_text(json.dumps(report, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    passed = sum(1 for check in checks if check["passed"])
    sys.stdout.write(f"probe: {passed} of {len(checks)} checks passed\n")
    return 0
