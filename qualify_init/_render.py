"""What `qualify init` writes: every file's path and text, rendered from the choices (nothing touches the disk here)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib.resources import files

from desktop_qualify.qualify_trust.team_workflows import policy_identity

from desktop_qualify import __version__

INSTALLER_KINDS = ("archive", "deb", "appimage", "dmg", "pkg", "msi", "nsis")
DISPLAYS = ("none", "xvfb", "offscreen")
JOURNEYS = ("app", "pytest", "playwright")
# Kinds the example app's own build (pure Python, one zipapp file) can make.
EXAMPLE_KINDS = ("archive", "deb")
POLICY_PATH = "policies/qualify.toml"
WORKFLOW_PATH = ".github/workflows/qualify.yml"
#: the GitHub-mode policy, at the conventional path the reusable workflows and the release gate read it from
RELEASE_POLICY_PATH = "policies/release.toml"
#: production Sigstore's trusted root as this version ships it, copied beside the release policy that pins it
TRUSTED_ROOT = "sigstore/trusted_root.production.json"
TRUSTED_ROOT_PATH = f"policies/{TRUSTED_ROOT}"
#: the release tag every caller line names and [producer.builder] pins: this version's
TAG = f"v{__version__}"
# The project's repository on GitHub, as the caller workflow names it (`--upstream` replaces it for a fork or a
# mirror). The project names no canonical OWNER/REPO of its own yet: this is where it will be published.
UPSTREAM = "desktop-qualify/desktop-qualify"
_PLATFORMS = ("linux", "macos", "windows")
_KIND_PLATFORMS = {"archive": _PLATFORMS, "deb": ("linux",), "appimage": ("linux",), "dmg": ("macos",),
                   "pkg": ("macos",), "msi": ("windows",), "nsis": ("windows",)}
_LINUX_CONFINEMENT = ["user-namespace", "pid-namespace", "mount-namespace", "network-namespace", "no-capabilities",
                      "private-home", "private-tmp", "dies-with-stage"]


@dataclass(frozen=True)
class Choices:
    """What the team chose (flags, prompts or defaults)."""

    name: str
    kind: str
    display: str
    journey: str
    example: bool
    upstream: str = UPSTREAM


def template(*parts: str) -> str:
    """A template shipped with the package, as text."""
    node = files("desktop_qualify.qualify_init").joinpath("templates")
    for part in parts:
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def code_prefix(name: str) -> str:
    """The app's refusal-code prefix: its name in capitals, dashes as underscores, and a trailing underscore."""
    return name.upper().replace("-", "_") + "_"


def _fill(text: str, choices: Choices) -> str:
    return text.replace("@@NAME@@", choices.name).replace("@@PREFIX@@", code_prefix(choices.name))


def source_folder(choices: Choices) -> str:
    """The app's folder in the repository: the example's own folder, or the repository itself."""
    return "app" if choices.example else "."


def _toml(value: object) -> str:
    # JSON strings and lists of strings are valid TOML basic strings and arrays.
    return json.dumps(value, ensure_ascii=False)


def _outputs(choices: Choices) -> list[tuple[str, str, str]]:
    """(platform, output glob, executable) for every platform the installer kind runs on."""
    name, kind = choices.name, choices.kind
    rows = []
    for platform in _KIND_PLATFORMS[kind]:
        if kind == "archive":
            ending = ".zip" if platform == "windows" and not choices.example else ".tar.gz"
            exe = f"{name}/{name}.exe" if platform == "windows" and not choices.example else f"{name}/{name}"
            rows.append((platform, f"{name}-*-{platform}{ending}", exe))
        elif kind == "deb":
            rows.append((platform, f"{name}_*_all.deb", f"opt/{name}/{name}"))
        elif kind == "appimage":
            rows.append((platform, f"{name}-*.AppImage", f"squashfs-root/usr/bin/{name}"))
        elif kind in {"dmg", "pkg"}:
            rows.append((platform, f"{name}-*.{kind}", f"{name}.app/Contents/MacOS/{name}"))
        elif kind == "msi":
            rows.append((platform, f"{name}-*.msi", f"{name}/{name}.exe"))
        else:
            rows.append((platform, f"{name}-*-setup.exe", f"{name}.exe"))
    if choices.example:  # a zipapp runs where its #! line does: not on Windows
        rows = [row for row in rows if row[0] != "windows"]
    return rows


def platforms(choices: Choices) -> list[str]:
    """The platforms the installer kind installs on, in the order of PLATFORMS (the caller workflow's jobs)."""
    found = {row[0] for row in _outputs(choices)}
    return [platform for platform in _PLATFORMS if platform in found]


