"""Windows: the worker starts in an AppContainer (or, where none can be created, under a restricted
low-integrity token), suspended, inside a job object, then resumed; it reads its own token back.

Standard library only. ``subprocess`` cannot start a process in an AppContainer,
so the host starts the worker itself, through ``Win32`` (``_windows_api``),
which the tests replace with a recorder: the call order, the structures, the
attribute list, the ACL grants and the closing of every handle on every path are
held on every platform. The start, in order:

1. the AppContainer profile named after the installed executable
   (``CreateAppContainerProfile`` with no capabilities, or
   ``DeriveAppContainerSidFromAppContainerName`` when it already exists);
2. each bundle folder is only read, never written: its DACL must already grant
   the install capability (``_windows_grant.INSTALL_CAPABILITY``) read and
   execute, as the installer left it, or nothing starts
   (``CC_SKILL_INSTALL_GRANT_MISSING``); a per-machine install gives the user
   no ``WRITE_DAC`` there, and rewriting a bundle's ACL at every start would
   re-propagate it over every file;
3. the worker's temporary folder (the host's own, made for this start) grants
   the container's SID read, write and ``DELETE`` (rename and delete need it)
   and is labelled Low integrity: the container's token is Low, and an
   unlabelled folder counts as Medium, whose no-write-up would refuse every
   write whatever its DACL says;
4. a desktop of its own (``CreateDesktopW`` on this process's window station, a
   unique name, the rights Chromium's sandbox creates its alternate desktop with),
   labelled Low and granting the container's SID only what connecting to it needs:
   the worker is started on it (``lpDesktop`` ``<station>\\<name>``), so it shares
   no desktop, windows or hooks with the user's ``WinSta0\\Default``; the host closes
   it once the worker is reaped (``_windows_process``);
5. an attribute list with ``SECURITY_CAPABILITIES`` (that SID, and the install
   capability alone),
   ``ALL_APPLICATION_PACKAGES_POLICY`` (opt out of ALL APPLICATION PACKAGES,
   where Windows knows it), ``CHILD_PROCESS_POLICY`` (the worker may create no
   process at all, as Chromium's renderers) and ``HANDLE_LIST`` (the three
   standard handles: the only handles the worker inherits), and where asked for
   ``MITIGATION_POLICY`` (win32k lockdown, below);
6. ``CreateProcessW`` suspended; the process is assigned to a job (kill on close,
   one active process, 1 GiB, every ``JOB_OBJECT_UILIMIT_*``), then its thread is resumed.

Win32k lockdown (``PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY`` with
``..._WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON``, as Chromium's renderers) is a named
option, off unless asked for (``win32k_lockdown``; the host's
``SKILLHOST_WORKER_WIN32K_LOCKDOWN=1``), and applied only where Windows has it
(build 9200, Windows 8, or later). Off by default because this worker cannot be
shown to need no user32: ``ctypes`` (its read-back) links OLEAUT32, which imports
user32, and a frozen build's bootloader may too; user32's initialisation calls
into win32k, so with the lockdown on such a worker would fail to start. The
worker reports what it reads back (``win32k-lockdown``), never what was asked.

Every Win32 function is called with its C signature (``_windows_api.PROTOTYPES``)
and every failure is checked before its result is used.

Where ``CreateAppContainerProfile`` fails, the fallback layer is a restricted
token (``DISABLE_MAX_PRIVILEGE``) at low integrity, started with
``CreateProcessAsUserW``; the temporary folder is labelled Low (as on the
AppContainer path) so the worker can write there and nowhere else of Medium
integrity. The worker reports each layer
as it reads it back from its own token (``GetTokenInformation``), never as assumed.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from skillhost.os_sandbox._interface import Layer, layer
from skillhost.os_sandbox._windows_api import Win32
from skillhost.os_sandbox._windows_grant import (
    INSTALL_CAPABILITY,
    InstallGrantMissingError,
    capability_sid,
    missing_grant,
)
from skillhost.os_sandbox._windows_structs import (
    CREATE_NEW_PROCESS_GROUP,
    CREATE_NO_WINDOW,
    CREATE_SUSPENDED,
    CREATE_UNICODE_ENVIRONMENT,
    DACL_SECURITY_INFORMATION,
    DESKTOP_ACCESS,
    DESKTOP_WORKER_ACCESS,
    DISABLE_MAX_PRIVILEGE,
    DISALLOW_WIN32K_SYSTEM_CALLS,
    EXPLICIT_ACCESS_W,
    EXTENDED_STARTUPINFO_PRESENT,
    FILE_TMP_ACCESS,
    GRANT_ACCESS,
    HRESULT_ALREADY_EXISTS,
    JOB_LIMIT_FLAGS,
    JOB_OBJECT_BASIC_UI_RESTRICTIONS,
    JOB_OBJECT_EXTENDED_LIMIT_INFORMATION,
    JOBOBJECT_BASIC_UI_RESTRICTIONS,
    LABEL_SECURITY_INFORMATION,
    LOW_INTEGRITY_SID,
    NO_CHILD_PROCESS_CREATION,
    NO_INHERITANCE,
    PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY,
    PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY,
    PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
    PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY,
    PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES,
    PROCESS_CHILD_PROCESS_POLICY,
    PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT,
    PROCESS_CREATION_CHILD_PROCESS_RESTRICTED,
    PROCESS_SYSTEM_CALL_DISABLE_POLICY,
    SE_GROUP_ENABLED,
    SE_GROUP_INTEGRITY,
    SE_WINDOW_OBJECT,
    SECURITY_CAPABILITIES,
    SECURITY_MANDATORY_LOW_RID,
    SID_AND_ATTRIBUTES,
    STARTF_USESTDHANDLES,
    STARTUPINFOEXW,
    SUB_CONTAINERS_AND_OBJECTS_INHERIT,
    SYSTEM_MANDATORY_LABEL_NO_WRITE_UP,
    TOKEN_ADJUST_DEFAULT,
    TOKEN_APP_CONTAINER_SID,
    TOKEN_ASSIGN_PRIMARY,
    TOKEN_DUPLICATE,
    TOKEN_INTEGRITY_LEVEL,
    TOKEN_IS_APP_CONTAINER,
    TOKEN_MANDATORY_LABEL,
    TOKEN_QUERY,
    TRUSTEE_IS_SID,
    TRUSTEE_IS_UNKNOWN,
    UI_LIMITS,
    WIN32K_LOCKDOWN_MIN_BUILD,
    WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON,
    ExtendedLimits,
    job_limits,
)  # fmt: skip

__all__ = [
    "DESKTOP_UNAVAILABLE_CODE", "WIN32K_LAYER", "WIN32K_LOCKDOWN_ENV", "WINDOWS_LAYERS", "DesktopUnavailableError",
    "Started", "container_name", "self_report", "start_worker", "win32k_lockdown_asked", "windows_build",
]  # fmt: skip

WINDOWS_LAYERS = ("job-object", "no-child-process", "appcontainer", "restricted-token")
# Reported as read back, never required (the option is off by default: module docstring).
WIN32K_LAYER = "win32k-lockdown"
WIN32K_LOCKDOWN_ENV = "SKILLHOST_WORKER_WIN32K_LOCKDOWN"
DESKTOP_UNAVAILABLE_CODE = "CC_SKILL_DESKTOP_UNAVAILABLE"
START_FLAGS = (EXTENDED_STARTUPINFO_PRESENT | CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT
               | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW)  # fmt: skip
StdHandles = tuple[int, int, int]


class Started(NamedTuple):
    """A resumed worker: its process handle, pid, job and desktop (all closed by ``release``), and its layer."""

    process: int
    pid: int
    job: int
    layer: str
    desktop: int = 0


class DesktopUnavailableError(OSError):
    """The worker's own desktop could not be made: nothing started (the host keeps this code)."""

    code = DESKTOP_UNAVAILABLE_CODE

    def __init__(self, why: OSError) -> None:
        super().__init__(f"{DESKTOP_UNAVAILABLE_CODE}: the worker's desktop: {why}")


