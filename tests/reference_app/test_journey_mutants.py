"""Every journey step can fail: breaking the mechanism a step names makes that step's observation wrong.

For each step of the journey this table names one mutant: an exact edit of the
app's own source (a check removed, a cap lifted, a guard skipped). The test
copies the app's package, applies the edit, runs the journey phase holding the
step from the copy (the worker runs from the copy too) and holds that the
step's observation is no longer what the committed policy requires. A step no mutant can fail would
prove nothing; a mutant whose text no longer exists fails the test, so the table
follows the code it breaks.
"""
# The edits quote the app's source exactly, line for line, so some run past the line length.
# ruff: noqa: E501

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from desktop_qualify.qualify_policy import load_policy
from desktop_qualify.qualify_verify._outcomes import _step_problem
from skillhost_testutil import APP_DIR, REPO

POLICY = REPO / "policies" / "local.toml"
# Each step is judged by the verifier's own step rule under both committed policies.
POLICIES = (POLICY, REPO / "policies" / "release.toml")


@dataclass(frozen=True)
class Mutant:
    """``edits``: (file under skillhost/, exact text that must occur once, replacement)."""

    why: str
    edits: tuple[tuple[str, str, str], ...]


def _m(why: str, *edits: tuple[str, str, str]) -> Mutant:
    return Mutant(why, edits)


NO_OS_SANDBOX = ("worker/_main.py", "    return limits, confine(os.getcwd())", "    return limits, []")