def _journey_argv(choices: Choices) -> list[str]:
    if choices.journey == "pytest":
        return ["{python}", "-m", "pytest", "journey", "-p", "no:cacheprovider", "-q", "--qualify-journey={record}"]
    if choices.journey == "playwright":
        return ["npx", "playwright", "test", "--config", "journey/playwright.config.js"]
    return ["{executable}", "journey", "--record", "{record}"]


def _steps(choices: Choices) -> list[tuple[str, str | None]]:
    prefix = code_prefix(choices.name)
    if choices.example:
        return [("save-note", None), ("open-note", None), ("open-outside-refused", f"{prefix}PATH_OUTSIDE"),
                ("open-too-large-refused", f"{prefix}FILE_TOO_LARGE"), ("open-missing-refused", f"{prefix}NOT_FOUND")]
    return [("app-starts", None)]


def policy(choices: Choices) -> str:
    """The commented local policy (Ed25519 keys this machine makes with `qualify keygen`)."""
    name, source = choices.name, source_folder(choices)
    rows = _outputs(choices)
    installs = sorted({row[0] for row in rows})
    required = ["host"] if len(installs) > 1 else installs
    build = (["{python}", "build.py", "--out", "{out}", "--kind", choices.kind] if choices.example
             else ["{python}", "build.py", "--out", "{out}"])
    probe_require = ["build-info-embedded", "notes-roundtrip"] if choices.example else ["build-info-embedded"]
    lines = [
        f"# {name}'s qualification policy, written by `qualify init` (desktop-qualify {__version__}).",
        "#",
        "# Local mode: statements are signed with Ed25519 keys that `qualify keygen --policy "
        f"{POLICY_PATH}` makes on this",
        "# machine, under .qualify/ (git-ignored, never committed). Run the whole chain with",
        f"#   qualify run --policy {POLICY_PATH}",
        "# on a commit of main at its head (the source gate refuses anything else). Every field is described in",
        "# desktop-qualify's docs/policy.md; the app's side of it (build, records) in docs/app-contract.md.",
        "version = 2",
        f"name = {_toml(name)}",
        "",
        "[producer]",
        "# Recorded in the evidence and checked against it; locally the signer is the keyring's key.",
        f"repository = {_toml('local/' + name)}",
        f"workflow = {_toml(WORKFLOW_PATH)}",
        'ref = "refs/heads/main"',
        'allowed_triggers = ["local"]',
        'runner_environment = "local"',
        "",
        "[trust]",
        'mode = "ed25519"',
        'keyring = "../.qualify/keyring.json"',
        'platform_key = "../.qualify/keys/platform.ed25519.pem"',
        'aggregate_key = "../.qualify/keys/aggregate.ed25519.pem"',
        "# The release gate's key, for its Verification Summary Attestations (`qualify verify --vsa`).",
        'verifier_key = "../.qualify/keys/verifier.ed25519.pem"',
        "",
        "[source]",
        "# The build is made from the committed tree (git archive); a run from a work tree with uncommitted",
        "# changes to tracked files is refused (untracked and git-ignored files do not count).",
        "require_clean_worktree = true",
        "",
        "[app]",
        f"name = {_toml(name)}",
        "# The app's folder in this repository, relative to this file.",
        f"source = {_toml('..' if source == '.' else '../' + source)}",
        "",
        "[app.build]",
        "# argv, no shell, run in a fresh export of `source` at the gated commit; {out} is an empty folder where",
        "# the build writes its one output file, and QUALIFY_BUILD_INFO names the build information to embed.",
        f"argv = {_toml(build)}",
        "",
        "[app.build.outputs]",
        "# Per platform, one glob under {out} that must match exactly one file.",
        *(f"{platform} = {_toml(glob)}" for platform, glob, _ in rows),
        "",
        "[app.install]",
        f"# The installer kind ({choices.kind}) and the executable's path inside the installed prefix.",
        *(f'{platform} = {{ kind = {_toml(choices.kind)}, executable = {_toml(exe)} }}' for platform, _, exe in rows),
        "",
        "[app.probe]",
        "# The installed app's own launch probe: it writes the qualify-probe v2 record; every check named here",
        "# must be reported and passed.",
        'argv = ["{executable}", "probe", "--record", "{record}"]',
        f"require = {_toml(probe_require)}",
        "",
        "[app.journey]",
        {"app": "# The app's own journey subcommand writes the qualify-journey v2 record.",
         "pytest": "# The journey under pytest: desktop-qualify's plugin writes each test as one step (journey/).",
         "playwright": "# The journey under Playwright: journey/qualify-reporter.js writes each test as one step."}[
            choices.journey],
        f"argv = {_toml(_journey_argv(choices))}",
        "",
        "[app.display]",
        "# none, xvfb (a private X server, Linux only) or offscreen (QT_QPA_PLATFORM=offscreen).",
        *(f"{platform} = {_toml(choices.display)}" for platform in installs
          if choices.display != "xvfb" or platform == "linux"),
        "",
        "[app.codes]",
        "# Every refusal code in [journey.steps] (and in the journey's record) must match this pattern.",
        f"pattern = {_toml('^' + code_prefix(name) + '[A-Z0-9_]{2,40}$')}",
        "",
        "[platforms]",
        f"required = {_toml(required)}",
        "",
        "[journey.steps]",
        "# What each step must show: allow, or reject with the app's exact code. The verifier compares what the",
        "# journey observed with this table, never with what the journey expected.",
        *(f'{step} = {{ expect = "reject", code = {_toml(code)} }}' if code else f'{step} = {{ expect = "allow" }}'
          for step, code in _steps(choices)),
        "",
        "[signing]",
        "# Locally there is no signing identity: an unsigned artifact is the honest state.",
        'linux = ["unsigned"]',
        'macos = ["unsigned"]',
        'windows = ["unsigned"]',
        "",
        "[confinement]",
        "# Every run of the app's code (build, probe, journey) on Linux runs under bubblewrap with these layers;",
        "# only the build keeps the network.",
        f"linux = {_toml(_LINUX_CONFINEMENT)}",
        'network = ["build"]',
        "",
        "[limits]",
        "max_statement_bytes = 1048576",
        "build_timeout_seconds = 600",
        "probe_timeout_seconds = 60",
        "journey_timeout_seconds = 300",
        "",
    ]
    return "\n".join(lines)


