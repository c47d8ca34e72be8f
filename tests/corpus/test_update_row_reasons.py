"""Each update-journey row of the corpus (corpus_update.py) says why, word for word, on this host.

test_hostile_corpus.py holds each row's code; this holds the reasons the verifier gives, other than the
record's contradicted claims (a row spoils a fact, not the claim written from it), in the verifier's order. Pinned on
Linux, where CI runs: the platform's name, executable and digests are the factory's there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus_update import _ROWS, _mutation
from desktop_qualify.qualify_policy import host_platform

pytestmark = pytest.mark.skipif(host_platform() != "linux", reason="the reasons name Linux's executable and digests")

# Row -> the reasons `qualify verify` gives for it, "the update record contradicts itself" ones left out.
REASONS: dict[str, list[str]] = {
 'state-lost-on-upgrade': ['upgrade-check: found state 6e88e6490dc59f0a, the previous version wrote '
                           'e9af0f4dfa34d8b8'],
 'state-missing-after-upgrade': ['upgrade-check: build 000000000000 ran it, not 3b18e512dba7',
                                 'upgrade-check: observed reject CC_SKILL_STATE_MISSING, the policy requires '
                                 'allow',
                                 'upgrade-check: exited 3',
                                 'upgrade-check: named no state digest'],
 'rollback-failed': ['rollback-check: observed reject CC_SKILL_STATE_MISSING, the policy requires allow',
                     'rollback-check: exited 3',
                     'rollback-check: named no state digest'],
 'downgrade-allowed-where-forbidden': ['downgrade-check: observed allow, the policy requires reject '
                                       'CC_SKILL_STATE_NEWER',
                                       'downgrade-check: a refusal that exited 0',
                                       'downgrade-check: a refusal that names a state digest'],
 'previous-release-not-audited': ["previous-release: the previous release's bundle audited REJECTED"],
 'update-missing-where-required': ['the policy requires the update journey ([update]); the statement has none'],
 'update-the-policy-does-not-ask-for': ['the statement carries an update journey the policy does not ask for'],
 'downgrade-rule-rewritten-in-record': ['the journey ran with installer archive and downgrade rule allow ; the '
                                        "policy's are archive and refuse CC_SKILL_STATE_NEWER",
                                        'downgrade-check: observed allow, the policy requires reject '
                                        'CC_SKILL_STATE_NEWER',
                                        'downgrade-check: a refusal that exited 0',
                                        'downgrade-check: a refusal that names a state digest'],
 'downgrade-refused-with-another-code': ['downgrade-check: observed reject CC_SKILL_STATE_INVALID, the policy '
                                         'requires reject CC_SKILL_STATE_NEWER'],
 'downgrade-refused-where-allowed': ['downgrade-check: observed reject CC_SKILL_STATE_NEWER, the policy '
                                     'requires allow',
                                     'downgrade-check: exited 3',
                                     'downgrade-check: named no state digest'],
 'step-claims-failed-though-its-facts-pass': [],
 'journey-claims-passed-though-a-step-failed': ['rollback-check: found state d9298a10d1b07358, the previous '
                                                'version wrote e9af0f4dfa34d8b8'],
 'failed-steps-hidden': [],
 'previous-install-of-other-bytes': ['previous-install: installed artifact a3ead5eedad5df82, expected '
                                     '26239061ed00d2a3'],
 'upgrade-installs-another-executable': ['upgrade-install: the installed executable is not the one this '
                                         'version installs elsewhere',
                                         "upgrade-probe: the app's own executable digest differs from the "
                                         "installed executable's",
                                         'upgrade-probe: the probe record contradicts its facts'],
 'rollback-installs-another-executable': ['rollback-install: the installed executable is not the one this '
                                          'version installs elsewhere'],
 'installed-by-another-installer': ["upgrade-install: installed by deb at 'skillhost/skillhost'; the policy's "
                                    "installer is archive at 'skillhost/skillhost'"],
 'state-written-by-the-candidate': ['write-state: build ffffffffffff ran it, not c0ffee000000'],
 'state-verb-another-command': ["upgrade-check: ran check ['{executable}', 'state', 'repair'], the policy's "
                                "check verb is ['{executable}', 'state', 'check', '--record', '{record}']"],
 'state-check-timed-out': ['upgrade-check: timed out'],
 'upgrade-probe-of-another-build': ["upgrade-probe: the app reports build eeeeeeeeeeee, the gate's commit is "
                                    '3b18e512dba7',
                                    'upgrade-probe: the probe record contradicts its facts'],
 'upgrade-probe-failed-check': ['upgrade-probe: the probe exited 3, its report present',
                                'upgrade-probe: the probe record contradicts its facts'],
 'no-state-written': ['write-state: named no state digest',
                      'upgrade-check: no state was written to compare with',
                      'rollback-check: no state was written to compare with',
                      'downgrade-check: no state was written to compare with'],
 'previous-artifact-not-an-installer-file': ["previous-release: the previous artifact 'skillhost-previous.msi' "
                                             'is not a archive file'],
 'upgrade-install-failed': ['upgrade-install: install failed: refused: '
                            'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'],
 'previous-install-installed-nothing': ['previous-install: nothing installed, or no digest of it recorded'],
 'previous-install-at-another-executable': ["previous-install: installed by archive at 'bin/other'; the "
                                            "policy's installer is archive at 'skillhost/skillhost'"],
 'state-record-from-another-platform': ['upgrade-check: the record is a check on windows, not a check on '
                                        'linux'],
 'state-record-of-another-verb': ['upgrade-check: the record is a write on linux, not a check on linux'],
 'state-found-but-exited-nonzero': ['upgrade-check: exited 1'],
 'state-found-but-no-digest-named': ['rollback-check: named no state digest'],
 'state-check-wrote-no-record': ['rollback-check: the app wrote no state record (exit 0)'],
 'downgrade-refusal-exited-zero': ['downgrade-check: a refusal that exited 0'],
 'downgrade-refusal-names-a-state': ['downgrade-check: a refusal that names a state digest'],
 'installer-rewritten-in-record': ['the journey ran with installer deb and downgrade rule refuse '
                                   "CC_SKILL_STATE_NEWER; the policy's are archive and refuse "
                                   'CC_SKILL_STATE_NEWER'],
 'upgrade-probe-under-another-display': ['upgrade-probe: the probe ran another command or display than the '
                                         "policy's"],
 'upgrade-probe-contradicts-its-facts': ['upgrade-probe: the probe record contradicts its facts'],
 'upgrade-probe-other-isolation-layers': ["upgrade-probe: the probe's isolation: required isolation layer(s) "
                                          'not applied: no-new-privs',
                                          'upgrade-probe: the probe after the upgrade reports other isolation '
                                          "layers than the candidate's own probe",
                                          'upgrade-probe: the probe record contradicts its facts'],
 'upgrade-probe-wrote-no-report': ['upgrade-probe: the probe exited 0, its report absent',
                                   'upgrade-probe: the probe record contradicts its facts'],
 'write-state-wrote-no-record': ['write-state: the app wrote no state record (exit 0)',
                                 'upgrade-check: no state was written to compare with',
                                 'rollback-check: no state was written to compare with',
                                 'downgrade-check: no state was written to compare with'],
 'previous-install-recorded-zero-bytes': ['previous-install: nothing installed, or no digest of it recorded'],
 'downgrade-allowed-but-another-state-found': ['downgrade-check: found state b5119d2ca273b1ab, the previous '
                                               'version wrote e9af0f4dfa34d8b8']}


def test_every_row_has_its_reasons() -> None:
    assert sorted(REASONS) == sorted(name for name, _, _ in _ROWS)


@pytest.mark.parametrize(("name", "spoil"), [(name, spoil) for name, spoil, _ in _ROWS], ids=[r[0] for r in _ROWS])
def test_the_row_says_why(name: str, spoil: dict[str, Any], tmp_path: Path, qualify: Any) -> None:
    out = tmp_path / "decision.json"
    done = qualify([*_mutation(spoil)(tmp_path), "--json", str(out)])
    assert done.status == 1, done.text
    reasons = [r["message"] for r in json.loads(out.read_text(encoding="utf-8"))["reasons"]]
    said = [m.removeprefix("platform-linux.dsse.json: ") for m in reasons if "contradicts itself" not in m]
    assert said == REASONS[name]
