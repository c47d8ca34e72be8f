"""Make docs/audit-report.png: `qualify audit --html` over three signed runs, one failing, shot in headless Chromium.

    .venv/bin/python tests/report/make_screenshot.py docs/audit-report.png

The runs are the report tests' (``support.audit_runs``) with the earliest one
failing, so that the top of the page shows the summary and a failing run's
matrix; the shot is the unedited page from its top to the end of that run, at
1200 CSS pixels, then palette-quantised (pngquant) and optimised (optipng)
where those tools are installed. Exits 2 with a message when Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.audit_runs import make_audit_runs
from support.chromium import Browser, find_chromium

from desktop_qualify import qualify_cli

WIDTH = 1200


def _optimise(png: Path) -> None:
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--skip-if-larger", "--quality", "80-100", "--output", str(png),
                        str(png)], check=False, timeout=120)
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", str(png)], check=False, timeout=300)


def main(out: Path) -> int:
    binary, why = find_chromium()
    if binary is None:
        print(f"headless Chromium unavailable: {why}", file=sys.stderr)
        return 2
    out = out.resolve()
    with tempfile.TemporaryDirectory(prefix="audit-report-") as tmp:
        os.chdir(tmp)  # relative paths as given read as an auditor would type them
        runs = make_audit_runs(Path(tmp), failing="run1")
        # Text order on purpose (run1, run10, run2): the report sorts by run time.
        folders = sorted(os.path.relpath(f) for f in runs.folders)
        status = qualify_cli.main(["audit", "--policy", os.path.relpath(runs.policy), "--evidence", *folders,
                                   "--html", "audit.html"])
        if status != 1:
            print(f"qualify audit exited {status}, expected 1 (one run fails)", file=sys.stderr)
            return 2
        with Browser(binary, Path(tmp) / "profile") as browser:
            browser.open(Path("audit.html"))
            browser.screenshot(out, width=WIDTH, until="section.run")
    _optimise(out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/audit-report.png")))