_SECRETS = {
    "linux": [],
    "macos": ["QUALIFY_CODESIGN_IDENTITY", "QUALIFY_CODESIGN_P12_BASE64", "QUALIFY_CODESIGN_P12_PASSWORD",
              "QUALIFY_NOTARY_KEY_BASE64", "QUALIFY_NOTARY_KEY_ID", "QUALIFY_NOTARY_ISSUER"],
    "windows": ["QUALIFY_SIGNTOOL_CERT_SHA1", "QUALIFY_SIGNTOOL_PFX_BASE64", "QUALIFY_SIGNTOOL_PFX_PASSWORD"],
}


def workflow(choices: Choices) -> str:
    """The caller workflow: this project's reusable workflows, each at the tag of the version that wrote it.

    The shape of docs/examples/team-qualify.yml: one job per platform the installer kind runs on, then the
    aggregate; nothing passed but the OS code-signing secrets.
    """
    tag = TAG
    jobs = platforms(choices)
    lines = [
        f"# {choices.name}'s qualification on GitHub, written by `qualify init` (desktop-qualify {__version__}).",
        "#",
        f"# It calls desktop-qualify's reusable workflows at one release tag ({tag}), the same on every line:",
        "# Fulcio writes the called file at that tag into each certificate, and the GitHub-mode policy the called",
        f"# workflows read ({RELEASE_POLICY_PATH} in this repository, which `qualify init` writes beside this file",
        "# when it knows this repository's OWNER/NAME) pins it. Nothing is passed but the OS",
        "# code-signing secrets: the called workflows check out this repository at the triggering commit and",
        "# desktop-qualify at the commit they were called at. To move to another release, change the tag on every",
        "# line and in the policy in one reviewed commit. Re-run all jobs of a failed run, never the failed ones.",
        "name: qualify",
        "",
        "on:",
        "  push:",
        "    branches: [main]",
        "  workflow_dispatch:",
        "",
        "permissions: {}",
        "",
        "concurrency:",
        "  group: qualify-${{ github.sha }}",
        "  cancel-in-progress: false",
        "",
        "jobs:",
    ]
    for platform in jobs:
        lines += [
            f"  {platform}:",
            f"    uses: {choices.upstream}/.github/workflows/produce-{platform}.yml@{tag}",
            "    permissions:",
            "      contents: read",
            "      id-token: write # the called workflow's sign job; its run job (the app's code) has contents: read",
        ]
        if _SECRETS[platform]:
            lines.append("    secrets:")
            lines += [f"      {name}: ${{{{ secrets.{name} }}}}" for name in _SECRETS[platform]]
        lines.append("")
    lines += [
        "  aggregate:",
        f"    needs: [{', '.join(jobs)}]",
        f"    uses: {choices.upstream}/.github/workflows/aggregate.yml@{tag}",
        "    permissions:",
        "      contents: read",
        "      id-token: write",
        "      attestations: write # the aggregate stores the verified statements as GitHub attestations",
        "",
    ]
    return "\n".join(lines)


