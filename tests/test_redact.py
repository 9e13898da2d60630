"""``--redact``: reports posted on public issues carry no user/host names, addresses or serials.

The diagnosis must not change (redaction runs on the built report, after matching), values must
map to stable placeholders, and versions and hex offsets must survive.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.pipeline import Result, triage
from triage.redact import Redactor, redactor_for
from triage.report import build, render

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
SEED = CORPUS / "seed-000-blit-kernels-device-libs-missing"
FORMATS = ["text", "json", "html", "md"]

PERSONAL_LINE = ("Nov 29 21:03:11 alice-desktop strata[4242]: :1:rocdevice.cpp    :730 :  Couldn't create blit "
                 "kernels! peer 192.168.1.23 fe80::1c2d:3eff:fe4f:5a6b ether 00:1a:2b:3c:4d:5e bob.jones@example.com "
                 "Serial Number: 0x1234ABCD UUID: GPU-4b0c1c3e2a1f0d9c")
EXTRA_LINES = [
    "Nov 29 21:03:11 alice-desktop kernel: amdgpu 0000:03:00.0: amdgpu: GPU fault detected",
    "alice@alice-desktop:~$ AMD_LOG_LEVEL=3 ./app",
    "C:\\Users\\Alice Smith\\AppData\\Local\\Strata\\engine\\amdhip64_7.dll",
    "    inet 192.168.1.23/24 brd 192.168.1.255",
    "    inet6 fe80::1c2d:3eff:fe4f:5a6b/64 scope link",
    "    ether 00:1a:2b:3c:4d:5e",
    "Reported by bob.jones@example.com",
    "Serial Number: 0x1234ABCD",
    "  UUID:                    GPU-4b0c1c3e2a1f0d9c",
]
# Every string here is personal and must be gone from every format.
SECRETS = ["alice", "Alice Smith", "alice-desktop", "192.168.1.23", "192.168.1.255", "fe80::1c2d:3eff:fe4f:5a6b",
           "00:1a:2b:3c:4d:5e", "bob.jones", "example.com", "0x1234ABCD", "GPU-4b0c1c3e2a1f0d9c", "4b0c1c3e2a1f0d9c"]
SURVIVORS = ["7.2.53210", "10.1.0", "gfx1201", "0x4b71c9"]


def _personal_text() -> str:
    hip = (SEED / "hip.log").read_text(encoding="utf-8")
    hip = hip.replace("HIP Library Path: ./libamdhip64.so.7",
                      "HIP Library Path: /home/alice/.local/share/strata/components/engine/libamdhip64.so.7")
    hip = hip.replace(":1:rocdevice.cpp    :730 :  Couldn't create blit kernels!", PERSONAL_LINE)
    assert PERSONAL_LINE in hip
    parts = [hip, "\n".join(EXTRA_LINES) + "\n"]
    parts += [(SEED / name).read_text(encoding="utf-8") for name in ("coredump.txt", "environment.txt", "kernel.log")]
    return "".join(parts)


@pytest.fixture(scope="module")
def personal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A seed log mixed with a user's name, host, addresses and serials; the file name has the host too."""
    path = tmp_path_factory.mktemp("redact") / "alice-desktop-report.txt"
    path.write_text(_personal_text(), encoding="utf-8")
    return path


@lru_cache(maxsize=None)
def _result(path: str) -> Result:
    return triage([path])


def _diagnoses(report: dict) -> list[tuple]:
    return [(d["class"], d["id"], d["confidence"]) for d in report["diagnoses"]]


# --- the Redactor on its own -----------------------------------------------------------------


def test_learns_users_and_hosts_from_every_source() -> None:
    r = Redactor([
        "Nov 29 21:03:11 myhost kernel: amdgpu: ring gfx timeout",
        "alice@myhost:~$ ./app",
        "[carol@labbox ~]$ rocminfo",
        "Linux unamehost 6.8.0-45-generic #45-Ubuntu SMP x86_64",
        "Hostname: named.example.lan",
        "COMPUTERNAME=DESKTOP-7QX2",
        "/Users/dave/Library/Logs/x.log",
        "C:\\Users\\Erin Stone\\AppData\\Local\\x.dll",
        "cd ~frank/src",
    ])
    names = r.names
    for name in ["myhost", "alice", "carol", "labbox", "unamehost", "named.example.lan", "named", "desktop-7qx2",
                 "dave", "erin stone", "frank"]:
        assert name in names, name
    assert names["named"] == names["named.example.lan"]  # the short name is the same host
    assert names["alice"].startswith("<user-") and names["myhost"].startswith("<host-")


