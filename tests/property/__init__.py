"""Property tests (issue 7, item 6): any input is either accepted or refused with a stable code.

Each target lives in ``targets``; ``runner.check_property`` runs it under the
suite's small default profile, or for a slice of the wall-clock budget when
``nox -s fuzz`` sets one. Failing inputs the fuzz session finds are written to
``tests/corpus_fuzz/cases/`` and replayed there by the default run.
"""
