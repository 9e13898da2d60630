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
from triage.redact import Redactor, redactor_for, secret_name, secret_value
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


# --- secrets and hardware serials ----------------------------------------------------------
# Every secret here is made up for these tests.

GH_CLASSIC = "ghp_" + "MadeUpHipTriage" + "0123456789abcdefghijk"  # ghp_ + 36
GH_FINE = "github_pat_11MADEUP0" + "hipTriage_0123456789abcdefghijklmnop"
AWS_ID = "AKIA" + "MADEUPKEY0HT4242"
AWS_SECRET = "MadeUp/HipTriage+Secret0123456789abcdefg"  # 40 characters of base64
AWS_SECRET_2 = "AnotherMadeUp+Secret/0123456789ABCDEFGHI"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWRlLXVwIn0.TWFkZVVwU2lnbmF0dXJlMDA"
HF = "hf_" + "MadeUpHuggingFaceToken0123456789ab"
SK = "sk-proj-" + "MadeUpOpenAIKey0123456789abcdefGHIJ"
assert len(GH_CLASSIC) == 40 and len(AWS_ID) == 20 and len(AWS_SECRET) == len(AWS_SECRET_2) == 40

# (id, a line that holds the secret, what must be gone, the placeholder's name)
SECRET_KINDS = [
    ("github-token", f"git push https {GH_CLASSIC} done", [GH_CLASSIC], "github-token"),
    ("github-pat", f"GH auth with {GH_FINE}", [GH_FINE], "github-token"),
    ("aws-key-id", f"aws access key {AWS_ID} in use", [AWS_ID], "aws-key-id"),
    ("aws-secret", f"aws_secret_access_key = {AWS_SECRET}", [AWS_SECRET], "aws-secret"),
    ("aws-secret-env", f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET_2}", [AWS_SECRET_2], "aws-secret"),
    ("bearer-jwt", f"Authorization: Bearer {JWT}", [JWT, JWT.split(".")[1]], "jwt"),
    ("hf-token", f"huggingface login {HF}", [HF], "hf-token"),
    ("sk-api-key", f"openai key {SK}", [SK], "api-key"),
    ("password", "db password=Hunter2kv", ["Hunter2kv"], "redacted"),
    ("passwd", "ldap passwd: Hunter2colon", ["Hunter2colon"], "redacted"),
    ("password-flag", "./server --password=Hunter2flag", ["Hunter2flag"], "redacted"),
    ("password-flag-space", "./server --password Hunter2space", ["Hunter2space"], "redacted"),
    ("dash-p", "mysql -u dbuser -p Hunter2dashp", ["Hunter2dashp"], "redacted"),
    ("env-credentials", "FOO_CREDS=Creds2value MY_PASS=Pass2value", ["Creds2value", "Pass2value"], "redacted"),
    ("asic-serial", "    ASIC_SERIAL: 0x8D9A1F2C33E45B07", ["8D9A1F2C33E45B07"], "serial-"),
    ("product-serial", "    PRODUCT_SERIAL: 692235000453", ["692235000453"], "serial-"),
    ("unique-id", "GPU[0]\t\t: Unique ID: 0x7a3c9e21d4b5f680", ["7a3c9e21d4b5f680"], "serial-"),
    ("serial-number", "\tCapabilities: [150 v1] Device Serial Number 12-34-56-ff-fe-78-9a-bc",
     ["12-34-56-ff-fe-78-9a-bc"], "serial-"),
    ("mac-dotted", "link 001a.2b3c.4d5e is up", ["001a.2b3c.4d5e"], "mac-"),
    ("user-at-host", "ssh qbertz@gpubox7 rocminfo", ["qbertz", "gpubox7"], "host-"),
]
CONTEXT_LINE = 10  # a line inserted in hip.log that is no evidence, only the context of evidence line 8
EVIDENCE_LINE = 14  # "Couldn't create blit kernels!" once the line above is inserted