def test_does_not_learn_short_generic_or_code_names() -> None:
    r = Redactor([
        "/home/a/x.so",                              # one character
        "root@localhost:~# ls /root",               # generic
        "Nov 29 21:03:11 kernel: amdgpu: x",         # dmesg without a host
        "OS / kernel\tNixOS 26.11, Linux 7.1.3",    # no host in it
        "#3 0x00007f in ~Device () from libamdhip64.so.7",  # a destructor, not ~user
    ])
    assert r.names == {}


def test_replaces_whole_words_only_and_keeps_case_of_unrelated_text() -> None:
    r = Redactor(["/home/ann/x"])
    assert r.text("ann and Ann went to annex; banner ann_x") == "<user-1> and <user-1> went to annex; banner ann_x"


def test_same_value_same_placeholder_and_distinct_values_distinct() -> None:
    r = Redactor(["/home/alice/a", "alice@box1:~$ x"])
    out = r.text("alice 10.0.0.7 box1 10.0.0.8 10.0.0.7 alice aa:bb:cc:dd:ee:ff aa:bb:cc:dd:ee:ff")
    assert out == "<user-1> <ip-1> <host-1> <ip-2> <ip-1> <user-1> <mac-1> <mac-1>"


@pytest.mark.parametrize("text", [
    "HIP 7.2.53211 with ROCm 10.1.0 and driver 32.0.31036.15",
    "libamdhip64.so.7.2.53211[489610,...] + 0x4b71c9 at 0x00007FFEF984A7FE",
    "amdgpu 0000:03:00.0: 1002:7551 at 21:03:11",
    "hip::Device::~Device clip_model_loader::load_tensors std::vector",
    "version 1.2.3.4 and v2.0.0.1",
    "127.0.0.1 ::1 0.0.0.0",
    "Serial Number: N/A",
])
def test_leaves_versions_offsets_and_code_alone(text: str) -> None:
    assert Redactor([text]).text(text) == text