def windows_build() -> int:
    """This Windows' build number (``sys.getwindowsversion``; an unmanifested process is told at most 9200, which
    still decides win32k lockdown rightly: it exists from 9200)."""
    version = getattr(sys, "getwindowsversion", None)  # Windows only
    return int(version().build) if version is not None else 0


def win32k_lockdown_asked(environ: Mapping[str, str]) -> bool:
    """The named option, as the host's environment gives it: exactly ``1`` asks for it."""
    return environ.get(WIN32K_LOCKDOWN_ENV, "") == "1"


def desktop_name() -> str:
    """A desktop name no other start uses: this host's pid and 64 random bits."""
    return f"skillhost.worker.{os.getpid()}.{secrets.token_hex(8)}"


def container_name(executable: str) -> str:
    """A stable AppContainer name per installed executable (at most 64 characters, as Windows requires)."""
    digest = hashlib.sha256(os.path.normcase(os.path.realpath(executable)).encode("utf-8")).hexdigest()
    return f"skillhost.worker.{digest[:40]}"


def _appcontainer_sid(api: Win32, name: str) -> int | None:
    """The profile's SID (freed with ``free_sid``), or ``None`` where no AppContainer can be created."""
    try:
        hr, sid = api.create_appcontainer_profile(name, "skillhost worker", "skillhost external skill worker")
    except (OSError, AttributeError):  # no userenv export: Windows before 8
        return None
    if hr == 0:
        return sid
    if hr == HRESULT_ALREADY_EXISTS:
        return api.derive_appcontainer_sid(name)
    return None