MUTANTS: dict[str, Mutant] = {
    "catalog-verified": _m(
        "verification checks no entry",
        ("packaging/_catalog.py", "    for skill_id in on_disk:\n", "    for skill_id in on_disk[:0]:\n"),
    ),
    "bundled-skill-runs": _m(
        "the bundled handler is never called",
        ("host/_bundled.py", '    value = namespace["run"](HostPorts(broker), dict(args or {}))', "    value = {}"),
    ),
    "bundled-swallowed-denial-refused": _m(
        "run_bundled does not look at the broker's denials when the handler swallowed them",
        ("host/_bundled.py", "    if broker.denials:\n        # A denial is authoritative even if the handler swallowed",
         "    if False:\n        # A denial is authoritative even if the handler swallowed"),
    ),
    "audit-full-stops-skill": _m(
        "the broker checks no room for a call's records: once full, later refusals are dropped, the run goes on",
        ("brokers/_broker.py", "            if self.audit_full or len(self.audit) + 2 > MAX_AUDIT - _RESERVED:\n",
         "            if self.audit_full:\n"),
        ("brokers/_broker.py", '        if len(self.audit) >= MAX_AUDIT:\n            raise SkillError(AUDIT_FULL, "the audit of this run is full")\n',
         "        if len(self.audit) >= MAX_AUDIT:\n            return len(self.audit)\n"),
    ),
    "external-signed-runs-in-worker": _m(
        "the worker's result is dropped",
        ("host/_runner.py", '                out.value = frame.get("value")', "                out.value = None"),
    ),
    "external-secret-read-not-audited": _m(
        "the environment port audits the value instead of the key",
        ("brokers/_env.py", '        return key if isinstance(key, str) and KEY_RE.match(key) else "?"',
         '        return self._values.get(key, "?") if isinstance(key, str) else "?"'),
    ),
    "external-unsigned-rejected": _m(
        "a package without a signature file skips signature verification",
        ("packaging/_package.py",
         '    if SIG_NAME not in files:\n        raise SkillError("CC_SKILL_SIGNATURE_MISSING", "no .skill-signature.json")\n'
         '    lock = _check_lock_shape(_parse_json(files[LOCK_NAME], "CC_SKILL_LOCK_INVALID", "lock"))\n'
         '    sig_doc = _parse_json(files[SIG_NAME], "CC_SKILL_SIGNATURE_INVALID", "signature")\n'
         "    signer = verify_signature(lock, sig_doc, trust)\n",
         '    lock = _check_lock_shape(_parse_json(files[LOCK_NAME], "CC_SKILL_LOCK_INVALID", "lock"))\n'
         '    signer = "unsigned"\n'
         "    if SIG_NAME in files:\n"
         '        signer = verify_signature(lock, _parse_json(files[SIG_NAME], "X", "signature"), trust)\n'),
    ),
    "external-unknown-signer-rejected": _m(
        "an untrusted key id is accepted",
        ("packaging/_signing.py",
         '    if pub is None:\n        raise SkillError("CC_SKILL_SIGNER_UNKNOWN", f"signer {keyid[:16]}... is not trusted")\n',
         "    if pub is None:\n        return keyid\n"),
    ),
    "external-digest-drift-rejected": _m(
        "re-read bytes are not compared with the signed lock",
        ("packaging/_package.py", "    if canonical_bytes(expected) != canonical_bytes(lock):", "    if False:"),
    ),
    "external-undeclared-capability-rejected": _m(
        "the broker does not check the declared set",
        ("brokers/_broker.py", "        if capability not in self.declared:", "        if False:"),
    ),
    "external-swallowed-denial-still-rejected": _m(
        "a denial the handler swallowed does not decide the run",
        ("host/_runner.py", "        if broker.denials:\n            # A denial is authoritative",
         "        if False:\n            # A denial is authoritative"),
    ),
    "external-raw-import-rejected": _m(
        "the host's static audit is skipped (the worker still refuses, but only after it started)",
        ("packaging/_package.py", "    audit_external_source(source)\n    return VerifiedSkill(", "    return VerifiedSkill("),
    ),
    "external-submodule-import-refused-in-worker": _m(
        "the worker's import guard does not check the names imported from a module",
        ("worker/_handler_sandbox.py", "            if not hasattr(view, item):", "            if False:"),
    ),
    "external-request-flood-killed": _m(
        "the host does not count a worker's capability requests",
        ("host/_runner.py", "                if broker.requests >= max_requests:", "                if False:"),
    ),
    "external-oversized-frame-killed": _m(
        "the channel's frame cap is lifted to 1 MiB",
        ("host/_channel.py", "MAX_FRAME = 64 * 1024", "MAX_FRAME = 1024 * 1024"),
    ),
    "external-oversized-result-rejected": _m(
        "the result size is not checked",
        ("host/_runner.py", '                if len(canonical_bytes(frame.get("value"))) > MAX_RESULT:', "                if False:"),
    ),
    "external-timeout-killed": _m(
        "the run's deadline ends the wait but the run is not refused",
        ("host/_runner.py", '                raise SkillError("CC_SKILL_TIMEOUT", f"worker exceeded {max_duration:.1f}s")',
         "                break"),
    ),
    "bundled-read-notes-runs": _m(
        "the filesystem port reads only four bytes",
        ("brokers/_fs.py", "            data = os.read(fd, self._max + 1)", "            data = os.read(fd, 4)"),
    ),
    "bundled-repo-status-runs": _m(
        "the process broker resolves no executable",
        ("brokers/_process.py", "        self._exe = {name: shutil.which(name) for name",
         "        self._exe = {name: None for name"),
    ),
    "bundled-host-info-runs": _m(
        "the host grants host-info no host-platform key",
        ("host/_host.py", '{"host-platform": platform_name(), "app-version": __version__}',
         '{"app-version": __version__}'),
    ),
    "bundled-fetch-status-runs": _m(
        "the egress port does not follow an allowed redirect",
        ("brokers/_egress.py", "            if status in _REDIRECTS and location:", "            if False:"),
    ),
    "authority-withholds-process-rejected": _m(
        "the broker lets process:exec through whatever the authority grants",
        ("brokers/_broker.py", "        if capability not in self.granted:",
         '        if capability not in self.granted | {"process:exec"}:'),
    ),
    "authority-withholds-egress-rejected": _m(
        "the broker lets network:https through whatever the authority grants",
        ("brokers/_broker.py", "        if capability not in self.granted:",
         '        if capability not in self.granted | {"network:https"}:'),
    ),
    "authority-narrows-egress-rejected": _m(
        "ports_for ignores the authority's egress destinations",
        ("host/_host.py", "        allowed = frozenset(d for d in cfg.egress.allowed if auth.grants_destination(*d))",
         "        allowed = cfg.egress.allowed"),
    ),
    "authority-narrows-env-keys-rejected": _m(
        "ports_for ignores the authority's environment keys",
        ("host/_host.py", '"env": lambda: self.env_grants.port_for(skill_id, cfg.authority, tier=tier, grants_key=auth.grants_key)',
         '"env": lambda: self.env_grants.port_for(skill_id, cfg.authority, tier=tier, grants_key=None)'),
    ),
    "authority-withholds-fs-read-rejected": _m(
        "the broker lets filesystem:read through whatever the authority grants",
        ("brokers/_broker.py", "        if capability not in self.granted:",
         '        if capability not in self.granted | {"filesystem:read"}:'),
    ),
    "authority-withholds-process-rule-rejected": _m(
        "the process port gets every host rule, not the authority's",
        ("host/_host.py", "        granted_rules = tuple(r for r in rules if auth.grants_rule(r.name))",
         "        granted_rules = tuple(rules)"),
    ),
    "authority-unknown-external-rejected": _m(
        "an authority name the host does not know grants everything",
        ("host/_authority.py", "    return found if found is not None and found.name == name else nothing(name)",
         "    return found if found is not None and found.name == name else Authority.everything(name)"),
    ),
    "fs-dotdot-escape-rejected": _m(
        "no containment: neither the '..' rule nor the resolved-path check",
        ("brokers/_fs.py",
         '    if ".." in _SEP.split(rel):\n'
         "        raise SkillError(\"CC_SKILL_PATH_ESCAPE\", \"'..' components are refused\")\n"
         "    real = os.path.realpath(os.path.join(root_real, rel))\n"
         "    if real != root_real and os.path.commonpath([real, root_real]) != root_real:\n",
         "    real = os.path.realpath(os.path.join(root_real, rel))\n    if False:\n"),
    ),
    "fs-symlink-escape-rejected": _m(
        "the resolved path is not checked against the root",
        ("brokers/_fs.py", "    if real != root_real and os.path.commonpath([real, root_real]) != root_real:\n",
         "    if False:\n"),
    ),
    "process-not-allow-listed-rejected": _m(
        "any argv runs under its own ad-hoc rule",
        ("brokers/_process.py",
         "        rule = self._rules.get(tuple(argv))\n        if rule is None:",
         "        rule = self._rules.get(tuple(argv)) or ProcessRule(argv[0], tuple(argv))\n        if rule is None:"),
    ),
    "process-shell-metachar-rejected": _m(
        "rules match as a prefix of the joined command line instead of literally",
        ("brokers/_process.py",
         "        rule = self._rules.get(tuple(argv))\n        if rule is None:",
         '        rule = next((r for k, r in self._rules.items() if " ".join(argv).startswith(" ".join(k))), None)\n'
         "        if rule is None:"),
    ),
    "process-rule-bound-to-other-skill-rejected": _m(
        # The entry binding alone also refuses another skill (its verified entry differs), so both go.
        "process rules are bound to neither skill ids nor entry points",
        ("brokers/_process.py", "        if rule.skills is not None and self._skill not in rule.skills:", "        if False:"),
        ("brokers/_process.py", "        if rule.entry is not None and self._entry != rule.entry:", "        if False:"),
    ),
    "env-key-not-granted-rejected": _m(
        "an ungranted key reads as empty instead of being refused",
        ("brokers/_env.py",
         "        if not isinstance(key, str) or key not in self._values:\n"
         '            raise SkillError("CC_SKILL_ENV_KEY_DENIED", "logical key not granted to this skill")\n'
         "        return self._values[key]",
         '        return self._values.get(key, "") if isinstance(key, str) else ""'),
    ),
    "net-ip-literal-rejected": _m(
        "IP literals are not refused",
        ("brokers/_egress.py", "        if is_ip_literal(host):\n            raise SkillError(\"CC_SKILL_EGRESS_IP_LITERAL\"",
         "        if False:\n            raise SkillError(\"CC_SKILL_EGRESS_IP_LITERAL\""),
    ),
    "net-non-https-rejected": _m(
        "http is accepted as a scheme",
        ("brokers/_egress.py", '        if parts.scheme.lower() != "https":', '        if parts.scheme.lower() not in ("https", "http"):'),
    ),
    "net-private-resolution-rejected": _m(
        "resolved addresses are not checked",
        ("brokers/_egress.py", "        bad = [a for a in answers if not _address_ok(a)]", "        bad: list[str] = []"),
    ),
    "net-redirect-disallowed-rejected": _m(
        "a redirect hop skips the allow-list and address checks",
        ("brokers/_egress.py", "                target = self._target(current)\n",
         "                target = self._target(current) if hop == 0 else _Target(str(urlsplit(current).hostname), 443, '/')\n"),
        ("brokers/_egress.py", "                address = self._address(target)\n",
         "                address = self._address(target) if hop == 0 else address\n"),
    ),
    "runtime-domain-decided-runs": _m(
        "the audit names the host but not the decision that allowed it",
        ("brokers/_egress.py", '        return f"{decision.decision_id}@{host}"[:MAX_TARGET]', "        return host[:MAX_TARGET]"),
    ),
    "runtime-domain-undecided-rejected": _m(
        "every decision applies to every skill",
        ("host/_host.py",
         "        decisions = tuple(d for d in cfg.egress.decisions if (d.skill_id, d.authority) == (skill_id, cfg.authority))",
         "        decisions = cfg.egress.decisions"),
    ),
    "runtime-domain-expired-decision-rejected": _m(
        "decisions never expire",
        ("brokers/_egress.py", "        if found and all(d.expires_at <= time.time() for d in found):", "        if False:"),
        ("brokers/_egress.py", "        live = [d for d in found if d.expires_at > time.time()]", "        live = found"),
    ),
    "runtime-domain-other-authority-rejected": _m(
        "ports_for takes a decision for this skill whatever authority it was taken under",
        ("host/_host.py",
         "        decisions = tuple(d for d in cfg.egress.decisions if (d.skill_id, d.authority) == (skill_id, cfg.authority))",
         "        decisions = tuple(d for d in cfg.egress.decisions if d.skill_id == skill_id)"),
    ),
    "runtime-domain-redirect-decided-runs": _m(
        "a call is audited under the label of its first hop only: a redirect a decision let through loses the decision's id",
        ("brokers/_egress.py", "                self._reached.label = self.label(target.host, target.port)",
         "                self._reached.label = self.label(target.host, target.port) if hop == 0 else self._reached.label"),
    ),
    "net-loopback-resolution-rejected": _m(
        "public egress lets loopback answers through",
        ("brokers/_egress.py", "        bad = [a for a in answers if not _address_ok(a)]",
         '        bad = [a for a in answers if not _address_ok(a) and a != "127.0.0.1"]'),
    ),
    "loopback-service-runs": _m(
        "the loopback broker dials the wrong address",
        ("brokers/_loopback.py", 'LOOPBACK = "127.0.0.1"', 'LOOPBACK = "127.0.0.2"'),
    ),
    "loopback-port-not-listed-rejected": _m(
        "any port is accepted for a service",
        ("brokers/_loopback.py", "        if not isinstance(port, int) or isinstance(port, bool) or port not in allowed:",
         "        if not isinstance(port, int) or isinstance(port, bool):"),
    ),
    "loopback-unknown-service-rejected": _m(
        "an unknown service falls back to the first listed one",
        ("brokers/_loopback.py",
         '        if not isinstance(service, str) or service not in self._policy.services:\n'
         '            raise SkillError("CC_SKILL_LOOPBACK_SERVICE_UNKNOWN", "not a loopback service of this host")\n'
         "        allowed = self._policy.services[service]\n",
         "        allowed = next(iter(self._policy.services.values()))\n"),
    ),
    "diagnostics-dns-lookup-runs": _m(
        "the diagnostics resolve no executable",
        ("brokers/_diagnostics.py", "        self._tools = {tool: (chosen.get(tool) or shutil.which(exe), args)",
         "        self._tools = {tool: (None, args)"),
    ),
    "diagnostics-host-not-allowed-rejected": _m(
        "a diagnostic's host is not checked against the egress rules",
        ("brokers/_diagnostics.py", "        address = self._check(host, port)", "        address = host"),
    ),
    "diagnostics-private-host-rejected": _m(
        "a diagnostic checks the allow-list but not the resolved addresses",
        ("brokers/_egress.py", "        return self._address(self._target(f\"https://{host}:{port}/\"))",
         "        return self._target(f\"https://{host}:{port}/\").host"),
    ),
    "diagnostics-unknown-tool-rejected": _m(
        "an unknown tool name runs as an executable of that name",
        ("brokers/_diagnostics.py", "        if not isinstance(tool, str) or tool not in self._tools:\n",
         "        if isinstance(tool, str) and tool not in self._tools:\n            self._tools[tool] = (shutil.which(tool), (NAME,))\n"
         "        if not isinstance(tool, str):\n"),
    ),
    "external-broker-call-through-worker": _m(
        "the host answers every capability request with a refusal instead of the broker's answer",
        ("host/_runner.py", "                ok, value = _call_with_deadline(broker, frame, deadline)",
         '                ok, value = False, SkillError("CC_SKILL_PORT_UNAPPROVED", "not forwarded")'),
    ),
    "external-late-call-recorded": _m(
        "a call abandoned at the deadline ends with an ordinary done record, as if it had ended in time",
        ("brokers/_broker.py", "            late = self._inflight.pop(seq, False)",
         "            late = self._inflight.pop(seq, False) and False"),
    ),
    "external-fs-escape-rejected": _m(
        "the worker loses the broker's refusal code on its way back",
        ("worker/_main.py", '            code = str(resp.get("code", "CC_SKILL_CAPABILITY_DENIED"))',
         '            code = "CC_SKILL_CAPABILITY_DENIED"'),
    ),
    "external-protocol-version-mismatch-killed": _m(
        "neither side checks the protocol version",
        ("worker/_main.py", '        if not isinstance(frame, dict) or frame.get("v") != PROTOCOL_VERSION:',
         "        if not isinstance(frame, dict):"),
        ("host/_runner.py", '                or frame.get("v") != protocol_version\n', ""),
    ),
    "external-abort-killed": _m(
        "the host's cancel switch is not looked at",
        ("host/_runner.py", "            if cancel is not None and cancel.is_set():", "            if False:"),
    ),
    "package-path-traversal-rejected": _m(
        "the manifest's entry point is not checked",
        ("packaging/_manifest.py", '    if "entry" in fields:\n', "    if False:\n"),
    ),
    "package-symlink-rejected": _m(
        "package files are stat'ed through symlinks",
        ("packaging/_package.py", "    st = os.lstat(path)\n    if stat.S_ISLNK", "    st = os.stat(path)\n    if stat.S_ISLNK"),
    ),
    "package-native-binary-rejected": _m(
        "native binary magic is not looked for",
        ("packaging/_package.py", "        if data.startswith(_NATIVE_MAGIC):", "        if False:"),
    ),
    "package-unknown-manifest-field-rejected": _m(
        "unknown manifest fields are ignored",
        ("packaging/_manifest.py", "    if unknown:\n", "    if False:\n"),
    ),
    "prompt-only-no-execution": _m(
        "a prompt-only skill gets an empty handler",
        ("packaging/_package.py",
         '    if HANDLER_NAME not in files:\n        raise SkillError("CC_SKILL_PROMPT_ONLY", "prompt-only skill: no code execution")\n',
         '    if HANDLER_NAME not in files:\n        files[HANDLER_NAME] = b"def run(ports, args):\\n    return {}\\n"\n'),
    ),
    "safe-mode-bundled-runs": _m(
        "safe mode refuses bundled skills too",
        ("host/_host.py",
         "    def run_bundled(self, skill_id: str, args: dict[str, Any] | None = None) -> tuple[Any, Broker]:\n",
         "    def run_bundled(self, skill_id: str, args: dict[str, Any] | None = None) -> tuple[Any, Broker]:\n"
         "        if self.config.safe_mode:\n"
         '            raise SkillError("CC_SKILL_SAFE_MODE", "mutant")\n'),
    ),
    "safe-mode-external-refused": _m(
        "safe mode is not looked at for external skills",
        ("host/_host.py", "        if self.config.safe_mode:\n            raise SkillError(\"CC_SKILL_SAFE_MODE\"",
         "        if False:\n            raise SkillError(\"CC_SKILL_SAFE_MODE\""),
    ),
    "host-boundary-external-not-loaded": _m(
        "the host also loads the verified handler into a module of its own, under an innocuous name",
        ("packaging/_package.py", "    audit_external_source(source)\n",
         "    audit_external_source(source)\n"
         "    import types as _types\n"
         '    _m = _types.ModuleType("innocuous")\n'
         "    exec(compile(source, os.path.join(root_real, HANDLER_NAME), 'exec'), _m.__dict__)\n"
         '    sys.modules["innocuous"] = _m\n'),
        ("packaging/_package.py", "import os\n", "import os\nimport sys\n"),
    ),
    "worker-environment-minimal": _m(
        "the worker inherits the host's environment",
        ("_runtime.py", "    env: dict[str, str] = {}\n", "    env: dict[str, str] = dict(os.environ)\n"),
    ),
    "kernel-refuses-read-outside-bundle": _m("the worker applies no OS sandbox", NO_OS_SANDBOX),
    "kernel-refuses-write-outside-tmp": _m("the worker applies no OS sandbox", NO_OS_SANDBOX),
    "kernel-refuses-tcp-connect-loopback": _m("the worker applies no OS sandbox", NO_OS_SANDBOX),
    "kernel-refuses-ptrace-host": _m(
        "the worker applies no OS sandbox and the host stays dumpable",
        NO_OS_SANDBOX,
        ("host/_channel.py", '    if not sys.platform.startswith("linux"):\n        return False\n    try:',
         "    if True:\n        return False\n    try:"),
    ),
    "kernel-refuses-exec-shell": _m("the worker applies no OS sandbox", NO_OS_SANDBOX),
    "worker-tmp-write-rename-delete": _m(
        "the worker's seccomp list no longer carries rename: its own folder's scratch file cannot be renamed",
        ("os_sandbox/_seccomp_bpf.py", '"rename": 82,', '"rename": 999,'),
        ("os_sandbox/_seccomp_bpf.py", '"rename": 38,', '"rename": 999,'),
    ),
}


