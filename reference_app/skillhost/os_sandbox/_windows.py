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
4. an attribute list with ``SECURITY_CAPABILITIES`` (that SID, and the install
   capability alone),
   ``ALL_APPLICATION_PACKAGES_POLICY`` (opt out of ALL APPLICATION PACKAGES,
   where Windows knows it), ``CHILD_PROCESS_POLICY`` (the worker may create no
   process at all, as Chromium's renderers) and ``HANDLE_LIST`` (the three
   standard handles: the only handles the worker inherits);
5. ``CreateProcessW`` suspended; the process is assigned to a job (kill on close,
   one active process, 1 GiB, every ``JOB_OBJECT_UILIMIT_*``), then its thread is resumed.

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
import subprocess
from collections.abc import Callable, Sequence
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
    DISABLE_MAX_PRIVILEGE,
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
    PROC_THREAD_ATTRIBUTE_ALL_APPLICATION_PACKAGES_POLICY,
    PROC_THREAD_ATTRIBUTE_CHILD_PROCESS_POLICY,
    PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
    PROC_THREAD_ATTRIBUTE_SECURITY_CAPABILITIES,
    PROCESS_CHILD_PROCESS_POLICY,
    PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT,
    PROCESS_CREATION_CHILD_PROCESS_RESTRICTED,
    SE_GROUP_ENABLED,
    SE_GROUP_INTEGRITY,
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
    ExtendedLimits,
    job_limits,
)  # fmt: skip

__all__ = ["WINDOWS_LAYERS", "Started", "container_name", "self_report", "start_worker"]

WINDOWS_LAYERS = ("job-object", "no-child-process", "appcontainer", "restricted-token")
START_FLAGS = (EXTENDED_STARTUPINFO_PRESENT | CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT
               | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW)  # fmt: skip
StdHandles = tuple[int, int, int]


class Started(NamedTuple):
    """A resumed worker: its process handle, pid and job handle (both closed by ``release``), and its layer."""

    process: int
    pid: int
    job: int
    layer: str


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


def _explicit_access(sid: int, access: int) -> EXPLICIT_ACCESS_W:
    entry = EXPLICIT_ACCESS_W()
    entry.grfAccessPermissions = access
    entry.grfAccessMode = GRANT_ACCESS
    entry.grfInheritance = SUB_CONTAINERS_AND_OBJECTS_INHERIT
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


def _startup(std: StdHandles, attributes: ctypes.Array[ctypes.c_char]) -> STARTUPINFOEXW:
    startup = STARTUPINFOEXW()
    startup.StartupInfo.cb = ctypes.sizeof(STARTUPINFOEXW)
    startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES
    startup.StartupInfo.hStdInput, startup.StartupInfo.hStdOutput, startup.StartupInfo.hStdError = std
    startup.lpAttributeList = ctypes.addressof(attributes)
    return startup


def environment_block(env: dict[str, str]) -> str:
    """``K=V\\0...\\0\\0``, sorted without regard to case as Windows expects."""
    return "".join(f"{k}={v}\0" for k, v in sorted(env.items(), key=lambda kv: kv[0].upper())) + "\0"


def _launch(api: Win32, argv: Sequence[str], env: dict[str, str], cwd: str, std: StdHandles, *,
            sid: int | None, token: int | None, layer_name: str, capability: int | None = None) -> Started:
    """Attribute list, suspended start, job, resume; on any failure the started process is terminated."""
    handles = list(dict.fromkeys(std))  # the handle list refuses duplicates
    for handle in handles:
        api.make_inheritable(handle)
    inherit = (ctypes.c_void_p * len(handles))(*handles)
    # The install capability alone: it opens the bundle (granted at install time), and nothing else.
    granted = (SID_AND_ATTRIBUTES * 1)(SID_AND_ATTRIBUTES(capability, SE_GROUP_ENABLED))
    capabilities = SECURITY_CAPABILITIES(sid, granted if capability else None, 1 if capability else 0, 0)
    opt_out = ctypes.c_uint32(PROCESS_CREATION_ALL_APPLICATION_PACKAGES_OPT_OUT)
    no_children = ctypes.c_uint32(PROCESS_CREATION_CHILD_PROCESS_RESTRICTED)
    attributes = api.initialize_attribute_list(4 if sid else 2)
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
        api.update_attribute(attributes, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherit)
        info = api.create_process(token, argv[0], subprocess.list2cmdline(argv), flags=START_FLAGS,
                                  environment=environment_block(env), cwd=cwd, startup=_startup(std, attributes))
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


def start_worker(api: Win32, argv: Sequence[str], env: dict[str, str], cwd: str, *, std: StdHandles,
                 read_roots: Sequence[str], tmp_dir: str) -> Started:
    """Start the worker in its AppContainer, or under the restricted token where none can be created.

    ``InstallGrantMissingError`` (an ``OSError``) when a folder of ``read_roots`` does not grant the install
    capability: checked before anything is written or started.
    """
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
                return _launch(api, argv, env, cwd, std, sid=sid, token=None, layer_name="appcontainer",
                               capability=capability)
            finally:
                api.local_free(capability)
        finally:
            api.free_sid(sid)
    # The restricted token reads what the user reads: no install grant to check, only its folder to label.
    _label_low(api, tmp_dir)
    token = _restricted_token(api)
    try:
        return _launch(api, argv, env, cwd, std, sid=None, token=token, layer_name="restricted-token")
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


def self_report(k32: Any = None, api_factory: Callable[[], Win32] = Win32) -> list[Layer]:
    """The job's limits, the child-process policy, and the token's AppContainer SID and integrity, as this
    process reads them back."""
    try:
        api = api_factory()
        lib = k32 if k32 is not None else api.k32  # its functions carry their C signatures
    except (OSError, AttributeError):
        return [layer(name, applied=False, detail="kernel32 not loadable") for name in WINDOWS_LAYERS]
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
    return [_job_layer(lib), child, *tokens]