def _explicit_access(sid: int, access: int, inheritance: int = SUB_CONTAINERS_AND_OBJECTS_INHERIT
                     ) -> EXPLICIT_ACCESS_W:  # fmt: skip
    entry = EXPLICIT_ACCESS_W()
    entry.grfAccessPermissions = access
    entry.grfAccessMode = GRANT_ACCESS
    entry.grfInheritance = inheritance
    entry.Trustee.TrusteeForm = TRUSTEE_IS_SID
    entry.Trustee.TrusteeType = TRUSTEE_IS_UNKNOWN
    entry.Trustee.ptstrName = sid
    return entry


def _grant(api: Win32, sid: int, path: str, access: int) -> None:
    """Add one inherited allow entry for ``sid`` to ``path``'s DACL; the descriptor and the new ACL are freed."""
    dacl, descriptor = api.get_named_security_info(path, DACL_SECURITY_INFORMATION)
    try:
        new_acl = api.set_entries_in_acl((EXPLICIT_ACCESS_W * 1)(_explicit_access(sid, access)), dacl)
        try:
            api.set_named_security_info(path, DACL_SECURITY_INFORMATION, new_acl, 0)
        finally:
            api.local_free(new_acl)
    finally:
        api.local_free(descriptor)


def _grant_desktop(api: Win32, sid: int, desktop: int) -> None:
    """The container's SID may connect to ``desktop`` (the creator's default DACL names only the user, and the
    container opted out of ALL APPLICATION PACKAGES); the descriptor and the new ACL are freed."""
    dacl, descriptor = api.get_security_info(desktop, SE_WINDOW_OBJECT, DACL_SECURITY_INFORMATION)
    try:
        entry = _explicit_access(sid, DESKTOP_WORKER_ACCESS, NO_INHERITANCE)
        new_acl = api.set_entries_in_acl((EXPLICIT_ACCESS_W * 1)(entry), dacl)
        try:
            api.set_security_info(desktop, SE_WINDOW_OBJECT, DACL_SECURITY_INFORMATION, new_acl, 0)
        finally:
            api.local_free(new_acl)
    finally:
        api.local_free(descriptor)


def _worker_desktop(api: Win32, sid: int | None) -> tuple[int, str]:
    """A new desktop for one worker, labelled Low as its token (and granted to its container where it has one):
    its handle, closed by the caller once the worker exits, and its ``<station>\\<name>`` for ``lpDesktop``.

    ``DesktopUnavailableError`` when any step fails, the desktop closed first.
    """
    desktop = 0
    try:
        station = api.window_station_name()
        name = desktop_name()
        desktop = api.create_desktop(name, DESKTOP_ACCESS)
        low = api.string_sid_to_sid(LOW_INTEGRITY_SID)
        try:
            sacl = api.new_label_acl(low, NO_INHERITANCE, SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)
            api.set_security_info(desktop, SE_WINDOW_OBJECT, LABEL_SECURITY_INFORMATION, 0, ctypes.addressof(sacl))
        finally:
            api.local_free(low)
        if sid is not None:
            _grant_desktop(api, sid, desktop)
    except OSError as exc:
        if desktop:
            api.close_desktop(desktop)
        raise DesktopUnavailableError(exc) from exc
    return desktop, f"{station}\\{name}"


