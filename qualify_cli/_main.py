"""The one console script, `qualify`, dispatching to each stage's own CLI.

This is the only module that knows all three stages; they never import each
other (docs/design.md §6.2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from desktop_qualify.qualify_runtime import EXIT_OK, ArgumentParser, VersionAction, guarded, require_inputs

from desktop_qualify import aggregate, consumer, producer, qualify_init

# Only argparse and the stages' parsers load before the command line is parsed: `qualify --help`
# and a mistyped option cost no pydantic, cryptography, sigstore or PyGithub import.


def _keygen(policy: Path, root: Path | None) -> int:
    def body() -> int:
        from desktop_qualify.qualify_policy import load_policy

        from ._keygen import ensure_local_keys

        require_inputs("--root", [root], "folder")
        for line in ensure_local_keys(load_policy(policy, root)):
            print(line)
        return EXIT_OK

    return guarded(body)


def _rebuild(args: argparse.Namespace) -> int:
    from ._rebuild import run_rebuild

    return run_rebuild(args)


def _run(args: argparse.Namespace) -> int:
    from ._run import run_chain

    return run_chain(args)


def _schemas(out: Path | None, check: bool) -> int:
    def body() -> int:
        from importlib.resources import files

        from desktop_qualify.evidence_schemas import Code, QualificationError, render_schemas
        from desktop_qualify.qualify_files import write_atomic

        if not check:
            if out is None:
                raise QualificationError(Code.USAGE, "--out names the folder to write the schemas into")
            for name, data in render_schemas().items():
                write_atomic(out / name, data)
                print(f"wrote {out / name}")
            return EXIT_OK
        # Without --out, the schemas shipped inside the installed package are the ones checked.
        require_inputs("--out", [out], "folder")
        folder = out if out is not None else files("desktop_qualify.schemas")
        stale = [name for name, data in render_schemas().items()
                 if not (folder / name).is_file() or (folder / name).read_bytes() != data]
        for name in stale:
            print(f"{Code.SCHEMA_INVALID.value}: {folder / name} differs from the models; run "
                  "'qualify schemas --out schemas'", file=sys.stderr)
        return 1 if stale else EXIT_OK

    return guarded(body)


def build_parser() -> ArgumentParser:
    """`qualify` and its subcommands (argparse only: building it loads nothing heavy)."""
    parser = ArgumentParser(prog="qualify", description="Desktop release qualification.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    producer.build_parser(sub.add_parser("produce", help="one platform job: gate to signed statement"))
    producer.build_sign_parser(sub.add_parser("sign", help="the signing job: re-check an unsigned run and sign it"))
    producer.build_gate_parser(sub.add_parser("gate", help="the GitHub-mode source gate alone"))
    aggregate.build_parser(sub.add_parser("aggregate", help="verify platform statements, sign the aggregate"))
    consumer.build_verify_parser(sub.add_parser("verify", help="the release gate"))
    consumer.build_audit_parser(sub.add_parser("audit", help="check historical runs offline"))
    consumer.build_bundle_parser(sub.add_parser("bundle", help="pack one run's evidence, policy and trust root"))
    consumer.build_readback_parser(sub.add_parser("readback", help="check a published release against its bundle"))
    consumer.build_verify_vsa_parser(sub.add_parser("verify-vsa", help="check the gate's signed verification summary"))
    rebuild = sub.add_parser("rebuild", help="rebuild a qualified commit here and compare it with the artifact")
    rebuild.add_argument("--policy", type=Path, required=True,
                         help="the policy of the run (an evidence folder), or the anchor of a bundle's own policy")
    rebuild.add_argument("--root", type=Path,
                         help="the checkout holding the qualified commit (default: the git work tree holding the "
                              "policy); its app folder is exported with git archive, never read as it is")
    rebuild_source = rebuild.add_mutually_exclusive_group(required=True)
    rebuild_source.add_argument("--evidence", type=Path, help="the evidence folder of the qualified run")
    rebuild_source.add_argument("--bundle", type=Path, help="the run's qualification bundle (.qualify-bundle.zip)")
    rebuild.add_argument("--artifact", type=Path,
                         help="the qualified artifact file, to name the first differing member (default: "
                              "artifacts/ beside the evidence folder)")
    rebuild.add_argument("--keep", type=Path, help="copy the rebuilt output into this folder")
    rebuild.add_argument("--attest", type=Path,
                         help="write the result as a rebuild attestation (a statement signed by --key) to this file, "
                              "replacing it; - for standard output")
    rebuild.add_argument("--key", type=Path, help="the rebuilder's own Ed25519 private key (PEM) that signs --attest")
    run = sub.add_parser("run", help="the whole local chain on this machine's platform, swapped into --out "
                                     "only once QUALIFIED")
    run.add_argument("--policy", type=Path, required=True,
                     help="the local (Ed25519) policy, committed in the git repository whose commit is qualified")
    run.add_argument("--out", type=Path,
                     help="the output folder, replaced only once the run is QUALIFIED (default: qualification-out at "
                          "the top of the repository); the run is written into .NAME.staging beside it first")
    run.add_argument("--root", type=Path,
                     help="the checkout the policy belongs to (default: the git work tree holding the policy); the "
                          "policy must then be in ROOT/policies, and keygen, verify and verify-vsa get --root ROOT")
    run.add_argument("--previous-bundle", type=Path,
                     help="the update journey: the last qualified release's bundle, given to produce")
    run.add_argument("--previous-artifact", type=Path,
                     help="the update journey: that release's artifact for this platform, given to produce")
    keygen = sub.add_parser("keygen", help="create this machine's local Ed25519 keys")
    keygen.add_argument("--policy", type=Path, required=True,
                        help="the local policy whose keyring and key paths are created (inside the repository only)")
    keygen.add_argument("--root", type=Path,
                        help="the checkout the policy belongs to (default: the git work tree holding the policy)")
    qualify_init.build_parser(sub.add_parser("init", help="write a policy, a workflow and a journey runner into your "
                                                          "repository"))
    schemas = sub.add_parser("schemas", help="export the JSON Schemas")
    schemas.add_argument("--out", type=Path,
                         help="the schema folder to write, or to compare with --check (default there: the "
                         "installed package's)")
    schemas.add_argument("--check", action="store_true", help="exit 1 when the folder differs from the models")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `qualify` command: parse ``argv`` and run the subcommand it names; the exit status."""
    args = build_parser().parse_args(argv)
    handlers = {
        "produce": lambda: producer.run(args),
        "sign": lambda: producer.run_sign(args),
        "gate": lambda: producer.run_gate(args),
        "aggregate": lambda: aggregate.run(args),
        "verify": lambda: consumer.run_verify(args),
        "audit": lambda: consumer.run_audit(args),
        "bundle": lambda: consumer.run_bundle(args),
        "readback": lambda: consumer.run_readback(args),
        "verify-vsa": lambda: consumer.run_verify_vsa(args),
        "rebuild": lambda: _rebuild(args),
        "run": lambda: _run(args),
        "keygen": lambda: _keygen(args.policy, args.root),
        "schemas": lambda: _schemas(args.out, args.check),
        "init": lambda: qualify_init.run(args),
    }
    return handlers[args.command]()
