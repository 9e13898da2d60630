"""Windows Error Reporting files (triage/parsers/werfiles.py): Report.wer and Event Viewer's XML view.

Samples: the XML of an Application Error event a user posted (ROCm/ROCm#5871: PyTorch on the ROCm
SDK wheels for Windows, amdhip64_7.dll faulting), and an APPCRASH Report.wer with the same event's
XML in its old unnamed form as a user posted them in a public forum (a non-GPU program: the format
is what is tested). Report.wer is written by Windows in UTF-16 with a byte-order mark.
"""

from __future__ import annotations

from pathlib import Path

from triage.pipeline import triage

EVENT_XML = r"""<Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event">
  <System>
    <Provider Name="Application Error" Guid="{a0e9b465-b939-57d7-b27d-95d8e925ff57}" />
    <EventID>1000</EventID>
    <Version>0</Version>
    <Level>2</Level>
    <Task>100</Task>
    <Channel>Application</Channel>
  </System>
  <EventData>
    <Data Name="AppName">python.exe</Data>
    <Data Name="AppVersion">3.12.10150.1013</Data>
    <Data Name="AppTimeStamp">67f515a7</Data>
    <Data Name="ModuleName">amdhip64_7.dll</Data>
    <Data Name="ModuleVersion">10.0.3581.0</Data>
    <Data Name="ModuleTimeStamp">69198ccb</Data>
    <Data Name="ExceptionCode">c0000005</Data>
    <Data Name="FaultingOffset">00000000002ab8ba</Data>
    <Data Name="ProcessId">0x3560</Data>
    <Data Name="ProcessCreationTime">0x1dc8b3a7b7f1c4e</Data>
    <Data Name="AppPath">C:\Users\bruce\AppData\Local\Programs\Python\Python312\python.exe</Data>
    <Data Name="ModulePath">D:\text-generation-webui\venv\Lib\site-packages\_rocm_sdk_core\bin\amdhip64_7.dll</Data>
  </EventData>
</Event>
"""

UNNAMED_XML = (
    '<event xmlns="http://schemas.microsoft.com/win/2004/08/events/event"> <system> <provider name="Application Error"/> '
    '<eventid qualifiers="0">1000</eventid> <level>2</level> </system> <eventdata> <data>wireshark.exe</data> '
    '<data>1.8.3.45256</data> <data>506b148f</data> <data>ntdll.dll</data> <data>6.1.7601.17725</data> '
    '<data>4ec4aa8e</data> <data>c0000374</data> <data>00000000000c40f2</data> <data>39fc</data> '
    '<data>01cdb0603bbba52c</data> <data>C:\\Program Files\\Wireshark\\wireshark.exe</data> '
    '<data>C:\\Windows\\SYSTEM32\\ntdll.dll</data> </eventdata> </event>\n')

REPORT_WER = r"""Version=1
EventType=APPCRASH
EventTime=129953891640935850
ReportType=2
Consent=1
Sig[0].Name=Application Name
Sig[0].Value=wireshark.exe
Sig[1].Name=Application Version
Sig[1].Value=1.8.3.45256
Sig[3].Name=Fault Module Name
Sig[3].Value=StackHash_3184
Sig[4].Name=Fault Module Version
Sig[4].Value=6.1.7601.17725
Sig[6].Name=Exception Code
Sig[6].Value=c0000374
Sig[7].Name=Exception Offset
Sig[7].Value=00000000000c40f2
DynamicSig[1].Name=OS Version
DynamicSig[1].Value=6.1.7601.2.1.0.272.7
LoadedModule[0]=C:\Program Files\Wireshark\wireshark.exe
LoadedModule[1]=C:\Windows\SYSTEM32\ntdll.dll
FriendlyEventName=Stopped working
"""


def _triage(tmp_path: Path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return triage([str(path)])


def test_event_xml_names_the_faulting_hip_dll_its_code_offset_and_path(tmp_path: Path) -> None:
    result = _triage(tmp_path, "event.xml", EVENT_XML.encode())
    facts = result.case.flat_facts()
    assert facts["faulting_module"] == "amdhip64_7.dll" and facts["exception_code"] == "0xC0000005"
    assert facts["fault_offset"] == "0x00000000002ab8ba" and facts["os"] == "windows"
    assert facts["hip_library_path"].endswith(r"_rocm_sdk_core\bin\amdhip64_7.dll")
    # the DLL's file version here is the driver's numbering, not a HIP release
    assert facts["module_version:amdhip64_7.dll"] == "10.0.3581.0"
    assert "hip_version_runtime" not in facts and facts["rocm_versions"] == ["7"]
    assert result.top.klass == "runtime-crash"


def test_unnamed_event_data_is_read_by_position_in_an_application_error(tmp_path: Path) -> None:
    facts = _triage(tmp_path, "event.txt", UNNAMED_XML.encode()).case.flat_facts()
    assert facts["faulting_module"] == "ntdll.dll" and facts["exception_code"] == "0xC0000374"
    assert facts["fault_offset"] == "0x00000000000c40f2"


def test_unnamed_data_outside_an_application_error_says_nothing(tmp_path: Path) -> None:
    other = UNNAMED_XML.replace("Application Error", "Application Hang")
    facts = _triage(tmp_path, "event.txt", other.encode()).case.flat_facts()
    assert "faulting_module" not in facts and "exception_code" not in facts


def test_report_wer_in_utf16_read_by_signature_names_stackhash_is_no_module(tmp_path: Path) -> None:
    data = "\ufeff".encode("utf-16-le") + REPORT_WER.replace("\n", "\r\n").encode("utf-16-le")
    facts = _triage(tmp_path, "Report.wer", data).case.flat_facts()
    assert facts["exception_code"] == "0xC0000374" and facts["fault_offset"] == "0x00000000000c40f2"
    assert "faulting_module" not in facts  # StackHash_3184: Windows did not know the module


def test_report_wer_with_a_hip_dll_loaded_and_a_bex_offset_that_is_no_address(tmp_path: Path) -> None:
    text = (REPORT_WER.replace("Sig[3].Value=StackHash_3184", "Sig[3].Value=amdhip64_6.dll")
            .replace("Sig[4].Value=6.1.7601.17725", "Sig[4].Value=6.1.40252.0")
            .replace("Sig[7].Value=00000000000c40f2", "Sig[7].Value=PCH_84")
            .replace(r"LoadedModule[1]=C:\Windows\SYSTEM32\ntdll.dll",
                     r"LoadedModule[1]=C:\Windows\SYSTEM32\ntdll.dll" "\n"
                     r"LoadedModule[2]=C:\Program Files\AMD\ROCm\6.1\bin\amdhip64_6.dll"))
    result = _triage(tmp_path, "Report.wer", text.encode())
    facts = result.case.flat_facts()
    assert facts["faulting_module"] == "amdhip64_6.dll" and facts["hip_version_runtime"] == "6.1.40252.0"
    assert facts["hip_library_path"] == r"C:\Program Files\AMD\ROCm\6.1\bin\amdhip64_6.dll"
    assert "fault_offset" not in facts
    assert result.top.klass == "runtime-crash"
