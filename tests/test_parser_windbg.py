"""WinDbg's ``!analyze -v`` report (triage/parsers/windbg.py).

tests/data/windbg/funasr-analyze-context-exr.txt is the analysis as posted in
modelscope/FunASR#3479 (its CONTEXT and EXCEPTION_RECORD); the bucket ids are the ones
FanControl.Releases#4056 and Ponce#128 were titled with. The ROCm report below keeps
!analyze's real field formats with amdhip64 as the faulting DLL.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "windbg"

HIP_ANALYSIS = """\
FAULTING_IP:
amdhip64_7!hipModuleLoad+33
00007ffe`f984a7fe 488b01          mov     rax,qword ptr [rcx]

EXCEPTION_RECORD:  (.exr -1)
ExceptionAddress: 00007ffef984a7fe (amdhip64_7!hipModuleLoad+0x0000000000000033)
   ExceptionCode: c0000005 (Access violation)
  ExceptionFlags: 00000000
NumberParameters: 2
   Parameter[0]: 0000000000000000
   Parameter[1]: 0000000000000010
Attempt to read from address 0000000000000010

PROCESS_NAME:  python.exe

READ_ADDRESS:  0000000000000010

EXCEPTION_CODE_STR:  c0000005

STACK_TEXT:
000000a3`017aeab0 00007ffe`f9812345     : 00000000`00000000 00000235`601dc8e0 00000000`00000001 000000a3`017aed30 : amdhip64_7!hipModuleLoad+0x33
000000a3`017aeb20 00007ffe`3a4b1c2d     : 00000235`601dc8e0 00000000`00000000 00000000`00000000 00000000`00000000 : amdhip64_7+0x812345
000000a3`017aeb90 00007fff`38517374     : 00000000`00000000 00000000`00000000 00000000`00000000 00000000`00000000 : torch_hip!at::cuda::getCurrentCUDAStream+0x1d
000000a3`017aebc0 00000000`00000000     : 00000000`00000000 00000000`00000000 00000000`00000000 00000000`00000000 : KERNEL32!BaseThreadInitThunk+0x14


SYMBOL_NAME:  amdhip64_7!hipModuleLoad+33

MODULE_NAME: amdhip64_7

IMAGE_NAME:  amdhip64_7.dll

FAILURE_BUCKET_ID:  INVALID_POINTER_READ_c0000005_amdhip64_7.dll!hipModuleLoad
"""


def _case(text: str):
    return parse([Artifact(name="analyze.txt", text=text, size=len(text))])


def test_context_instruction_gives_the_data_address_and_the_record_the_faulting_module() -> None:
    case = triage([str(DATA / "funasr-analyze-context-exr.txt")]).case
    [stack] = [s for s in case.stacks if s.form == "windbg"]
    assert stack.crashing and len(stack.frames) == 1
    top = stack.frames[0]
    assert top.module == "llama_funasr_sensevoice" and top.offset == 0x2DFDE3 and top.address == 0x7FF71EBFFDE3
    fault = case.fault
    assert fault.kind == "exception" and fault.code == "0xC0000005"
    assert fault.module == "llama_funasr_sensevoice" and fault.offset == 0x2DFDE3
    assert fault.address == 0x60  # from "ds:00000000`00000060=": the operand the mov read
    assert case.fact("os").value == "windows"


def test_stack_text_is_the_crashing_stack_with_exports_as_symbols() -> None:
    case = _case(HIP_ANALYSIS)
    [stack] = case.stacks
    assert stack.form == "windbg" and stack.crashing
    assert [f.module for f in stack.frames] == ["amdhip64_7", "amdhip64_7", "torch_hip", "KERNEL32"]
    top, second = stack.frames[:2]
    assert top.symbol == "hipModuleLoad" and top.symbol_offset == 0x33 and top.symbol_source == "nearest-export"
    assert second.symbol is None and second.offset == 0x812345
    assert stack.frames[2].symbol == "at::cuda::getCurrentCUDAStream"
    assert case.fault.module == "amdhip64_7" and case.fault.address == 0x10 and case.fault.access == "read"


def test_image_process_and_bucket_facts() -> None:
    case = _case(HIP_ANALYSIS)
    assert case.fact("faulting_module").value == "amdhip64_7.dll"
    assert case.fact("program").value == "python.exe"
    assert {f.value for f in case.facts["exception_code"]} == {"0xC0000005"}


def test_a_bucket_id_alone_names_module_and_code_when_another_field_is_there() -> None:
    case = _case("MODULE_NAME: amdadlx64\n\nFAILURE_BUCKET_ID:  INVALID_POINTER_READ_c0000005_amdadlx64.dll!Unknown\n")
    assert {f.value for f in case.facts["faulting_module"]} == {"amdadlx64", "amdadlx64.dll"}
    assert case.fact("exception_code").value == "0xC0000005"
    nx = _case("PROCESS_NAME:  ida64.exe\nFAILURE_BUCKET_ID:  SOFTWARE_NX_FAULT_c0000005_Ponce64.dll!Unknown\n")
    assert nx.fact("faulting_module").value == "Ponce64.dll"


def test_a_stray_label_is_not_an_analysis() -> None:
    case = _case("MODULE_NAME: amdhip64\nthe build printed this\n")
    assert case.fact("faulting_module") is None and case.fact("os") is None


def test_a_null_call_site_is_frame_0_at_address_0() -> None:
    text = HIP_ANALYSIS.replace(": amdhip64_7!hipModuleLoad+0x33\n", ": 0x0\n", 1)
    [stack] = _case(text).stacks
    assert stack.frames[0].address == 0 and stack.frames[0].module is None
    assert stack.frames[1].module == "amdhip64_7"


def test_the_frames_reach_the_signatures_a_crash_in_hipmoduleload_and_one_elsewhere_in_amdhip64(tmp_path: Path) -> None:
    path = tmp_path / "analyze.txt"
    path.write_text(HIP_ANALYSIS)
    assert triage([str(path)]).diagnoses[0].id == "hip-module-load-access-violation"
    path.write_text(HIP_ANALYSIS.replace("hipModuleLoad", "hipMemcpyAsync"))
    top = triage([str(path)]).diagnoses[0]
    assert top.klass == "runtime-crash" and top.confidence >= 0.8