def trusted_root() -> str:
    """Production Sigstore's trusted root as this version ships it (the bytes [trust] trusted_root_sha256 pins)."""
    return files("desktop_qualify.policies").joinpath(*TRUSTED_ROOT.split("/")).read_text(encoding="utf-8")


_SECTION = re.compile(r"^\[([A-Za-z0-9_.]+)\]\s*(#.*)?$")
_LOCAL_SIGNING = "# Locally there is no signing identity: an unsigned artifact is the honest state."


def app_sections(local: str, platforms: list[str]) -> str | None:
    """The local policy's own sections, ``[source]`` to its end, for the GitHub-mode policy; None without ``[source]``.

    As a team's release policy is assembled (tests/support/github_team.py): the identity sections, then the app's.
    ``[platforms] required = ["host"]`` (this machine's platform) becomes every platform the app installs on: one
    GitHub run qualifies them all.
    """
    lines = local.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "[source]"), None)
    if start is None:
        return None
    section, body = "", []
    for line in lines[start:]:
        header = _SECTION.match(line.strip())
        section = header.group(1) if header else section
        if section == "platforms" and line.replace(" ", "") == 'required=["host"]':
            body.append(f"required = {_toml(platforms)}")
        elif line == _LOCAL_SIGNING:
            body.append("# Unsigned is accepted until the OS code-signing secrets exist; then require signed (and, "
                        "for macOS, notarized).")
        else:
            body.append(line)
    return "\n".join(body) + "\n"


def release_policy(*, name: str, sections: str, repository: str, upstream: str, tag: str, root_sha256: str) -> str:
    """The team's GitHub-mode policy: ``policy_identity`` (``repository``'s source, ``upstream``'s workflows at
    ``tag``) and the app's ``sections`` of the local policy, so both describe the same app."""
    head = [
        f"# {name}'s GitHub-mode release policy, written by `qualify init` (desktop-qualify {__version__}).",
        "#",
        f"# {upstream}'s reusable workflows, which {WORKFLOW_PATH} calls at {tag}, read it at this",
        "# conventional path, and the release gate judges by it: statements are signed keylessly (Sigstore) with",
        f"# those workflows' own identity, for {repository}'s main. The sections from [source] on are",
        f"# {POLICY_PATH}'s: keep the two the same. Move to another release in one reviewed commit: the tag",
        "# here and on every line of the caller workflow. To refuse a moved tag too, pin its commit under",
        f'# [producer.builder]: commit = "<the commit {tag} names in {upstream}>".',
        f"# The trusted root is {TRUSTED_ROOT} beside this file, pinned by its SHA-256",
        "# (docs/trust-modes.md).",
        "version = 2",
        f"name = {_toml(name)}",
        "",
    ]
    identity = policy_identity(repository, tag, commit=None, trusted_root=TRUSTED_ROOT,
                               trusted_root_sha256=root_sha256, builder=upstream)
    return "\n".join(head) + "\n" + identity + "\n" + sections


def journey_files(choices: Choices) -> dict[str, str]:
    """The journey runner's files, by path in the repository."""
    base = "journey" if source_folder(choices) == "." else f"{source_folder(choices)}/journey"
    if choices.journey == "pytest":
        test = template("journey", "example-pytest" if choices.example else "pytest", "test_journey.py.tmpl")
        return {f"{base}/conftest.py": _fill(template("journey", "pytest", "conftest.py.tmpl"), choices),
                f"{base}/test_journey.py": _fill(test, choices)}
    if choices.journey == "playwright":
        return {f"{base}/{name}": _fill(template("journey", "playwright", name), choices)
                for name in ("qualify-reporter.js", "playwright.config.js", "journey.spec.js")}
    if choices.example:  # the example app walks its own journey (main.py's `journey` subcommand)
        return {}
    return {f"{base}/journey.py": _fill(template("journey", "app", "journey.py.tmpl"), choices)}


def render(choices: Choices) -> dict[str, str]:
    """Every file `qualify init` writes, by path relative to the repository's root."""
    written = {POLICY_PATH: policy(choices), WORKFLOW_PATH: workflow(choices),
               # The local keys' folder ignores all but this file, which is committed: in every clone the keys
               # keygen makes there are ignored, so private keys never reach a commit.
               ".qualify/.gitignore": "# Local Ed25519 keys (qualify keygen): never committed.\n*\n!.gitignore\n"}
    if choices.example:
        written["app/main.py"] = _fill(template("example", "main.py.tmpl"), choices)
        written["app/build.py"] = _fill(template("example", "build.py.tmpl"), choices)
    written.update(journey_files(choices))
    return written
