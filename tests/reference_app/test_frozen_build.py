"""Real PyInstaller builds: reference_app/skillhost.spec, and the app's own build script that ships its archive."""

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest
from skillhost_testutil import REPO, parse_single_line

SPEC = REPO / "reference_app" / "skillhost.spec"


def _pyinstaller(tmp_path, build_info_env, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "QUALIFY_BUILD_INFO"}
    if build_info_env is not None:
        env["QUALIFY_BUILD_INFO"] = build_info_env
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--clean",
        "--log-level",
        "WARN",
        "--distpath",
        str(tmp_path / "DIST"),
        "--workpath",
        str(tmp_path / "WORK"),
        str(SPEC.relative_to(REPO)),
    ]
    return subprocess.run(cmd, cwd=str(REPO), env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _have_pyinstaller():
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        return False
    return True


needs_pyinstaller = pytest.mark.skipif(not _have_pyinstaller(), reason="PyInstaller not installed")


@needs_pyinstaller
@pytest.mark.parametrize("content", [None, "not json", '{"build_sha": "XYZ"}', '{"build_sha": "' + "a" * 39 + '"}'])
def test_spec_refuses_bad_build_info(tmp_path, content):
    env_value = None
    if content is not None:
        p = tmp_path / "build_info.json"
        p.write_text(content)
        env_value = str(p)
    proc = _pyinstaller(tmp_path, env_value, timeout=120)
    assert proc.returncode != 0
    assert "skillhost.spec:" in proc.stderr + proc.stdout
    assert not (tmp_path / "DIST" / "skillhost").exists()


def _keep_record(name, data):
    """CI keeps each platform's frozen probe and journey output (ci.yml uploads SKILLHOST_RECORD_DIR)."""
    folder = os.environ.get("SKILLHOST_RECORD_DIR")
    if folder:
        os.makedirs(folder, exist_ok=True)  # noqa: PTH103
        with open(os.path.join(folder, name), "wb") as fh:  # noqa: PTH118, PTH123
            fh.write(data)


def _assert_kernel_steps_name_their_layer(journey):
    """Each kernel step names the layer that refused it; on Linux the seccomp layer is the allow-list."""
    kernel = {s["id"]: s["detail"] for s in journey["steps"] if s["id"].startswith("kernel-refuses-")}
    assert len(kernel) == 5
    assert all(" by " in d and "no layer" not in d for d in kernel.values()), kernel
    if sys.platform.startswith("linux"):
        seccomp = [e["detail"] for e in journey["isolation_layers"] if e["name"] == "seccomp"]
        from skillhost.os_sandbox._seccomp_bpf import ALLOWED

        assert seccomp == [f"filter mode 2: allow-list of {len(ALLOWED)} calls"]


def _build_release_and_unpack(tmp_path, sha, platform):
    """Run the app's own build as the policy does; unpack its one archive with the producer's hardened unpack."""
    from desktop_qualify.qualify_archive import unpack

    info = tmp_path / "build_info.json"
    info.write_text(json.dumps({"kind": "qualify-build-info", "version": 1, "build_sha": sha,
                                "built_at": "2026-12-01T00:00:00.000000Z", "source_ref": "refs/heads/main",
                                "platform": platform}))
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "QUALIFY_BUILD_INFO"}
    env["QUALIFY_BUILD_INFO"] = str(info)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(REPO / "reference_app" / "tools" / "build_release.py"), "--out",
                           str(out)], cwd=str(REPO / "reference_app"), env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    build_s = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    suffix = ".zip" if platform == "windows" else ".tar.gz"
    assert [p.name for p in out.iterdir()] == [f"skillhost-0.1.0-{platform}{suffix}"]
    # The producer's own hardened unpack accepts what the build packed.
    prefix = tmp_path / "prefix"
    unpack(next(out.iterdir()), prefix)
    bundle = prefix / "skillhost"
    exe = bundle / ("skillhost.exe" if os.name == "nt" else "skillhost")
    assert exe.is_file()
    assert (bundle / "_internal").is_dir()
    bundled_info = bundle / "_internal" / "skillhost" / "build_info.json"
    assert json.loads(bundled_info.read_text())["build_sha"] == sha
    return bundle, exe, build_s


@needs_pyinstaller
@pytest.mark.slow
def test_the_apps_own_build_ships_an_archive_whose_bundle_probes_and_walks(tmp_path):
    """tools/build_release.py, as the policy runs it: PyInstaller, then the one release archive it ships."""
    sha = hashlib.sha256(b"skillhost-test-build").hexdigest()
    platform = {"win32": "windows", "darwin": "macos"}.get(sys.platform, "linux")
    bundle, exe, build_s = _build_release_and_unpack(tmp_path, sha, platform)

    # Run from a neutral cwd with an environment that does not point at the sources.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QUALIFY_BUILD_INFO", "QUALIFY_RECORD")}

    def run(*a):
        return subprocess.run([str(exe), *a], capture_output=True, cwd=str(tmp_path), env=env, timeout=120, check=False)

    p = run("probe", "--record", str(tmp_path / "probe.json"))
    _keep_record("probe.json", p.stdout)
    probe = parse_single_line(p.stdout)
    assert p.returncode == 0, probe
    assert json.loads((tmp_path / "probe.json").read_bytes()) == probe
    assert probe["kind"] == "qualify-probe"
    assert probe["build_sha"] == sha
    assert probe["executable_sha256"] == hashlib.sha256(exe.read_bytes()).hexdigest()
    assert all(check["passed"] for check in probe["checks"]), probe["checks"]

    j = run("journey", "--record", str(tmp_path / "journey.json"))
    _keep_record("journey.json", j.stdout)
    journey = parse_single_line(j.stdout)
    assert j.returncode == 0, journey
    assert json.loads((tmp_path / "journey.json").read_bytes()) == journey
    assert not [s for s in journey["steps"] if s["observed"] == "error"]
    assert journey["build_sha"] == sha
    _assert_kernel_steps_name_their_layer(journey)
    print(
        f"\nbuild {build_s:.1f}s; probe={json.dumps(probe, sort_keys=True)}; "
        f"steps={len(journey['steps'])}"
    )

    # A frozen bundle whose catalog no longer matches a handler refuses to start.
    handler = bundle / "_internal" / "skillhost" / "bundled_skills" / "clock" / "handler.py"
    handler.write_bytes(handler.read_bytes() + b"\n# tampered\n")
    p = run("probe")
    err = parse_single_line(p.stdout)
    assert p.returncode == 3
    assert err["code"] == "CC_SKILL_CATALOG_DRIFT"

    # No worker entry: refuse with ISOLATION_UNAVAILABLE is covered from source; usage error is JSON too.
    p = run("no-such-command")
    assert p.returncode == 2
    assert parse_single_line(p.stdout)["code"] == "CC_SKILL_USAGE"
