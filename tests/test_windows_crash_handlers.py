"""Windows crash handlers that print a module's load address beside each frame: PyTorch's handler (``PATH(BASE) +
0xOFF byte(s), symbol() + 0xOFF byte(s)``, with or without the frame's address) and Blender's crash log (``module
:0xADDRESS symbol`` frames and a ``Loaded Modules`` list whose bases give each frame's module offset). Their frames
carry module, path, offset and symbol, so faulting-module and frame conditions see them."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CORPUS
from triage.model import Artifact, Case
from triage.parsers import parse
from triage.pipeline import triage

# PyTorch's crash handler in a public issue (github.com/ROCm/legacy-rocm-build/issues/5440), its first frames.
TORCH = r"""[shared] Running ocr
Exception Code: 0xC0000094
0x00007FFFA52E98D5, C:\manga-image-translator\venv\Lib\site-packages\torch\lib\torch_hip.dll(0x00007FFFA3FB0000) + 0x13398D5 byte(s), ?_chunk_cat_out_cuda@native@at@@YAAEAVTensor@2@V?$ArrayRef@VTensor@at@@@c10@@_J1AEAV32@@Z() + 0x37985 byte(s)
0x00007FFFA52BB03E, C:\manga-image-translator\venv\Lib\site-packages\torch\lib\torch_hip.dll(0x00007FFFA3FB0000) + 0x130B03E byte(s), ?_chunk_cat_out_cuda@native@at@@YAAEAVTensor@2@V?$ArrayRef@VTensor@at@@@c10@@_J1AEAV32@@Z() + 0x90EE byte(s)
0x00007FFFA52B55A4, C:\manga-image-translator\venv\Lib\site-packages\torch\lib\torch_hip.dll(0x00007FFFA3FB0000) + 0x13055A4 byte(s), ?_chunk_cat_out_cuda@native@at@@YAAEAVTensor@2@V?$ArrayRef@VTensor@at@@@c10@@_J1AEAV32@@Z() + 0x3654 byte(s)
0x00007FFFA5BE68F1, C:\manga-image-translator\venv\Lib\site-packages\torch\lib\torch_hip.dll(0x00007FFFA3FB0000) + 0x1C368F1 byte(s), ?impl@structured_topk_out_cuda@native@at@@QEAAXAEBVTensor@3@_J1_N200@Z() + 0x161 byte(s)
0x00007FFFA5CF748A, C:\manga-image-translator\venv\Lib\site-packages\torch\lib\torch_hip.dll(0x00007FFFA3FB0000) + 0x1D4748A byte(s), ?topk@cuda@at@@YA?AV?$tuple@VTensor@at@@V12@@std@@AEBVTensor@2@_J1_N2@Z() + 0xEA byte(s)
"""

# Blender's crash log: the stack and module lines are from a public issue
# (github.com/JacquesLucke/blender_vscode/issues/212); the exception record is in the form Blender writes above them,
# and python311.dll's line in the module list in the form of the others.
BLENDER = """# backtrace
Exception Record:

ExceptionCode         : EXCEPTION_ACCESS_VIOLATION
Exception Address     : 0x00007FFB6F74D710
Exception Module      : python311.dll
Exception Flags       : 0x00000000
Exception Parameters  : 0x2


Stack trace:
python311.dll       :0x00007FFB6F74D710  PyComplex_AsCComplex
python311.dll       :0x00007FFB6F744630  PyBytes_Repeat
python311.dll       :0x00007FFB6F744D80  PyObject_Vectorcall
ucrtbase.dll        :0x00007FFBC19D1B20  configthreadlocale
KERNEL32.DLL        :0x00007FFBC2A47360  BaseThreadInitThunk
ntdll.dll           :0x00007FFBC413CC70  RtlUserThreadStart


Thread : 00006160
ntdll.dll           :0x00007FFBC418D560  ZwWaitForSingleObject
KERNELBASE.dll      :0x00007FFBC1E09180  WaitForSingleObjectEx
libscipy_openblas-5b1ec8b915dfb81d11cebc0788069d2d.dll:0x00007FFB08CD0790  scipy_OPENBLAS_GET_PARALLEL