def _startup(std: StdHandles, attributes: ctypes.Array[ctypes.c_char], desktop: ctypes.Array[ctypes.c_wchar],
             ) -> STARTUPINFOEXW:  # fmt: skip
    startup = STARTUPINFOEXW()
    startup.StartupInfo.cb = ctypes.sizeof(STARTUPINFOEXW)
    startup.StartupInfo.lpDesktop = ctypes.addressof(desktop)  # alive in the caller until CreateProcess returns
    startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES
    startup.StartupInfo.hStdInput, startup.StartupInfo.hStdOutput, startup.StartupInfo.hStdError = std
    startup.lpAttributeList = ctypes.addressof(attributes)
    return startup


def environment_block(env: dict[str, str]) -> str:
    """``K=V\\0...\\0\\0``, sorted without regard to case as Windows expects."""
    return "".join(f"{k}={v}\0" for k, v in sorted(env.items(), key=lambda kv: kv[0].upper())) + "\0"


def _launch(api: Win32, argv: Sequence[str], env: dict[str, str], cwd: str, std: StdHandles, *,
            sid: int | None, token: int | None, layer_name: str, desktop: str, mitigations: int,
            capability: int | None = None) -> Started:
    """Attribute list, suspended start, job, resume; on any failure the started process is terminated.

    ``mitigations``: the PROCESS_CREATION_MITIGATION_POLICY_* bits, one DWORD64 attribute (none when 0).
    """
    handles = list(dict.fromkeys(std))  # the handle list refuses duplicates
    for handle in handles:
        api.make_inheritable(handle)
    inherit = (ctypes.c_void_p * len(handles))(*handles)
    # The install capability alone: it opens the bundle (granted at install time), and nothing else.
    granted = (SID_AND_ATTRIBUTES * 1)(SID_AND_ATTRIBUTES(capability, SE_GROUP_ENABLED))
    capabilities = SECURITY_CAPABILITIES(sid, granted if capability else None, 1 if capability else 0, 0)
    opt_out = ctypes.c_uint32(PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT)
    no_children = ctypes.c_uint32(PROCESS_CREATION_CHILD_PROCESS_RESTRICTED)
    mitigation_policy = ctypes.c_uint64(mitigations)  # a DWORD64: UpdateProcThreadAttribute is told 8 bytes
    desktop_path = ctypes.create_unicode_buffer(desktop)
    # One slot per attribute set below: the list is sized for exactly these.
    attributes = api.initialize_attribute_list((4 if sid else 2) + (1 if mitigations else 0))
    info, job = None, 0
    try:
        if sid:
            api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES, capabilities)
            # Windows before 10 1703 has no such attribute: the container then keeps ALL APPLICATION PACKAGES.
            with contextlib.suppress(OSError):
                api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY, opt_out)
        # Before Windows 10 1709 there is no such policy: the worker then reports ``no-child-process`` not applied.
        with contextlib.suppress(OSError):
            api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY, no_children)
        if mitigations:  # asked for and known to this Windows: a failure here is a failed start, never ignored
            api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_MITIGATION_POLICY, mitigation_policy)
        api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit)
        info = api.create_process(token, argv[0], subprocess.list2cmdline(argv), flags=START_FLAGS,
                                  environment=environment_block(env), cwd=cwd,
                                  startup=_startup(std, attributes, desktop_path))  # fmt: skip
        job = api.create_job()
        api.set_limits(job, job_limits())
        api.set_ui_limits(job, UI_LIMITS)
        api.assign(job, info.hProcess)
        api.resume_thread(info.hThread)
    except BaseException:
        if info is not None:
            api.terminate(info.hProcess, 1)
            api.close(info.hProcess)
        if job:
            api.close(job)
        raise
    finally:
        if info is not None:
            api.close(info.hThread)
        api.delete_attribute_list(attributes)
    return Started(int(info.hProcess), int(info.dwProcessId), job, layer_name)


def _label_low(api: Win32, tmp_dir: str) -> None:
    """``tmp_dir`` labelled Low integrity, no-write-up, inherited by what the worker creates there."""
    low = api.string_sid_to_sid(LOW_INTEGRITY_SID)
    try:
        sacl = api.new_label_acl(low, SUB_CONTAINERS_AND_OBJECTS_INHERIT, SYSTEM_MANDATORY_LABEL_NO_WRITE_UP)
        api.set_named_security_info(tmp_dir, LABEL_SECURITY_INFORMATION, 0, ctypes.addressof(sacl))
    finally:
        api.local_free(low)


