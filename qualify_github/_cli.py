"""`python -m desktop_qualify.qualify_github store-attestations --evidence DIR`: the aggregate job's upload.

Stores every Sigstore bundle of the evidence folder (the platform statements
and the aggregate) in the job's own repository (``GITHUB_REPOSITORY``) through
GitHub's attestation API (``GITHUB_API_URL``, ``GITHUB_TOKEN`` with
``attestations: write``), then prints each attestation id. Exit 0 when all are
stored; 1 when a file is not a bounded Sigstore bundle of a statement (nothing
is stored after it); 2 on a usage, environment or API failure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from desktop_qualify.evidence_schemas import Code, QualificationError
from desktop_qualify.qualify_runtime import EXIT_OK, ArgumentParser, guarded

from ._attestations import store_evidence
from ._client import GitHubClient


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m desktop_qualify.qualify_github",
                            description="Store signed statements as GitHub attestations.")
    commands = parser.add_subparsers(dest="command", required=True)
    store = commands.add_parser("store-attestations", help="POST every *.sigstore.json of --evidence")
    store.add_argument("--evidence", type=Path, required=True, help="the verified evidence folder")
    return parser


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    def body() -> int:
        environ = os.environ if env is None else env
        repository = environ.get("GITHUB_REPOSITORY")
        if not repository:
            raise QualificationError(Code.ENVIRONMENT, "GITHUB_REPOSITORY is not set: run in a GitHub Actions job")
        with GitHubClient.from_env(environ) as client:
            stored = store_evidence(client, repository, args.evidence)
        for item in stored:
            print(f"stored {item.file} as attestation {item.attestation_id} of {repository}")
        return EXIT_OK

    return guarded(body)
