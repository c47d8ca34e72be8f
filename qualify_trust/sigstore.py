"""What a Sigstore client built on this layer needs: trusted roots, bundle verification, the identity it checks.

Importing this module loads sigstore-python; the stages reach it only through
``verifier_for`` and ``signer_for`` in GitHub mode.
"""

from ._sigstore_expected import CertificateIdentity
from ._sigstore_root import PinnedTrustedRoot, load_trusted_root, trusted_root_from_bytes
from ._sigstore_verify import MAX_BUNDLE_BYTES, verify_artifact_bundle

__all__ = [
    "MAX_BUNDLE_BYTES",
    "CertificateIdentity",
    "PinnedTrustedRoot",
    "load_trusted_root",
    "trusted_root_from_bytes",
    "verify_artifact_bundle",
]
