"""qualify_verify/_update_outcome.py's ``candidate_layers``: the candidate's own isolation layers, as its launch
probe reported them, that the update journey's launches are compared with; none when the probe wrote no report
(a mutant that read a missing report survived every update-journey row, which always carries one).
"""

from __future__ import annotations

from types import SimpleNamespace

from desktop_qualify.qualify_verify._update_outcome import candidate_layers


def _predicate(report: object) -> object:
    return SimpleNamespace(launch_probe=SimpleNamespace(report=report))


def test_a_probe_without_a_report_gives_no_layers() -> None:
    assert candidate_layers(_predicate(None)) is None  # type: ignore[arg-type]


def test_the_layers_are_the_reports_names_and_applied_flags_in_order() -> None:
    layers = [SimpleNamespace(name="landlock", applied=True), SimpleNamespace(name="seccomp", applied=False)]
    report = SimpleNamespace(isolation_layers=layers)
    assert candidate_layers(_predicate(report)) == (("landlock", True), ("seccomp", False))  # type: ignore[arg-type]


def test_a_report_with_no_layers_gives_an_empty_tuple_not_none() -> None:
    assert candidate_layers(_predicate(SimpleNamespace(isolation_layers=[]))) == ()  # type: ignore[arg-type]