def _restricted_token(api: Win32) -> int:
    """This process's token without its privileges, at low integrity. The caller closes it."""
    own = api.open_process_token(TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT)
    try:
        token = api.create_restricted_token(own, DISABLE_MAX_PRIVILEGE)
    finally:
        api.close(own)
    try:
        low = api.string_sid_to_sid(LOW_INTEGRITY_SID)
        try:
            label = TOKEN_MANDATORY_LABEL()
            label.Label.Sid, label.Label.Attributes = low, SE_GROUP_INTEGRITY
            api.set_token_information(token, TOKEN_INTEGRITY_LEVEL, label,
                                      ctypes.sizeof(label) + api.sid_length(low))  # fmt: skip
        finally:
            api.local_free(low)
    except BaseException:
        api.close(token)
        raise
    return token


def _mitigations(win32k_lockdown: bool, os_build: Callable[[], int]) -> int:
    """The mitigation bits to ask for: win32k lockdown where asked and where this Windows has it (the build is read
    only then); the worker's read-back says whether it holds."""
    if win32k_lockdown and os_build() >= WIN32K_LOCKDOWN_MIN_BUILD:
        return WIN32K_SYSTEM_CALL_DISABLE_ALWAYS_ON
    return 0


def _on_own_desktop(api: Win32, sid: int | None, launch: Callable[[str], Started]) -> Started:
    """``launch`` on a new desktop; the desktop closed when the start fails, else handed over in ``Started``."""
    desktop, path = _worker_desktop(api, sid)
    try:
        started = launch(path)
    except BaseException:
        api.close_desktop(desktop)
        raise
    return started._replace(desktop=desktop)


def start_worker(api: Win32, argv: Sequence[str], env: dict[str, str], cwd: str, *, std: StdHandles,
                 read_roots: Sequence[str], tmp_dir: str, win32k_lockdown: bool = False,
                 os_build: Callable[[], int] | None = None) -> Started:
    """Start the worker in its AppContainer, or under the restricted token where none can be created.

    ``InstallGrantMissingError`` (an ``OSError``) when a folder of ``read_roots`` does not grant the install
    capability: checked before anything is written or started. ``DesktopUnavailableError`` when its desktop
    cannot be made. ``win32k_lockdown``: the named option (module docstring).
    """
    mitigations = _mitigations(win32k_lockdown, os_build or windows_build)
    sid = _appcontainer_sid(api, container_name(argv[0]))
    if sid is not None:
        try:
            capability = api.string_sid_to_sid(capability_sid(INSTALL_CAPABILITY))
            try:
                for root in read_roots:
                    why = missing_grant(api, capability, root)
                    if why is not None:
                        raise InstallGrantMissingError(root, why)
                _grant(api, sid, tmp_dir, FILE_TMP_ACCESS)
                _label_low(api, tmp_dir)
                return _on_own_desktop(api, sid, lambda desktop: _launch(
                    api, argv, env, cwd, std, sid=sid, token=None, layer_name="appcontainer", desktop=desktop,
                    mitigations=mitigations, capability=capability))
            finally:
                api.local_free(capability)
        finally:
            api.free_sid(sid)
    # The restricted token reads what the user reads: no install grant to check, only its folder to label.
    _label_low(api, tmp_dir)
    token = _restricted_token(api)
    try:
        return _on_own_desktop(api, None, lambda desktop: _launch(
            api, argv, env, cwd, std, sid=None, token=token, layer_name="restricted-token", desktop=desktop,
            mitigations=mitigations))
    finally:
        api.close(token)


# -- worker side: what this process's job and token say ------------------------------------------------