# More mutants for some steps: each breaks one more mechanism the step proves (the step id comes first).
EXTRA_MUTANTS: dict[str, tuple[str, Mutant]] = {
    "boundary-host-runs-handler-and-drops-it": ("host-boundary-external-not-loaded", _m(
        "the host compiles the verified handler under an innocuous name, runs its top level and run(), then drops it",
        ("packaging/_package.py", "    audit_external_source(source)\n",
         "    audit_external_source(source)\n"
         "    _ns: dict = {}\n"
         "    exec(compile(source, '<string>', 'exec'), _ns)\n"
         "    try:\n"
         "        _ns['run'](None, {})\n"
         "    except Exception:\n"
         "        pass\n"
         "    _ns.clear()\n"),
    )),
    "boundary-host-execs-handler-text": ("host-boundary-external-not-loaded", _m(
        "the host execs the handler's text (no compile of its own) and keeps nothing",
        ("packaging/_package.py", "    audit_external_source(source)\n",
         "    audit_external_source(source)\n    exec(source, {})\n"),
    )),
    "loopback-requests-root-path": ("loopback-service-runs", _m(
        "the loopback broker requests / instead of the path it was asked for",
        ("brokers/_loopback.py", '            conn.request("GET", path, headers=', '            conn.request("GET", "/", headers='),
    )),
    "loopback-canned-answer": ("loopback-service-runs", _m(
        "the loopback broker never connects and returns a canned 500",
        ("brokers/_loopback.py", "        number = self._port(service, port)\n",
         "        number = self._port(service, port)\n"
         '        return {"status": 500, "content_type": "", "body": ""}\n'),
    )),
    "loopback-not-bound-to-skills": ("loopback-service-runs", _m(
        "loopback services are not bound to skills",
        ("brokers/_loopback.py",
         "        bound = {name: ports for name, ports in self.services.items() if skill_id in self.skills.get(name, ())}",
         "        bound = dict(self.services)"),
    )),
    "diagnostics-through-shell-with-host-env": ("diagnostics-dns-lookup-runs", _m(
        "diagnostics run through /bin/sh -c with the host's full environment",
        ("brokers/_process.py", "        returncode, out, err = self._execute(list(diag.argv), self._root, env, started)",
         '        returncode, out, err = self._execute(["/bin/sh", "-c", " ".join(diag.argv)], self._root, '
         "dict(os.environ), started)"),
    )),
    "diagnostics-run-nothing": ("diagnostics-dns-lookup-runs", _m(
        "diagnostics run nothing and report success",
        ("brokers/_process.py", "        returncode, out, err = self._execute(list(diag.argv), self._root, env, started)",
         '        returncode, out, err = 0, b"", b""'),
    )),
    "diagnostics-not-bound-to-skills": ("diagnostics-dns-lookup-runs", _m(
        "network diagnostics are not bound to skills",
        ("host/_host.py", "        bound = skill_id in cfg.diagnostic_skills", "        bound = True"),
    )),
    "diagnostics-audited-without-host": ("diagnostics-dns-lookup-runs", _m(
        "a diagnostic is audited by its tool only, without its host or decision",
        ("brokers/_process.py", "            return f\"diagnose:{name}:{where if ok else '?'}\"[:64]",
         '            return f"diagnose:{name}"'),
    )),
    "worker-gets-empty-answer": ("external-broker-call-through-worker", _m(
        "the host forwards an empty value instead of the broker's answer",
        ("host/_runner.py",
         '                    send({"type": "capability-response", "request_id": rid, "ok": True, "value": value})',
         '                    send({"type": "capability-response", "request_id": rid, "ok": True, "value": ""})'),
    )),
    "repo-status-bogus-subcommand": ("bundled-repo-status-runs", _m(
        "the process broker runs a bogus git subcommand instead of the rule's",
        ("brokers/_process.py", "        returncode, out, err = self._execute([exe, *rule.argv[1:]], workdir, env, started)",
         '        returncode, out, err = self._execute([exe, "bogus", *rule.argv[2:]], workdir, env, started)'),
    )),
    "repo-status-constant-entry": ("bundled-repo-status-runs", _m(
        "the process port is given the constant entry file name, not the entry the catalog verified",
        ("host/_bundled.py", '    entry_point = entry_id("bundled", skill_id, hashlib.sha256(handler).hexdigest())',
         '    entry_point = "handler.py"'),
    )),
    "ports-for-builds-every-port": ("authority-withholds-process-rejected", _m(
        "ports_for builds every port, whatever the intersection grants",
        ("host/_host.py", "        return {port: build() for port, build in builders.items() if PORT_CAPABILITY[port] in wanted}",
         "        return {port: build() for port, build in builders.items()}"),
    )),
    "audit-full-no-overflow-record": ("audit-full-stops-skill", _m(
        "a full audit stops the run but writes no overflow record",
        ("brokers/_broker.py",
         "        if self._overflow_record is None:\n"
         '            seq = self._record("overflow", port, method, capability, AUDIT_FULL, target)\n'
         "            self._overflow_record = self.audit[seq]\n"
         '        self._overflow_record["target"] = f"refused={self.overflow}"\n', ""),
    )),
    "audit-full-ends-with-first-denial": ("audit-full-stops-skill", _m(
        "a run the full audit stopped ends with its first denial's code, not CC_SKILL_AUDIT_FULL",
        ("host/_bundled.py", "        refusal = AUDIT_FULL if broker.audit_full else broker.denials[0]",
         "        refusal = broker.denials[0]"),
    )),
    "bundled-refusal-drops-its-audit": ("bundled-swallowed-denial-refused", _m(
        "a refused bundled run loses its audit",
        ("host/_bundled.py", '"host broker denied a capability request", broker.audit)',
         '"host broker denied a capability request", [])'),
    )),
    "granted-defaults-to-everything": ("authority-withholds-process-rejected", _m(
        "granted is optional again: the broker of a bundled run is given none and grants every capability",
        ("brokers/_broker.py", "        granted: frozenset[str],\n    ) -> None:",
         "        granted: frozenset[str] | None = None,\n    ) -> None:"),
        ("brokers/_broker.py", "        self.granted = frozenset(granted)\n",
         "        self.granted = frozenset(PORT_CAPABILITY.values()) if granted is None else frozenset(granted)\n"),
        ("host/_bundled.py", "allowed, approved, authority=authority, granted=granted)",
         "allowed, approved, authority=authority)"),
    )),
    "deadline-abandons-nothing": ("external-late-call-recorded", _m(
        "the run's deadline abandons no call: no abandoned record, and its late end reads as an ordinary one",
        ("host/_runner.py", '        broker.abandon("CC_SKILL_TIMEOUT")\n', ""),
    )),
    "late-end-not-recorded": ("external-late-call-recorded", _m(
        "a call that ends after its run's deadline leaves no end record",
        ("brokers/_broker.py", "            self._record(event, port, method, capability, code, target)\n",
         "            if not late:\n                self._record(event, port, method, capability, code, target)\n"),
    )),
    "precheck-refusal-without-target": ("authority-unknown-external-rejected", _m(
        "a pre-check refusal is audited without its target",
        ("brokers/_broker.py", "                raise self._deny(port, method, capability, code, target)",
         "                raise self._deny(port, method, capability, code)"),
    )),
}


