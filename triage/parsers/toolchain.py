"""What the HIP compiler reported about the ROCm it uses: its root, and whether the device-library bitcode is there.

A build that cannot find the device libraries (``cannot find ROCm device library``) is usually a compiler looking
in another ROCm than the one installed. The compiler and hipconfig say which one they use; ``ls`` says what is there.
Lines read (programs' output only, not a user's sentence)::

    Found HIP installation: /opt/rocm-6.1.0, version 6.1.40091          clang -v (clang's AMDGPU driver)
    ... "--rocm-path=/opt/rocm-6.1.0" ...                                 a compile command hipcc or CMake printed
    ... "-resource-dir" "/opt/rocm-6.1.0/lib/llvm/lib/clang/17" ...       clang -### / -v: the root is above lib/llvm
    HIP_PATH           :/opt/rocm-6.2.0                                   hipconfig (its ROCM_PATH too)
    $ ls /opt/rocm/amdgcn/bitcode                                        a listing of the bitcode folder, then its
    ockl.bc  ocml.bc  oclc_isa_version_1030.bc ...                        files (or no *.bc)
    ls: cannot access '/opt/rocm/amdgcn/bitcode': No such file or directory
    /opt/rocm-5.6.0/amdgcn/bitcode/ocml.bc                                find's output, a link command's argument

Facts: ``hipcc_rocm_root`` (a path; best first: clang's own line, a command's --rocm-path, hipconfig, the resource
dir), ``bitcode_dir`` (the folder) and ``bitcode_dir_present`` (``yes``/``no``).
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles

_FOUND_HIP = lazy(r"^\s*Found HIP installation: (?P<p>[^,\s][^,]*?),? version (?P<v>\d[\w.-]*)")
_PATH = r"(?P<p>(?:[A-Za-z]:)?[\\/~.$][^\s\"',;]*)"  # a path, not the next word of a sentence ("--rocm-path or ...")
_ROCM_PATH_FLAG = lazy(r"(?:^|[\s\"'])--rocm-path[= ]\"?" + _PATH)
_RESOURCE_DIR = lazy(r"(?:^|[\s\"'])-resource-dir\"?[= ]\"?" + _PATH)
_ROOT_OF_RESOURCE = lazy(r"^(?P<root>.+?)[\\/](?:lib[\\/])?(?:llvm[\\/])?lib[\\/]clang[\\/]\d+(?:\.\d+)*[\\/]?$")
_HIPCONFIG = lazy(r"^\s*(?P<k>HIP_PATH|ROCM_PATH)\s+:\s*(?P<p>[^\s:][^\s]*)\s*$")
# (The folder is tried from a word's start only: tried from each character of a long word, the greedy run to the word's
# end and back cost seconds on a line of repeated folder names.)
_BITCODE_DIR = r"(?<![^\s'\"`=(])(?P<d>[^\s'\"`]*amdgcn[\\/]+bitcode)"
_LS_BITCODE = lazy(r"^\s*(?:\S*[$#>]\s*)?(?:ls|dir|find)\b[^\n]*?\s" + _BITCODE_DIR + r"[\\/]?(?:\s|$)")
_NO_BITCODE = lazy(r"(?:ls|find|dir): (?:cannot access )?['\"]?" + _BITCODE_DIR
                   + r"[\\/]?['\"]?: No such file or directory|File Not Found")
_BITCODE_FILE = lazy(_BITCODE_DIR + r"[\\/]+[\w.-]+\.bc\b")
_FAILED = lazy(r"No such file|not found|cannot (?:open|find|access)|could not|ENOENT|missing")
_BC_NAME = lazy(r"(?<![\w.-])[\w.-]+\.bc(?![\w.])")

_NEEDLES = Needles(_FOUND_HIP, r"--rocm-path[= ]", r"-resource-dir", _HIPCONFIG, r"amdgcn[\\/]+bitcode")
LISTING_LINES = 60  # lines read after an ls of the bitcode folder


def root_of_resource_dir(path: str) -> str | None:
    """The ROCm root above clang's resource dir (``/opt/rocm-6.1.0/lib/llvm/lib/clang/17`` -> ``/opt/rocm-6.1.0``),
    only for a ROCm clang (a distribution's ``/usr/lib/llvm-17/lib/clang/17`` names no ROCm)."""
    m = _ROOT_OF_RESOURCE.match(path)
    return m["root"] if m and "rocm" in m["root"].lower() else None


def parse(artifact: Artifact, case: Case) -> None:
    """Add hipcc_rocm_root, bitcode_dir and bitcode_dir_present from the artifact's machine lines."""
    for where, text in _NEEDLES.machine_lines(artifact, case):
        quoted = text.strip()
        if m := _FOUND_HIP.match(text):
            case.add_fact("hipcc_rocm_root", m["p"].strip(), where, quoted, 70)
            case.claim(where, "toolchain")
            continue
        if m := _ROCM_PATH_FLAG.search(text):
            case.add_fact("hipcc_rocm_root", m["p"], where, quoted, 60)
        if m := _HIPCONFIG.match(text):
            case.add_fact("hipcc_rocm_root", m["p"], where, quoted, 55 if m["k"] == "ROCM_PATH" else 50)
        if (m := _RESOURCE_DIR.search(text)) and (root := root_of_resource_dir(m["p"])):
            case.add_fact("hipcc_rocm_root", root, where, quoted, 45)
        if "bitcode" in text:
            _bitcode(artifact, where, text, case)


def _bitcode(artifact: Artifact, where: Where, text: str, case: Case) -> None:
    quoted = text.strip()
    if m := _NO_BITCODE.search(text):
        if m["d"]:
            _present(case, m["d"], "no", where, quoted, 60)
        return
    if m := _LS_BITCODE.match(text):
        found = _listed(artifact, where.line)  # where.line is the index of the line after the command
        if found is not None:
            _present(case, m["d"], "yes" if found else "no", where, quoted, 60)
        return
    if (m := _BITCODE_FILE.search(text)) and not _FAILED.search(text):
        _present(case, m["d"], "yes", where, quoted, 40)


def _listed(artifact: Artifact, start: int) -> bool | None:
    """Whether the listing after an ``ls`` of the bitcode folder names a ``.bc`` file (None: nothing listed)."""
    seen = False
    for text in artifact.lines[start:start + LISTING_LINES]:
        line = text.strip()
        if not line or line.startswith(("$", "#", ">", "PS ")) or ": " in line and not line.startswith("total"):
            break
        if _BC_NAME.search(line):
            return True
        seen = True
    return False if seen else None


def _present(case: Case, folder: str, value: str, where: Where, quoted: str, score: int) -> None:
    case.add_fact("bitcode_dir", folder.rstrip("/\\"), where, quoted, score)
    case.add_fact("bitcode_dir_present", value, where, quoted, score)
    case.claim(where, "listing", "listing")