def _secret_case(folder: Path, line: str) -> Path:
    """Seed case 000 with ``line`` as a context line and also at the end of an evidence line."""
    folder.mkdir()
    for source in SEED.iterdir():
        if source.name != "expected.yaml":
            (folder / source.name).write_bytes(source.read_bytes())
    hip = (SEED / "hip.log").read_text(encoding="utf-8").splitlines()
    hip[12] += " " + line
    hip.insert(CONTEXT_LINE - 1, line)
    (folder / "hip.log").write_text("\n".join(hip) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def secret_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    root = tmp_path_factory.mktemp("secrets")
    return {kind: triage([str(_secret_case(root / kind, line))]) for kind, line, _, _ in SECRET_KINDS}


def _context_row(rendered: str, fmt: str) -> str:
    """The quoted context line, as the source view of the md or html report shows it."""
    if fmt == "md":
        match = re.search(rf"(?m)^ *{CONTEXT_LINE}  (.*)$", rendered)
    else:
        match = re.search(rf'>{CONTEXT_LINE}</a><span class="t">([^<]*(?:&lt;[^<]*)*)</span>', rendered)
    assert match, f"no context line {CONTEXT_LINE} in the {fmt} source view"
    return match.group(1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind, line, secrets, placeholder", SECRET_KINDS, ids=[k[0] for k in SECRET_KINDS])
def test_secret_and_serial_kinds_gone_from_every_format(secret_cases: dict[str, Result], kind: str, line: str,
                                                        secrets: list[str], placeholder: str, fmt: str) -> None:
    result = secret_cases[kind]
    plain = render(result, fmt)
    redacted = render(result, fmt, redact=True)
    if fmt != "text":  # the text summary cuts evidence lines at 110 characters
        assert all(secret in plain for secret in secrets)  # the input really carries them
    for secret in secrets:
        assert secret not in redacted and secret[:10] not in redacted, f"{secret!r} leaked into {fmt}"
    assert placeholder in redacted, f"no {placeholder} placeholder in {fmt}"
    if fmt in ("md", "html"):  # the quoted context line itself
        assert all(secret in _context_row(plain, fmt) for secret in secrets)
        row = _context_row(redacted, fmt)
        assert placeholder in row and not any(secret in row for secret in secrets), row
    if fmt == "json":
        plain_report, report = json.loads(plain), json.loads(redacted)
        assert _diagnoses(report) == _diagnoses(plain_report)
        assert plain_report["diagnoses"][0]["id"] == "hip-blit-kernels-device-libs-missing"
        text = next(e["text"] for e in report["diagnoses"][0]["evidence"] if e["line"] == EVIDENCE_LINE)
        assert text.startswith(":1:rocdevice.cpp    :730 :  Couldn't create blit kernels! ") and placeholder in text
    for kept in SURVIVORS + ["libamdhip64.so.7", "hip.log"]:
        assert redacted.count(kept) == plain.count(kept), f"{kept!r} lost from {fmt}"


@pytest.mark.parametrize("text, expected", [
    (f"token {GH_CLASSIC}.", "token <github-token>."),
    (f"{GH_FINE}", "<github-token>"),
    (f"id={AWS_ID}", "id=<aws-key-id>"),
    (f'"aws_secret_access_key": "{AWS_SECRET}"', '"aws_secret_access_key": "<aws-secret>"'),
    (f"SecretAccessKey: {AWS_SECRET}", "SecretAccessKey: <aws-secret>"),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer <jwt>"),
    ("curl -H 'Authorization: Bearer abc123def456ghi'", "curl -H 'Authorization: Bearer <token>'"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic <token>"),
    (f"?access_token={JWT}&x=1", "?access_token=<jwt>&x=1"),
    (f"HF_TOKEN={HF}", "HF_TOKEN=<hf-token>"),
    (f"key {SK} set", "key <api-key> set"),
    ("password=hunter2 passwd: hunter3 Password: hunter4", "password=<redacted> passwd: <redacted> Password: <redacted>"),
    ('{"password": "hunter 2", "api_key": "k3y"}', '{"password": "<redacted>", "api_key": "<redacted>"}'),
    ("--password=hunter2 --passwd hunter3 --token t0k --api-key k3y",
     "--password=<redacted> --passwd <redacted> --token <redacted> --api-key <redacted>"),
    ("sshpass -p 'hunter 2' ssh gpu", "sshpass -p '<redacted>' ssh gpu"),
    ("mysql -uadmin -phunter2 db", "mysql -uadmin -p<redacted> db"),
    ("docker login -u me -p hunter2 registry", "docker login -u me -p <redacted> registry"),
    ("FOO_CREDS=a MY_PASS=b GITHUB_TOKEN=c OPENAI_API_KEY=d DB_PWD=e X_SECRET=f",
     ("FOO_CREDS=<redacted> MY_PASS=<redacted> GITHUB_TOKEN=<redacted> OPENAI_API_KEY=<redacted> DB_PWD=<redacted> "
      "X_SECRET=<redacted>")),
    ("git clone https://oauth2:hunter2@git.example.org/x.git", "git clone https://<user-1>:<redacted>@git.example.org/x.git"),
    ("    ASIC_SERIAL: 0x8D9A1F2C33E45B07", "    ASIC_SERIAL: <serial-1>"),
    ('"product_serial": "692235000453"', '"product_serial": "<serial-1>"'),
    ("GPU[0]\t\t: Unique ID: 0x7a3c9e21d4b5f680", "GPU[0]\t\t: Unique ID: <serial-1>"),
    ("Device Serial Number 12-34-56-ff-fe-78-9a-bc", "Device Serial Number <serial-1>"),
    ("Serial Number       PSN7Q2X9K1", "Serial Number       <serial-1>"),
    ("interface mac 001A.2B3C.4D5E up", "interface mac <mac-1> up"),
    ("ssh qbertz@gpubox7 and scp x qbertz@10.1.2.3:/tmp", "ssh <user-1>@<host-1> and scp x <user-1>@<ip-1>:/tmp"),
    ("root@gpubox7:~# rocminfo", "root@<host-1>:~# rocminfo"),
])
def test_secret_shapes(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


@pytest.mark.parametrize("text", [
    "memcpy@GLIBC_2.14 hipMalloc@@hip_4.2 call 0x1040 <printf@plt> this=this@entry=0x7f0994000c70",
    "Started user@1000.service and getty@tty1.service",
    "E-001h rocSHMEM Could not open libnuma. Returning\tNUMAWrapper@src/gda/numa_wrapper.cpp:48",
    "Linux version 6.8.0-45-generic (buildd@lcy02-amd64-040) (x86_64-linux-gnu-gcc-13)",
    "mkdir -p /opt/rocm/lib && ssh -p 2222 host",
    "error: unexpected token: ')'",
    "error: --token is required; secret: none",
    "PASSWORD_FILE=/etc/db.pass TOKEN_URL=https://auth.example.org/token",
    "amdgpu 0000:03:00.0: gfx1201 HIP 7.2.53210 libamdhip64.so.7 + 0x4b71c9 sk-learn",
    "HSA_OVERRIDE_GFX_VERSION=11.0.0 AMD_SERIALIZE_KERNEL=3 HIP_VISIBLE_DEVICES=0",
    "v1234.5678.9012 and version 2024.0101.0001",
    "the serial number is unknown; Serial No. 42",
])
def test_secret_look_alikes_stay(text: str) -> None:
    assert Redactor([text]).text(text) == text


def test_a_learnt_secret_is_replaced_where_it_shows_alone() -> None:
    r = Redactor(["$ ./app --password Hunter2x -u bob -p pw-Hunter9", "MY_PASS=Pass2value"])
    assert r.text("login as bob with Hunter2x, pw-Hunter9 and Pass2value") == (
        "login as bob with <redacted>, <redacted> and <redacted>")


def test_argv_redacts_the_value_after_a_password_flag() -> None:
    argv = ["./app", "--password=hunter2", "--token", GH_CLASSIC, "--api-key", "k3y-abc", "-u", "bob", "-p",
            "pw-hunter9", "--threads", "4", "-pother"]
    assert Redactor().argv(argv) == ["./app", "--password=<redacted>", "--token", "<redacted>", "--api-key",
                                     "<redacted>", "-u", "bob", "-p", "<redacted>", "--threads", "4", "-p<redacted>"]
    assert Redactor().argv(["mkdir", "-p", "/opt/rocm"]) == ["mkdir", "-p", "/opt/rocm"]


@pytest.mark.parametrize("name, secret", [
    ("FOO_CREDS", True), ("MY_PASS", True), ("DB_PASSWORD", True), ("GITHUB_TOKEN", True), ("X_SECRET", True),
    ("AWS_KEY", True), ("OPENAI_API_KEY", True), ("HIP_VISIBLE_DEVICES", False), ("HSA_OVERRIDE_GFX_VERSION", False),
    ("LD_LIBRARY_PATH", False), ("AMD_LOG_LEVEL", False), ("ROCM_PATH", False),
])
def test_secret_name(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


@pytest.mark.parametrize("value, secret", [
    (f"-v --token {GH_CLASSIC}", True), (f"x {HF} y", True), ("--password hunter2", True), (AWS_ID, True),
    ("/opt/rocm/lib:/usr/lib", False), ("11.0.0", False), ("gfx1100", False), ("0,1", False),
])
def test_secret_value(value: str, secret: bool) -> None:
    assert secret_value(value) is secret


# One megabyte on one line, in shapes that would make a backtracking pattern quadratic.
_MEGABYTE = 1 << 20
_SLOW_SHAPES = ["a_", "sk-", "eyJa.", "x@y.", "-u x -p y ", "password: ", '"', "aa:", "Unique ID: "]


@pytest.mark.parametrize("unit", ["random", *_SLOW_SHAPES])
def test_a_megabyte_line_stays_fast(unit: str) -> None:
    import random
    import string
    import time

    if unit == "random":
        rng = random.Random(7)
        line = "".join(rng.choice(string.printable.replace("\n", "")) for _ in range(_MEGABYTE))
    else:
        line = (unit * (_MEGABYTE // len(unit) + 1))[:_MEGABYTE]
    started = time.perf_counter()
    redactor = Redactor([line])
    redactor.text(line)
    secret_value(line)
    # linear patterns take a second or two here (more on a loaded machine); a quadratic one, hours
    assert time.perf_counter() - started < 30, unit
