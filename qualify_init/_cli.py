"""`qualify init`'s command line: argparse only, so that `qualify --help` loads nothing heavy."""

from __future__ import annotations

import argparse
from pathlib import Path

from desktop_qualify.qualify_runtime import EXIT_OK, guarded

# The choices, repeated from _render (which loads importlib.resources and the version) so that building the
# parser stays argparse alone; tests/adopt holds the two equal.
INSTALLER_KINDS = ("archive", "deb", "appimage", "dmg", "pkg", "msi", "nsis")
DISPLAYS = ("none", "xvfb", "offscreen")
JOURNEYS = ("app", "pytest", "playwright")
ONLY = ("release-policy",)


def build_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `qualify init` on ``parser`` (a subparser of `qualify`)."""
    parser.add_argument("--kind", choices=INSTALLER_KINDS,
                        help="the installer kind the policy names (default archive; asked on a terminal)")
    parser.add_argument("--display", choices=DISPLAYS,
                        help="the display the probe and journey run under (default none; asked on a terminal)")
    parser.add_argument("--journey", choices=JOURNEYS,
                        help="the journey style: the app's own subcommand, pytest with desktop-qualify's plugin, "
                             "or Playwright with its reporter (default app; asked on a terminal)")
    parser.add_argument("--name", help="the app's name (default: the repository folder's name)")
    parser.add_argument("--example", action="store_true",
                        help="also write a small example app (app/) that qualifies unchanged")
    parser.add_argument("--upstream", metavar="OWNER/REPO",
                        help="desktop-qualify's repository the caller workflows call (default: the project's; "
                             "with --only: the one .github/workflows/qualify.yml calls)")
    parser.add_argument("--repository", metavar="OWNER/NAME",
                        help="this team's GitHub repository, which policies/release.toml names as the source "
                             "(default: origin's github.com URL; asked on a terminal; else the release policy "
                             "is not written)")
    parser.add_argument("--only", choices=ONLY,
                        help="write only this part into a repository init was run in before: release-policy "
                             "is policies/release.toml, its trusted root and .github/workflows/release.yml")
    parser.add_argument("--root", type=Path,
                        help="a folder inside the repository to write into (default: the current folder)")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run `qualify init` from the parsed options; the exit status (never a traceback)."""

    def body() -> int:
        from ._init import init  # noqa: PLC0415 - the policy loader (pydantic) only once init runs

        for line in init(start=args.root or Path.cwd(), name=args.name, kind=args.kind, display=args.display,
                         journey=args.journey, example=args.example, upstream=args.upstream,
                         repository=args.repository, only=args.only):
            print(line)
        return EXIT_OK

    return guarded(body)