def _job_layer(k32: Any) -> Layer:
    info, ui, got = ExtendedLimits(), JOBOBJECT_BASIC_UI_RESTRICTIONS(), ctypes.c_uint32(0)
    ok = k32.QueryInformationJobObject(None, JOB_OBJECT_EXTENDED_LIMIT_INFORMATION, ctypes.byref(info),
                                       ctypes.sizeof(info), ctypes.byref(got))  # fmt: skip
    if not ok:
        return layer("job-object", applied=False, detail="not in a job")
    ui_ok = k32.QueryInformationJobObject(None, JOB_OBJECT_BASIC_UI_RESTRICTIONS, ctypes.byref(ui),
                                          ctypes.sizeof(ui), ctypes.byref(got))  # fmt: skip
    flags, active = info.BasicLimitInformation.LimitFlags, info.BasicLimitInformation.ActiveProcessLimit
    ui_flags = ui.UIRestrictionsClass if ui_ok else 0
    held = flags & JOB_LIMIT_FLAGS == JOB_LIMIT_FLAGS and active == 1 and ui_flags & UI_LIMITS == UI_LIMITS
    ui_text = f"ui limits {ui_flags:#x}" if ui_ok else "ui limits not readable"
    return layer("job-object", applied=held, detail=f"limit flags {flags:#x}, active processes {active}, {ui_text}")


def _integrity_rid(api: Win32, token: int) -> int:
    answer = api.get_token_information(token, TOKEN_INTEGRITY_LEVEL)
    label = TOKEN_MANDATORY_LABEL.from_buffer(answer)  # its SID points into ``answer``, alive until we return
    return api.sid_last_rid(int(label.Label.Sid or 0)) if label.Label.Sid else -1


def _token_layers(api: Win32) -> list[Layer]:
    token = api.open_process_token(TOKEN_QUERY)
    try:
        is_container = ctypes.c_uint32.from_buffer(api.get_token_information(token, TOKEN_IS_APP_CONTAINER)).value
        rid = _integrity_rid(api, token)
        sid_text = ""
        if is_container:
            answer = api.get_token_information(token, TOKEN_APP_CONTAINER_SID)  # TOKEN_APPCONTAINER_INFORMATION
            sid_text = api.sid_to_string(int(ctypes.c_void_p.from_buffer(answer).value or 0))
    finally:
        api.close(token)
    low = 0 <= rid <= SECURITY_MANDATORY_LOW_RID
    integrity = f"integrity RID {rid:#x}"
    return [
        layer("appcontainer", applied=bool(is_container) and sid_text.startswith("S-1-15-2-"),
              detail=f"{sid_text}, {integrity}" if is_container else f"not an AppContainer token, {integrity}"),
        layer("restricted-token", applied=low, detail=f"{integrity} ({'low' if low else 'not low'})"),
    ]  # fmt: skip


def _child_process_layer(api: Win32) -> Layer:
    flags = api.process_mitigation_flags(PROCESS_CHILD_PROCESS_POLICY)
    held = bool(flags & NO_CHILD_PROCESS_CREATION)
    return layer("no-child-process", applied=held, detail=f"child process policy flags {flags:#x}")


def _win32k_layer(api: Win32) -> Layer:
    try:
        flags = api.process_mitigation_flags(PROCESS_SYSTEM_CALL_DISABLE_POLICY)
    except OSError as exc:  # Windows 7 has no such policy to read: not applied, and said so
        return layer(WIN32K_LAYER, applied=False, detail=f"policy not readable: {exc.__class__.__name__}")
    held = bool(flags & DISALLOW_WIN32K_SYSTEM_CALLS)
    return layer(WIN32K_LAYER, applied=held, detail=f"system call disable policy flags {flags:#x}")


def self_report(k32: Any = None, api_factory: Callable[[], Win32] = Win32) -> list[Layer]:
    """The job's limits, the child-process policy, the token's AppContainer SID and integrity, and win32k
    lockdown, as this process reads them back."""
    try:
        api = api_factory()
        lib = k32 if k32 is not None else api.k32  # its functions carry their C signatures
    except (OSError, AttributeError):
        return [layer(name, applied=False, detail="kernel32 not loadable") for name in (*WINDOWS_LAYERS, WIN32K_LAYER)]
    try:
        child = _child_process_layer(api)
    except OSError as exc:
        child = layer("no-child-process", applied=False, detail=f"policy not readable: {exc.__class__.__name__}")
    try:
        tokens = _token_layers(api)
    except OSError as exc:
        why = f"token not readable: {exc.__class__.__name__}"
        tokens = [layer("appcontainer", applied=False, detail=why), layer("restricted-token", applied=False,
                                                                           detail=why)]  # fmt: skip
    return [_job_layer(lib), child, *tokens, _win32k_layer(api)]
