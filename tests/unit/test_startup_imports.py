"""Start-up stays light: heavy libraries load only for the commands and modes that need them (issue 8).

Each check runs in a fresh interpreter, as a user's command would, and reads
``sys.modules`` after the command returned.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.evidence_factory import make_evidence

CHILD = """
import contextlib, io, json, sys
from desktop_qualify.qualify_cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
print(json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""


def _run(*argv: str) -> tuple[int, set[str], set[str]]:
    """Exit status, the top-level packages loaded, and every module loaded."""
    done = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True,
                          timeout=120)
    result = json.loads(done.stdout.splitlines()[-1])
    modules = set(result["modules"])
    return result["status"], {name.split(".")[0] for name in modules}, modules


def test_help_loads_no_validation_signing_or_github_library() -> None:
    status, roots, _ = _run("--help")
    assert status == 0
    assert not roots & {"pydantic", "cryptography", "sigstore", "github", "rfc8785", "requests"}


def test_a_local_verify_loads_neither_sigstore_nor_pygithub(tmp_path: Path) -> None:
    ev = make_evidence(tmp_path)
    status, roots, modules = _run(*ev.verify_argv())
    assert status == 0
    assert "pydantic" in roots  # the check did run
    assert not roots & {"sigstore", "sigstore_models", "github"}
    # Certificates are GitHub mode's; a local verify neither reads X.509 nor builds a JSON Schema.
    assert "cryptography.x509" not in modules
    assert "desktop_qualify.evidence_schemas._export" not in modules


def test_no_pydantic_plugin_can_observe_the_validation(tmp_path: Path) -> None:
    """Plugins are third-party code around every validation: off, even when the environment asks for them."""
    code = ("import os; os.environ['PYDANTIC_DISABLE_PLUGINS'] = ''\n"
            "import desktop_qualify.evidence_schemas\n"
            "from pydantic.plugin._loader import get_plugins\n"
            "print(os.environ['PYDANTIC_DISABLE_PLUGINS'], len(list(get_plugins())))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["__all__", "0"]


def test_the_producer_loads_pygithub_only_for_a_github_gate() -> None:
    """A local produce pays for no GitHub client: PyGithub and requests load when a GitHub gate is built."""
    code = ("import sys\nimport desktop_qualify.producer._cli, desktop_qualify.producer._pipeline\n"
            "print(sorted({name.split('.')[0] for name in sys.modules} & {'github', 'requests', 'sigstore'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"
