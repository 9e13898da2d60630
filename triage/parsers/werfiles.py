"""Windows Error Reporting's own files: a ``Report.wer`` and Event Viewer's XML view of an Application Error.

Users who find no log send what Windows kept of the crash: the ``Report.wer`` of the
``ReportArchive`` folder, or the event copied from Event Viewer's Details tab in XML::

    Sig[3].Name=Fault Module Name                  <Data Name="ModuleName">amdhip64_6.dll</Data>
    Sig[3].Value=amdhip64_6.dll                    <Data Name="ModuleVersion">6.2.41512.0</Data>
    Sig[6].Name=Exception Code                     <Data Name="ExceptionCode">c0000005</Data>
    Sig[6].Value=c0000005                          <Data Name="FaultingOffset">00000000000a2b3c</Data>
    LoadedModule[41]=C:\\Windows\\SYSTEM32\\amdhip64_6.dll

Older XML leaves the ``Data`` elements unnamed; in an Application Error event (1000) their order is
fixed (application, its version and time stamp, module, its version and time stamp, exception code,
offset, ...), so they are read by position there only. The facts are those of the text records in
parsers/windows.py: ``faulting_module``, ``exception_code``, ``fault_offset``, the module's version
(the HIP runtime's as ``hip_version_runtime``), and each path a HIP runtime DLL was loaded from as
``hip_library_path``.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles
from triage.parsers.windows import CRASH_LABELS, is_hip_release, module_name

_SIG = lazy(r"^\s*Sig\[(?P<n>\d{1,2})\]\.(?P<part>Name|Value)=(?P<v>[^\r\n]{0,300})$")
_LOADED = lazy(r"^\s*LoadedModule\[\d{1,4}\]=(?P<p>[^\r\n]{1,400}[\\/](?i:amdhip64)[\w.-]*\.(?i:dll))\s*$")
_DATA = lazy(r"<(?i:data)(?: (?i:name)=\"(?P<name>\w{1,40})\")?>(?P<v>[^<]{0,400})</(?i:data)>")
_APPLICATION_ERROR = lazy(r"(?i)<Provider Name=\"Application Error\"")

# Report.wer's signature names (Windows localises them as it does the Event Viewer record's labels, whose table
# parsers/windows.py keeps) and the XML's element names, each to what it says.
_FIELDS = {
    **{name.lower(): kind for kind, names in CRASH_LABELS.items() for name in names},
    "modulename": "module", "fault module version": "version", "version des fehlerhaften moduls": "version",
    "moduleversion": "version", "exceptioncode": "code", "ausnahmeoffset": "offset", "faultingoffset": "offset",
    "modulepath": "path",
}
# Event 1000's unnamed Data elements, in order.
_POSITIONS = ("app", "app_version", "app_time", "module", "version", "module_time", "code", "offset", "pid",
              "start_time", "app_path", "path")

_NEEDLES = Needles(_SIG, _LOADED, _DATA)


def parse(artifact: Artifact, case: Case) -> None:
    """Add the crash facts of the WER report and Event Viewer XML records in the artifact."""
    names: dict[str, str] = {}
    fields: dict[str, tuple[str, Where, str]] = {}
    unnamed: list[tuple[str, Where, str]] = []
    for _, where, text in _NEEDLES.readable_lines(artifact):
        quoted = text.strip()
        if m := _SIG.match(text):
            if m["part"] == "Name":
                names[m["n"]] = m["v"].strip().lower()
            elif (kind := _FIELDS.get(names.get(m["n"], ""))) and kind not in fields:
                fields[kind] = (m["v"].strip(), where, quoted)
        elif m := _LOADED.match(text):
            case.add_fact("hip_library_path", m["p"].strip(), where, quoted, 60)
            case.claim(where, "module-list")
        else:
            for m in _DATA.finditer(text):
                if m["name"] is None:
                    unnamed.append((m["v"].strip(), where, quoted))
                elif (kind := _FIELDS.get(m["name"].lower())) and kind not in fields:
                    fields[kind] = (m["v"].strip(), where, quoted)
    if not fields and unnamed and any(_APPLICATION_ERROR.search(line) for line in artifact.lines[:40]):
        fields = {kind: value for kind, value in zip(_POSITIONS, unnamed) if kind in _FIELDS.values()}
    _facts(fields, case)


def _facts(fields: dict[str, tuple[str, Where, str]], case: Case) -> None:
    module = fields.get("module")
    code = fields.get("code")
    if module is None and code is None:
        return
    for value, where, quoted in (v for v in (module, code) if v):
        case.claim(where, "exception", "fault")
        case.add_fact("os", "windows", where, quoted, 20)
    if code and _hex(code[0], 8):
        case.add_fact("exception_code", f"0x{code[0].lower().removeprefix('0x').upper()}", code[1], code[2], 85)
    if module and module[0] and not module[0].lower().startswith("stackhash"):  # StackHash_N: no module was known
        name = module_name(module[0])
        case.add_fact("faulting_module", name, module[1], module[2], 80)
        if (version := fields.get("version")) and version[0]:
            case.add_fact(f"module_version:{name.lower()}", version[0], version[1], version[2], 80)
            if is_hip_release(name, version[0]):
                case.add_fact("hip_version_runtime", version[0], version[1], version[2], 80)
        if (path := fields.get("path")) and name.lower().startswith("amdhip64"):
            case.add_fact("hip_library_path", path[0], path[1], path[2], 60)
    if (offset := fields.get("offset")) and _hex(offset[0], 16):
        case.add_fact("fault_offset", f"0x{offset[0].lower().removeprefix('0x')}", offset[1], offset[2], 80)


def _hex(value: str, most: int) -> bool:
    digits = value.lower().removeprefix("0x")
    return 0 < len(digits) <= most and all(c in "0123456789abcdef" for c in digits)