def _table() -> dict[str, tuple[str, str | None]]:
    return {sid: (step.expect, step.code) for sid, step in load_policy(POLICY).file.journey.steps.items()}


def _judged(step: dict[str, object]) -> list[str | None]:
    """The verifier's reason (``_step_problem``) the reported step does not pass, under each policy; None passes."""
    seen = SimpleNamespace(id=step["id"], observed=step["observed"], code=step["code"], errno=step["errno"],
                           layer=step["layer"])
    problems = []
    for path in POLICIES:
        policy = load_policy(path)
        want = policy.file.journey.steps.get(str(step["id"]))
        problems.append(_step_problem(seen, want, re.compile(policy.file.app.codes.pattern)))
    return problems


def test_every_journey_step_has_a_mutant():
    assert sorted(MUTANTS) == sorted(_table())


def _mutated_copy(tmp_path: Path, mutant: Mutant) -> Path:
    shutil.copytree(APP_DIR / "skillhost", tmp_path / "skillhost", ignore=shutil.ignore_patterns("__pycache__"))
    for name, old, new in mutant.edits:
        path = tmp_path / "skillhost" / name
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{name}: the mutated text must occur exactly once: {old!r}"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return tmp_path


def _run_phase(root: Path, phase: str) -> list[dict[str, object]]:
    """The steps of one journey phase, run from the app package under ``root`` in a fresh interpreter."""
    script = (
        "import json; from skillhost.journey._run import run_journey; "
        f"print(json.dumps(run_journey(phases=({phase!r},))[0]['steps']))"
    )
    env = {k: v for k, v in os.environ.items() if k != "QUALIFY_BUILD_INFO"}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-800:]
    steps: list[dict[str, object]] = json.loads(proc.stdout)
    return steps


