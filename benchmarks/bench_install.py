"""What installing costs per GiB: the archive and deb installers vs the format's own extractor on the same file.

One payload of about 256 MiB (``BENCH_INSTALL_MIB`` to change it), half random and half repeated text in each
MiB, so it packs about 2:1 like a desktop app's binaries, is packed once as a ``.tar.gz`` (gzip -1) and once as a
``.deb`` (``dpkg-deb --build -Zgzip -z1``). Each is then installed through the producer's adapter
(``install_with``: the hardened unpack; for the deb, dpkg-deb streaming its data tar twice, checked and then
unpacked by the same parser, then the tree audit) and, interleaved run by run, extracted by the baseline:
``tar -xzf`` of the same archive, ``dpkg-deb -x`` of the same package. The figure is seconds per GiB of payload
(median of paired runs); the target is at most ``TARGET_RATIO`` times the baseline. Runnable alone:
``python benchmarks/bench_install.py``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import Row
from desktop_qualify.producer.installers._installers import install_with

REPEAT = 5
TARGET_RATIO = 2.0
MIB = 1024 * 1024
FILES = 8


def _payload_mib() -> int:
    return max(FILES, int(os.environ.get("BENCH_INSTALL_MIB", "256")))


def _write_payload(root: Path, mib: int) -> int:
    """``FILES`` executables holding ``mib`` MiB in all; the byte count."""
    text = (b"desktop-qualify install benchmark: a line that repeats like tables and strings do\n" * 8192)[:MIB // 2]
    per_file = mib // FILES
    for index in range(FILES):
        path = root / f"bin-{index}"
        with path.open("wb") as handle:
            for _ in range(per_file):
                handle.write(os.urandom(MIB // 2))
                handle.write(text)
        path.chmod(0o755)
    return per_file * FILES * MIB


def _timed(fn: Callable[[], object], before: Callable[[], None]) -> float:
    before()
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {done.stderr[-400:]!r}")


def _row(kind: str, baseline: str, ours: list[float], base: list[float], gib: float) -> Row:
    ours_per_gib, base_per_gib = statistics.median(ours) / gib, statistics.median(base) / gib
    ratio = ours_per_gib / base_per_gib
    return Row(f"install per GiB ({kind} installer)", baseline, round(ours_per_gib, 2), "s/GiB",
               f"<= {TARGET_RATIO:.1f}x baseline", ratio <= TARGET_RATIO,
               f"median of {len(ours)} paired runs on {gib * 1024:.0f} MiB: {ours_per_gib:.2f} s/GiB against "
               f"{base_per_gib:.2f} s/GiB, {ratio:.2f}x",
               {"ours_s_per_gib": round(ours_per_gib, 3), "baseline_s_per_gib": round(base_per_gib, 3),
                "ratio": round(ratio, 3)})


def bench() -> list[Row]:
    """One row per installer kind: seconds per GiB through the adapter, against the format's own extractor."""
    tar, dpkg_deb = shutil.which("tar"), shutil.which("dpkg-deb")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-install-") as scratch:
        root = Path(scratch)
        bundle = root / "bundle" / "app"
        bundle.mkdir(parents=True)
        gib = _write_payload(bundle, _payload_mib()) / 1024**3
        target = root / "out"

        def fresh() -> None:
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()

        if tar is None:
            rows.append(Row("install per GiB (archive installer)", "tar -xzf", None, "s/GiB",
                            f"<= {TARGET_RATIO:.1f}x baseline", None, "not measured: tar is not installed"))
        else:
            archive = root / "app.tar.gz"
            _run([tar, "-I", "gzip -1", "-cf", str(archive), "-C", str(bundle.parent), "app"])
            ours, base = [], []
            for _ in range(REPEAT):
                ours.append(_timed(lambda: install_with("archive", archive, target / "prefix"), fresh))
                base.append(_timed(lambda: _run([tar, "-xzf", str(archive), "-C", str(target)]), fresh))
            rows.append(_row("archive", "tar -xzf of the same .tar.gz", ours, base, gib))
        if dpkg_deb is None:
            rows.append(Row("install per GiB (deb installer)", "dpkg-deb -x", None, "s/GiB",
                            f"<= {TARGET_RATIO:.1f}x baseline", None, "not measured: dpkg-deb is not installed"))
        else:
            tree = root / "deb-root"
            (tree / "DEBIAN").mkdir(parents=True)
            (tree / "DEBIAN" / "control").write_text("Package: bench\nVersion: 1.0\nArchitecture: all\n"
                                                     "Maintainer: Bench <b@example.invalid>\nDescription: bench\n")
            (tree / "opt").mkdir()
            bundle.rename(tree / "opt" / "app")
            package = root / "app.deb"
            _run([dpkg_deb, "--build", "--root-owner-group", "-Zgzip", "-z1", str(tree), str(package)])
            ours, base = [], []
            for _ in range(REPEAT):
                ours.append(_timed(lambda: install_with("deb", package, target / "prefix"), fresh))
                base.append(_timed(lambda: _run([dpkg_deb, "-x", str(package), str(target)]), fresh))
            rows.append(_row("deb", "dpkg-deb -x of the same .deb", ours, base, gib))
    return rows


if __name__ == "__main__":
    for row in bench():
        print(row)
