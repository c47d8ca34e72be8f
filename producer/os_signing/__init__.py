"""Operating-system code signing of the build's output: codesign and notarization, signtool, or none."""

from __future__ import annotations

from ._output_signing import sign_output
from ._platform_signing import PlatformSigner, SigningOutcome, platform_signer_from_env
from ._signtool import verify_argv as signtool_verify_argv
from ._signtool import verify_refusal as signtool_verify_refusal

__all__ = ["PlatformSigner", "SigningOutcome", "platform_signer_from_env", "sign_output", "signtool_verify_argv",
           "signtool_verify_refusal"]