@pytest.fixture(scope="module")
def phase_of() -> dict[str, str]:
    """Which phase reports each step, read from the unmutated app (and every step passes there)."""
    from skillhost.journey._run import PHASES

    table, found = _table(), {}
    for phase in PHASES:
        for step in _run_phase(APP_DIR, phase):
            assert (step["observed"], step["code"]) == table[str(step["id"])], step
            assert _judged(step) == [None] * len(POLICIES), step
            found[str(step["id"])] = phase
    assert sorted(found) == sorted(table)
    return found


def _fails_its_step(tmp_path: Path, sid: str, mutant: Mutant, phase_of: dict[str, str]) -> None:
    root = _mutated_copy(tmp_path, mutant)
    steps = {s["id"]: s for s in _run_phase(root, phase_of[sid])}
    want = _table()[sid]
    seen = steps[sid]
    assert (seen["observed"], seen["code"]) != want, f"{sid} still shows {want} under: {mutant.why}"
    assert all(_judged(seen)), f"{sid} still passes the verifier's step rule under: {mutant.why}"


@pytest.mark.parametrize("sid", sorted(MUTANTS))
def test_the_mutant_makes_its_step_fail(sid, tmp_path, phase_of):
    _fails_its_step(tmp_path, sid, MUTANTS[sid], phase_of)


def test_every_extra_mutant_names_a_journey_step():
    assert {sid for sid, _ in EXTRA_MUTANTS.values()} <= set(_table())


@pytest.mark.parametrize("name", sorted(EXTRA_MUTANTS))
def test_the_extra_mutant_makes_its_step_fail(name, tmp_path, phase_of):
    sid, mutant = EXTRA_MUTANTS[name]
    _fails_its_step(tmp_path, sid, mutant, phase_of)
