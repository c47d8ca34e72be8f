"""Keyless signing, offline: which environment may sign, what each refusal says, and what reaches the signer.

Written for the mutants of ``qualify_trust._sigstore_sign`` that the other tests let through (docs/mutation.md).
Signing proper needs GitHub's OIDC endpoint, Fulcio and Rekor, so these tests replace the module's
``detect_credential``, ``ClientTrustConfig`` and ``SigningContext`` by fakes that record what they are given; the
identity token is a real ``IdentityToken`` over an unsigned JWT built here. They check that only a GitHub Actions
job with an id-token permission gets past the gate (each half of it), that every refusal carries the code, the
message and the hint a release engineer reads (an empty credential, an unusable one, one from another issuer, a
signing failure, a malformed statement, a bad digest, with the quoted cause cut at its exact bound), and that a
signing hands the job's token to a signer made from the production trust config without a key cache, signs the
statement or digest it was given and returns the bundle's JSON as UTF-8. Nothing touches the network.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import jwt
import pytest
from desktop_qualify.evidence_schemas import IN_TOTO_STATEMENT_TYPE, Code, QualificationError, canonical_bytes
from desktop_qualify.qualify_trust import _sigstore_sign
from desktop_qualify.qualify_trust._sigstore_sign import sign_artifact_bundle, sign_dsse_statement
from sigstore import dsse
from sigstore.errors import Error as SigstoreError
from sigstore.hashes import Hashed
from sigstore.oidc import ExpiredIdentity, IdentityToken
from sigstore_models.common.v1 import HashAlgorithm

GITHUB = "https://token.actions.githubusercontent.com"
HINT = "run inside GitHub Actions with 'permissions: id-token: write' on the job"
SIGN_HINT = "Fulcio, Rekor or the timestamp authority refused the request or was unreachable"
DIGEST = "0123456789abcdef" * 4
BUNDLE_JSON = '{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json", "note": "qualifié"}'
STATEMENT = canonical_bytes({
    "_type": IN_TOTO_STATEMENT_TYPE,
    "subject": [{"name": "probe.txt", "digest": {"sha256": "a" * 64}}],
    "predicateType": "https://desktop-qualify.dev/test/v1",
    "predicate": {"note": "sigstore signing mutants"},
})
# A cause longer than the 300 characters quoted: the 300th is "B", the 301st "C".
LONG_CAUSE = "A" * 299 + "B" + "C" * 100


def _jwt(issuer: str, **claims: object) -> str:
    now = int(time.time())
    body = {"iss": issuer, "aud": "sigstore", "sub": "repo:octo/app:ref:refs/heads/main", "iat": now, "exp": now + 600}
    body.update(claims)
    return jwt.encode(body, "not-a-real-signing-key-for-these-tests", algorithm="HS256")


class FakeBundle:
    def to_json(self) -> str:
        return BUNDLE_JSON


@dataclass
class FakeSigner:
    fail: BaseException | None = None
    dsse_statements: list[dsse.Statement] = field(default_factory=list)
    artifacts: list[Hashed] = field(default_factory=list)

    def sign_dsse(self, statement: dsse.Statement) -> FakeBundle:
        if self.fail is not None:
            raise self.fail
        self.dsse_statements.append(statement)
        return FakeBundle()

    def sign_artifact(self, hashed: Hashed) -> FakeBundle:
        if self.fail is not None:
            raise self.fail
        self.artifacts.append(hashed)
        return FakeBundle()


@dataclass
class Sigstore:
    """The fakes standing in for the network: what was asked of them, and the signer they hand out."""

    signer: FakeSigner = field(default_factory=FakeSigner)
    credential_calls: int = 0
    trust_configs: list[object] = field(default_factory=list)
    signer_calls: list[tuple[IdentityToken, bool]] = field(default_factory=list)
    production_config: object = field(default_factory=object)


@pytest.fixture
def sigstore(monkeypatch: pytest.MonkeyPatch) -> Sigstore:
    """A GitHub Actions job allowed to mint an OIDC token, with the credential and the signing services faked."""
    fake = Sigstore()
    token = _jwt(GITHUB)

    def detect_credential() -> str | None:
        fake.credential_calls += 1
        return token

    class FakeTrustConfig:
        @staticmethod
        def production() -> object:
            return fake.production_config

    class FakeContext:
        @classmethod
        def from_trust_config(cls, config: object) -> FakeContext:
            fake.trust_configs.append(config)
            return cls()

        @contextmanager
        def signer(self, identity_token: IdentityToken, *, cache: bool = True) -> Iterator[FakeSigner]:
            fake.signer_calls.append((identity_token, cache))
            yield fake.signer

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("ACTIONS_ID_TOKEN_REQUEST_URL", "http://127.0.0.1:9/token")
    monkeypatch.setattr(_sigstore_sign, "detect_credential", detect_credential)
    monkeypatch.setattr(_sigstore_sign, "ClientTrustConfig", FakeTrustConfig)
    monkeypatch.setattr(_sigstore_sign, "SigningContext", FakeContext)
    return fake


def _credential(monkeypatch: pytest.MonkeyPatch, result: str | None = None, error: Exception | None = None) -> None:
    def detect_credential() -> str | None:
        if error is not None:
            raise error
        return result

    monkeypatch.setattr(_sigstore_sign, "detect_credential", detect_credential)


def _refusal(digest: str = DIGEST) -> QualificationError:
    with pytest.raises(QualificationError) as caught:
        sign_artifact_bundle(digest)
    return caught.value


# -- the environment gate -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actions", "url"),
    [("true", None), (None, "http://127.0.0.1:9/token"), ("false", "http://127.0.0.1:9/token"), ("true", "")],
    ids=["Actions without the request URL", "request URL outside Actions", "GITHUB_ACTIONS=false", "empty URL"],
)
def test_a_job_without_both_actions_and_the_token_request_url_is_refused_before_any_request(
    sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch, actions: str | None, url: str | None
) -> None:
    for name, value in (("GITHUB_ACTIONS", actions), ("ACTIONS_ID_TOKEN_REQUEST_URL", url)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    refusal = _refusal()
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "no GitHub Actions OIDC credential in this environment"
    assert refusal.hint == HINT
    assert sigstore.credential_calls == 0
    assert sigstore.signer_calls == []


def test_lowercase_variable_names_do_not_open_the_gate(sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_ACTIONS", "ACTIONS_ID_TOKEN_REQUEST_URL"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("github_actions", "true")
    monkeypatch.setenv("actions_id_token_request_url", "http://127.0.0.1:9/token")
    assert _refusal().message == "no GitHub Actions OIDC credential in this environment"
    assert sigstore.credential_calls == 0


def test_github_actions_must_be_exactly_lowercase_true(sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "TRUE")
    assert _refusal().code is Code.ENVIRONMENT
    assert sigstore.credential_calls == 0


def test_a_job_with_actions_and_the_request_url_asks_for_its_credential_once(sigstore: Sigstore) -> None:
    assert sign_artifact_bundle(DIGEST) == BUNDLE_JSON.encode("utf-8")
    assert sigstore.credential_calls == 1


# -- the credential -------------------------------------------------------------------------------------------


def test_no_credential_from_github_is_an_environment_error_with_the_permission_hint(
    sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _credential(monkeypatch, result=None)
    refusal = _refusal()
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "GitHub Actions returned no OIDC credential"
    assert refusal.hint == HINT
    assert sigstore.signer_calls == []


@pytest.mark.parametrize("signer", ["dsse", "artifact"])
def test_the_jobs_own_token_is_the_one_handed_to_the_signer(sigstore: Sigstore, signer: str) -> None:
    if signer == "dsse":
        sign_dsse_statement(STATEMENT)
    else:
        sign_artifact_bundle(DIGEST)
    [(token, _cache)] = sigstore.signer_calls
    assert isinstance(token, IdentityToken)
    assert token.issuer == GITHUB
    assert token.identity == "repo:octo/app:ref:refs/heads/main"


def test_an_unusable_credential_quotes_the_cause_up_to_300_characters(
    sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _credential(monkeypatch, error=SigstoreError(LONG_CAUSE))
    refusal = _refusal()
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "OIDC credential unusable: " + "A" * 299 + "B"
    assert refusal.hint == HINT
    assert isinstance(refusal.__cause__, SigstoreError)
    assert sigstore.signer_calls == []


def test_a_malformed_token_is_an_unusable_credential_naming_the_cause(
    sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _credential(monkeypatch, result="not-a-jwt")
    refusal = _refusal()
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "OIDC credential unusable: Identity token is malformed or missing claims"
    assert refusal.hint == HINT


def test_a_credential_from_another_issuer_is_refused_naming_that_issuer(
    sigstore: Sigstore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _credential(monkeypatch, result=_jwt("https://accounts.google.com", email="someone@example.com"))
    refusal = _refusal()
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "OIDC credential from 'https://accounts.google.com', not GitHub Actions"
    assert sigstore.signer_calls == []


# -- signing --------------------------------------------------------------------------------------------------


def test_signing_uses_the_production_trust_config_and_no_cached_key(sigstore: Sigstore) -> None:
    sign_artifact_bundle(DIGEST)
    sign_dsse_statement(STATEMENT)
    assert sigstore.trust_configs == [sigstore.production_config, sigstore.production_config]
    assert [cache for _token, cache in sigstore.signer_calls] == [False, False]


def test_an_artifact_bundle_signs_exactly_the_given_sha256(sigstore: Sigstore) -> None:
    assert sign_artifact_bundle(DIGEST) == BUNDLE_JSON.encode("utf-8")
    [hashed] = sigstore.signer.artifacts
    assert hashed.algorithm == HashAlgorithm.SHA2_256
    assert hashed.digest == bytes.fromhex(DIGEST)
    assert sigstore.signer.dsse_statements == []


def test_a_dsse_bundle_signs_the_statement_bytes_as_given(sigstore: Sigstore) -> None:
    assert sign_dsse_statement(STATEMENT) == BUNDLE_JSON.encode("utf-8")
    [statement] = sigstore.signer.dsse_statements
    assert isinstance(statement, dsse.Statement)
    assert statement._contents == STATEMENT
    assert sigstore.signer.artifacts == []


@pytest.mark.parametrize(
    "failure",
    [SigstoreError("  \n" + LONG_CAUSE + "  \n"), ExpiredIdentity("  \n" + LONG_CAUSE + "  \n")],
    ids=["Sigstore error", "expired identity"],
)
@pytest.mark.parametrize("signer", ["dsse", "artifact"])
def test_a_refused_signing_is_an_environment_error_quoting_the_stripped_cause(
    sigstore: Sigstore, failure: Exception, signer: str
) -> None:
    sigstore.signer.fail = failure
    sign = (lambda: sign_dsse_statement(STATEMENT)) if signer == "dsse" else (lambda: sign_artifact_bundle(DIGEST))
    with pytest.raises(QualificationError) as caught:
        sign()
    refusal = caught.value
    assert refusal.code is Code.ENVIRONMENT
    assert refusal.message == "Sigstore signing failed: " + "A" * 299 + "B"
    assert refusal.hint == SIGN_HINT
    assert refusal.__cause__ is failure


# -- the inputs -----------------------------------------------------------------------------------------------


def test_a_payload_that_is_no_in_toto_statement_is_a_schema_error_quoting_the_cause(sigstore: Sigstore) -> None:
    payload = b'{"_type": "https://in-toto.io/Statement/v1", "subject": "not a list"}'
    with pytest.raises(SigstoreError) as parsed:
        dsse.Statement(payload)
    cause = str(parsed.value)
    assert len(cause) > 301
    with pytest.raises(QualificationError) as caught:
        sign_dsse_statement(payload)
    refusal = caught.value
    assert refusal.code is Code.SCHEMA_INVALID
    assert refusal.message == f"payload is not an in-toto statement: {cause[:300]}"
    assert refusal.message.startswith("payload is not an in-toto statement: malformed in-toto statement")
    assert sigstore.credential_calls == 0


def test_a_bad_digest_is_a_usage_error_quoting_its_first_80_characters(sigstore: Sigstore) -> None:
    digest = "F" * 79 + "G" + "H" * 20
    refusal = _refusal(digest)
    assert refusal.code is Code.USAGE
    assert refusal.message == f"artifact digest {'F' * 79 + 'G'!r} is not 64 lowercase hex digits"
    assert sigstore.credential_calls == 0