@pytest.mark.parametrize("text, expected", [
    ("inet 192.168.1.23/24 brd 192.168.1.255.", "inet <ip-1>/24 brd <ip-2>."),
    ("inet6 fe80::1c2d:3eff:fe4f:5a6b%eth0", "inet6 <ip-1>%eth0"),
    ("ether 00-1A-2B-3C-4D-5E", "ether <mac-1>"),
    ("mail bob.jones@example.com now", "mail <email-1> now"),
    ("Serial Number: 0x1234ABCD", "Serial Number: <serial-1>"),
    ('"serial": "692235000453"', '"serial": "<serial-1>"'),
    ("UUID:  GPU-4b0c1c3e2a1f0d9c", "UUID:  <serial-1>"),
    ("HIP_VISIBLE_DEVICES=GPU-4b0c1c3e2a1f0d9c", "HIP_VISIBLE_DEVICES=<serial-1>"),
    ("C:\\\\Users\\\\zed\\\\AppData", "C:\\\\Users\\\\<user-1>\\\\AppData"),
])
def test_shapes(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


def test_learnt_serial_is_replaced_wherever_it_appears() -> None:
    r = Redactor(["Serial: SN99887766"])
    assert r.text("card SN99887766 failed") == "card <serial-1> failed"


def test_walk_keeps_keys_and_diagnosis_ids() -> None:
    r = Redactor(["/home/device/x"])
    data = {"id": "device-libs-missing", "class": "device-libs-missing", "confidence": 0.9,
            "evidence": [{"artifact": "/home/device/log", "condition": "device", "text": "device x"}],
            "device": ("device", 3)}
    out = r.data(data)
    assert out["id"] == "device-libs-missing" and out["class"] == "device-libs-missing"
    assert out["evidence"][0] == {"artifact": "/home/<user-1>/log", "condition": "device", "text": "<user-1> x"}
    assert out["device"] == ("<user-1>", 3)


# --- whole reports ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", FORMATS)
def test_corpus_unchanged_by_redaction(case: Path, fmt: str) -> None:
    """The shipped cases hold nothing personal: redacting must not touch a single character."""
    result = _result(str(case))
    assert render(result, fmt, redact=True) == render(result, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_personal_data_gone_from_every_format(personal: Path, fmt: str) -> None:
    result = _result(str(personal))
    plain = render(result, fmt)
    redacted = render(result, fmt, redact=True)
    assert "alice" in plain  # the input really carries what must go
    lowered = redacted.lower()
    for secret in SECRETS:
        assert secret.lower() not in lowered, f"{secret!r} leaked into {fmt}"
    for kept in SURVIVORS:
        assert redacted.count(kept) == plain.count(kept), f"{kept!r} lost from {fmt}"
        assert fmt == "text" or kept in redacted, f"{kept!r} not in {fmt}"
    # the markup escapes < >, so look for the placeholder's name
    wanted = ["user-1", "host-1"] + ([] if fmt == "text" else ["ip-1", "ip-2", "mac-1", "email-1", "serial-1",
                                                                 "serial-2"])
    for placeholder in wanted:
        assert placeholder in redacted, f"{placeholder} missing from {fmt}"


def test_json_stable_placeholders_and_same_diagnosis(personal: Path) -> None:
    result = _result(str(personal))
    plain = json.loads(render(result, "json"))
    redacted = json.loads(render(result, "json", redact=True))
    assert _diagnoses(redacted) == _diagnoses(plain)
    assert plain["diagnoses"][0]["id"] == "hip-blit-kernels-device-libs-missing"
    assert redacted["versions"] == plain["versions"]
    assert redacted["fault"]["offset"] == plain["fault"]["offset"] == "0x4b71c9"
    # the same file name, host and addresses map to the same placeholder everywhere
    names = {e["artifact"] for d in redacted["diagnoses"] for e in d["evidence"]}
    assert names == {"<host-1>-report.txt"}
    assert [a["name"] for a in redacted["artifacts"]] == ["<host-1>-report.txt"]
    line = next(e["text"] for d in redacted["diagnoses"] for e in d["evidence"] if "blit kernels!" in e["text"])
    assert line == ("Nov 29 21:03:11 <host-1> strata[4242]: :1:rocdevice.cpp    :730 :  Couldn't create blit kernels! "
                    "peer <ip-2> <ip-1> ether <mac-1> <email-1> Serial Number: <serial-1> UUID: <serial-2>")
    assert redacted["facts"]["hip_library_path"] == "/home/<user-1>/.local/share/strata/components/engine/libamdhip64.so.7"
    assert redacted["facts"]["hip_version"] == plain["facts"]["hip_version"]


def test_html_source_view_and_anchors_are_redacted(personal: Path) -> None:
    result = _result(str(personal))
    html = render(result, "html", redact=True)
    assert "L-&lt;host-1&gt;-report.txt-13" in html  # the evidence links to the redacted source view
    assert "&lt;host-1&gt; strata[4242]" in html


def test_redactor_for_learns_from_artifact_names_and_lines(personal: Path) -> None:
    names = redactor_for(_result(str(personal)).case.artifacts).names
    assert {"alice", "alice-desktop", "alice smith"} <= set(names)
    assert names["alice"] != names["alice smith"]


def test_build_is_untouched(personal: Path) -> None:
    """Redaction is a report option: the plain report and the Result keep the real values."""
    result = _result(str(personal))
    render(result, "json", redact=True)
    assert "alice" in json.dumps(build(result))


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_cli_redact(personal: Path, fmt: str) -> None:
    run = subprocess.run([sys.executable, "-m", "triage", str(personal), "--redact", "-f", fmt],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "hip-blit-kernels-device-libs-missing" in run.stdout
    for secret in SECRETS:
        assert secret.lower() not in run.stdout.lower()
    assert re.search(r"user-1", run.stdout) and "host-1" in run.stdout


def test_cli_help_mentions_redact() -> None:
    run = subprocess.run([sys.executable, "-m", "triage", "run", "--help"], capture_output=True, text=True, timeout=60)
    assert "--redact" in run.stdout and "serial numbers" in run.stdout