Loaded Modules :
0x00007FF72F410000 5.0.1.0              blender.exe C:\\Program Files\\Blender Foundation\\Blender 5.0\\blender.pdb
0x00007FFB6F6F0000 3.11.7150.1013       python311.dll
0x00007FFB75E80000                      OpenEXRCore.dll
0x00007FFBBA060000 10.0.19041.3636      WINMM.dll
0x00007FFB25100000 2.3.0.0              OpenImageDenoise_core.dll
"""


def _parse(text: str, name: str = "crash.txt") -> Case:
    return parse([Artifact(name=name, text=text, size=len(text))])


def test_pytorch_handler_frames_with_the_module_base() -> None:
    case = _parse(TORCH)
    [stack] = case.stacks
    top = stack.frames[0]
    assert (top.module, top.address, top.offset) == ("torch_hip.dll", 0x00007FFFA52E98D5, 0x13398D5)
    assert top.address - top.offset == 0x00007FFFA3FB0000  # the base the line gives
    assert top.symbol == "?_chunk_cat_out_cuda@native@at@@YAAEAVTensor@2@V?$ArrayRef@VTensor@at@@@c10@@_J1AEAV32@@Z"
    assert top.symbol_offset == 0x37985 and (top.symbol_note or "").startswith("unreliable")  # far past an export
    assert [f.offset for f in stack.frames] == [0x13398D5, 0x130B03E, 0x13055A4, 0x1C368F1, 0x1D4748A]
    assert stack.frames[4].symbol_offset == 0xEA and stack.frames[4].symbol_note is None
    assert [f.where.line for f in stack.frames] == [3, 4, 5, 6, 7]
    assert case.fault is not None
    assert (case.fault.code_name, case.fault.module, case.fault.offset) == ("INTEGER_DIVIDE_BY_ZERO", "torch_hip.dll",
                                                                           0x13398D5)


def test_a_handler_frame_without_its_address() -> None:
    text = ("Exception Code: 0xC0000005\n"
            "  C:\\Windows\\System32\\amdhip64_6.dll (0x00007FFB12340000) + 0x1A2B3 byte(s), hipMemcpy() + 0x12 byte(s)\n"
            "  amdhip64_6.dll (0x00007FFB12340000) + 0x4B71C9 byte(s)\n")
    case = _parse(text)
    [stack] = case.stacks
    first, second = stack.frames
    assert (first.module, first.offset, first.address, first.symbol, first.symbol_offset) == (
        "amdhip64_6.dll", 0x1A2B3, None, "hipMemcpy", 0x12)
    assert (second.module, second.offset, second.symbol) == ("amdhip64_6.dll", 0x4B71C9, None)
    assert case.fault is not None and (case.fault.module, case.fault.offset) == ("amdhip64_6.dll", 0x1A2B3)


def test_blender_crash_log_frames_get_offsets_from_the_module_list() -> None:
    case = _parse(BLENDER, "blender.crash.txt")
    crashed, waiting = case.stacks
    assert [(f.module, f.symbol) for f in crashed.frames[:3]] == [
        ("python311.dll", "PyComplex_AsCComplex"), ("python311.dll", "PyBytes_Repeat"),
        ("python311.dll", "PyObject_Vectorcall")]
    assert [f.offset for f in crashed.frames[:3]] == [0x5D710, 0x54630, 0x54D80]  # address - python311.dll's base
    assert crashed.frames[3].offset is None  # ucrtbase.dll is not in the list
    assert waiting.frames[2].module == "libscipy_openblas-5b1ec8b915dfb81d11cebc0788069d2d.dll"
    assert case.value("exception_code") == "0xC0000005"
    assert case.value("faulting_module") == "python311.dll"
    assert case.value("fault_offset") == "0x5d710"
    assert case.fault is not None and crashed.crashing and not waiting.crashing
    assert (case.fault.code_name, case.fault.module, case.fault.offset) == ("ACCESS_VIOLATION", "python311.dll",
                                                                           0x5D710)


def test_blender_names_the_exception_and_may_give_its_code() -> None:
    assert _parse("ExceptionCode         : EXCEPTION_ILLEGAL_INSTRUCTION (0xc000001d)\n").value("exception_code") == \
        "0xC000001D"
    assert _parse("ExceptionCode         : EXCEPTION_STACK_OVERFLOW\n").value("exception_code") == "0xC00000FD"


def test_lines_like_them_that_are_not_frames() -> None:
    text = ("0x00007ff6a2b20000 - 0x00007ff6a2b6a000 \tC:\\Program Files\\Java\\jdk-17\\bin\\java.exe\n"
            "See C:\\tools\\app.dll (0x1234) + 0x5 bytes for details\n"
            "app.dll: 0x00007FFB6F74D710 is where it stopped\n")
    case = _parse(text)
    assert not case.stacks


def test_the_seed_windows_stack_in_the_handlers_byte_form_keeps_its_diagnosis(tmp_path: Path) -> None:
    # The seed case 002's stack as PyTorch's handler words it: " byte(s)" after each offset.
    seed = CORPUS / "seed-002-hipmoduleload-access-violation-windows" / "crash-stack.txt"
    lines = seed.read_text(encoding="utf-8").split("\n")
    worded = [line.replace(", hs", " byte(s), hs").replace(", hip", " byte(s), hip") + " byte(s)"
              if line.startswith("0x") else line for line in lines]
    (tmp_path / "crash-stack.txt").write_text("\n".join(worded), encoding="utf-8")
    bare, handler = triage([str(seed)]), triage([str(tmp_path / "crash-stack.txt")])
    assert "byte(s), hsa_system_get_major_extension_table() + 0x3AD1DE byte(s)" in worded[1]
    assert (handler.top.klass, handler.top.id) == (bare.top.klass, bare.top.id)
    assert handler.case.fault is not None and bare.case.fault is not None
    assert (handler.case.fault.module, handler.case.fault.offset) == (bare.case.fault.module, bare.case.fault.offset)
