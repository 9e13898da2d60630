"""The ROCm root the HIP compiler reports and the device-library bitcode folder (triage/parsers/toolchain.py).

Fixtures in tests/data/toolchain/: hipconfig 1.4's output as posted in ROCm/hip#338, an llvm-link
command over /opt/rocm-5.6.0/amdgcn/bitcode from the design case
legacy-rocm-build-2985-hand-linked-so-unresolved-math-symbols-303, clang 13's "cannot find ROCm
device library" from hipcub-179-hipcc-broken-rocm-device-libs-not-installed. The clang -v lines
below are in the format clang's AMDGPU driver prints (clang/lib/Driver/ToolChains/AMDGPU.cpp), the
ls lines in coreutils' format.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse
from triage.parsers.toolchain import root_of_resource_dir
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "toolchain"

CLANG_V = """\
$ /opt/rocm/llvm/bin/clang++ -v -x hip foo.hip --offload-arch=gfx1030
InstalledDir: /opt/rocm-6.0.0/llvm/bin
Found HIP installation: /opt/rocm-6.0.0, version 6.0.32830
 "/opt/rocm-6.0.0/llvm/bin/clang-17" -cc1 -triple amdgcn-amd-amdhsa -emit-obj -resource-dir /opt/rocm-6.0.0/llvm/lib/clang/17 -mlink-builtin-bitcode /opt/rocm-6.0.0/amdgcn/bitcode/ocml.bc -o foo.o
"""

LISTINGS = """\
$ ls /opt/rocm/amdgcn/bitcode
asanrtl.bc  ockl.bc  oclc_abi_version_400.bc  ocml.bc
$ ls /usr/lib/amdgcn/bitcode
ls: cannot access '/usr/lib/amdgcn/bitcode': No such file or directory
"""


def _case(text: str):
    return parse([Artifact(name="log.txt", text=text, size=len(text))])


def _facts(case, name: str) -> list[tuple[str, int]]:
    return [(f.value, f.where.line) for f in case.facts.get(name, [])]


def test_hipconfig_reports_its_hip_path() -> None:
    case = triage([str(DATA / "hipconfig-1.4.txt")]).case
    assert case.value("hipcc_rocm_root") == "/opt/rocm/hip/bin"


def test_clang_v_found_hip_installation_outranks_the_resource_dir_and_links_the_bitcode() -> None:
    case = _case(CLANG_V)
    assert _facts(case, "hipcc_rocm_root") == [("/opt/rocm-6.0.0", 3), ("/opt/rocm-6.0.0", 4)]
    assert case.fact("hipcc_rocm_root").where.line == 3
    assert case.value("bitcode_dir_present") == "yes" and case.value("bitcode_dir") == "/opt/rocm-6.0.0/amdgcn/bitcode"


def test_a_link_command_over_the_bitcode_files_shows_the_folder_present() -> None:
    case = triage([str(DATA / "llvm-link-device-libs.txt")]).case
    assert case.value("bitcode_dir_present") == "yes" and case.value("bitcode_dir") == "/opt/rocm-5.6.0/amdgcn/bitcode"


def test_clangs_advice_to_pass_rocm_path_names_no_root() -> None:
    case = triage([str(DATA / "clang13-cannot-find-device-library.txt")]).case
    assert case.fact("hipcc_rocm_root") is None and case.fact("bitcode_dir_present") is None


def test_ls_of_the_folder_with_bc_files_and_ls_of_a_missing_one() -> None:
    case = _case(LISTINGS)
    assert _facts(case, "bitcode_dir_present") == [("yes", 1), ("no", 4)]
    assert _facts(case, "bitcode_dir") == [("/opt/rocm/amdgcn/bitcode", 1), ("/usr/lib/amdgcn/bitcode", 4)]


def test_an_ls_listing_without_bc_files_is_an_empty_bitcode_folder() -> None:
    case = _case("$ ls /opt/rocm/amdgcn/bitcode\nREADME.md  old/\n")
    assert case.value("bitcode_dir_present") == "no"


def test_a_user_sentence_naming_a_rocm_path_is_no_fact() -> None:
    case = _case("I think the compiler should use --rocm-path=/opt/rocm-6.1.0 because that is where I installed it\n")
    assert case.fact("hipcc_rocm_root") is None


def test_resource_dir_roots() -> None:
    assert root_of_resource_dir("/opt/rocm-6.1.0/lib/llvm/lib/clang/17") == "/opt/rocm-6.1.0"
    assert root_of_resource_dir("/opt/rocm/llvm/lib/clang/17.0.0") == "/opt/rocm"
    assert root_of_resource_dir(r"C:\Program Files\AMD\ROCm\6.1\lib\clang\19") == r"C:\Program Files\AMD\ROCm\6.1"
    assert root_of_resource_dir("/usr/lib/llvm-17/lib/clang/17") is None



def test_rocm_path_from_the_environment_when_nothing_printed_names_a_root(tmp_path: Path) -> None:
    def run(text: str):
        path = tmp_path / "log.txt"
        path.write_text(text)
        return triage([str(path)]).case

    assert run("$ env | grep ROCM\nROCM_PATH=/opt/rocm-6.2.0/\n").value("hipcc_rocm_root") == "/opt/rocm-6.2.0"
    printed = run("ROCM_PATH=/opt/rocm-6.2.0\n" + CLANG_V)
    assert printed.value("hipcc_rocm_root") == "/opt/rocm-6.0.0"  # clang's own line outranks the environment
    said = run("I set ROCM_PATH=/opt/rocm-6.2.0 as the guide says but it still fails with this error again\n")
    assert said.fact("hipcc_rocm_root") is None
