"""sigstore-conformance's bundle-verify cases: where they are, how the protocol calls a client for each, and
which ones sigstore-python 4.x itself cannot pass. Shared by the in-process run and the installed-wheel run.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASES = REPO.parent / "shared" / "vectors" / "sigstore-conformance" / "bundle-verify"
DEFAULT_IDENTITY = (
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon"
    "/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
)
DEFAULT_ISSUER = "https://token.actions.githubusercontent.com"
# The vectors' README names these: they fail inside sigstore-python 4.x, not in the caller.
UPSTREAM_EXCEPTIONS = {
    "intoto-with-custom-trust-root": "intoto/0.0.2 log entry: sigstore-python 4.x cannot verify it",
    "trust-root-tsa-validity-end-inclusive": "sigstore-python 4.x treats the TSA validity end as exclusive",
    "managed-key-happy-path": "public-key bundles: sigstore-python 4.5's public Verifier needs a certificate",
    "managed-key-and-trusted-root": "public-key bundles: sigstore-python 4.5's public Verifier needs a certificate",
}


def case_folders() -> list[Path]:
    """Every case, sorted by name; empty when the vectors are not beside the repository."""
    return sorted(path for path in CASES.iterdir() if path.is_dir()) if CASES.is_dir() else []


def must_fail(case: Path) -> bool:
    """The suite's naming rule: a case whose name ends in ``_fail`` must be refused."""
    return case.name.endswith("_fail")


def verify_argv(case: Path, artifact: str) -> list[str]:
    """The arguments the conformance suite passes to a client's ``verify-bundle`` for this case."""
    argv = ["verify-bundle", "--bundle", str(case / "bundle.sigstore.json")]
    if (case / "key.pub").is_file():
        argv += ["--key", str(case / "key.pub")]
    else:
        identity = (case / "identity").read_text().strip() if (case / "identity").is_file() else DEFAULT_IDENTITY
        issuer = (case / "issuer").read_text().strip() if (case / "issuer").is_file() else DEFAULT_ISSUER
        argv += ["--certificate-identity", identity, "--certificate-oidc-issuer", issuer]
    if (case / "trusted_root.json").is_file():
        argv += ["--trusted-root", str(case / "trusted_root.json")]
    return [*argv, artifact]


def artifact_of(case: Path) -> Path:
    return case / "artifact" if (case / "artifact").is_file() else CASES / "a.txt"
