"""`triage collect` on programs that really crash, built with gcc here: the bundle holds what this
machine can give, the manifest says what it cannot and why, and `triage bundle.zip` gives the
fault the program really had. This machine may have no GPU, no systemd journal and no
coredumpctl; what depends on them is checked both ways.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT
from triage.pipeline import triage as triage_paths
from triage.redact import _GENERIC_NAMES

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None,
                                reason="triage collect runs on Linux; the test programs need gcc")

SOURCES = {
    "libcrashme.c": "void crash_here(int *p) { *p = 42; }\n",
    "segv.c": "void crash_here(int *p);\nint main(void) { crash_here((int *)0); return 0; }\n",
    "abrt.c": "#include <stdlib.h>\nint main(void) { abort(); }\n",
    "exit3.c": "#include <stdio.h>\nint main(void) { puts(\"to stdout\"); fputs(\"to stderr\\n\", stderr); return 3; }\n",
    "ok.c": "#include <stdio.h>\nint main(void) { puts(\"all good\"); return 0; }\n",
    "whoami.c": (
        "#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
        "int main(void) { char host[256] = \"\"; gethostname(host, sizeof host);\n"
        "  printf(\"user %s home %s host %s\\n\", getenv(\"USER\"), getenv(\"HOME\"), host);\n"
        "  fflush(stdout); *(volatile int *)0 = 1; return 0; }\n"
    ),
    # prints its arguments, credentials from its environment (by name and alone) and tokens, then faults
    "leaky.c": (
        "#include <stdio.h>\n#include <stdlib.h>\n"
        "static const char *env(const char *name) { const char *v = getenv(name); return v ? v : \"\"; }\n"
        "int main(int argc, char **argv) { for (int i = 1; i < argc; i++) printf(\"arg %d: %s\\n\", i, argv[i]);\n"
        "  printf(\"FOO_CREDS=%s\\nMY_PASS=%s\\n\", env(\"FOO_CREDS\"), env(\"MY_PASS\"));\n"
        "  printf(\"connecting with %s\\npushing with %s\\n\", env(\"MY_PASS\"), env(\"LEAKY_TOKEN\"));\n"
        "  fprintf(stderr, \"Authorization: Bearer %s\\nkey id %s\\n\", env(\"LEAKY_JWT\"), env(\"LEAKY_AWS\"));\n"
        "  fflush(stdout); fflush(stderr); *(volatile int *)0 = 1; return 0; }\n"
    ),
    "chatty.c": (
        "#include <stdio.h>\nint main(void) { for (int i = 0; i < 300000; i++) printf(\"line %07d of output\\n\", i);\n"
        "  return 0; }\n"
    ),
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test programs; the SIGSEGV one faults inside a shared library of its own."""
    folder = tmp_path_factory.mktemp("programs")
    for name, text in SOURCES.items():
        (folder / name).write_text(text)

    def cc(*args: str) -> None:
        subprocess.run(["gcc", "-O0", *args], cwd=folder, check=True, capture_output=True, timeout=120)

    cc("-shared", "-fPIC", "-o", "libcrashme.so", "libcrashme.c")
    cc("-o", "segv", "segv.c", "-L.", "-lcrashme", "-Wl,-rpath,$ORIGIN")
    for name in ("abrt", "exit3", "ok", "whoami", "chatty", "leaky"):
        cc("-o", name, f"{name}.c")
    return folder


def _listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def collect(tmp_path: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 180) -> tuple[subprocess.CompletedProcess, Path]:
    """Run `triage collect -o OUT/bundle.zip ARGS` and check it left nothing but the bundle: the
    working folder, TMPDIR and the output folder are compared before and after."""
    out, work, tmp = tmp_path / "out", cwd or tmp_path / "work", tmp_path / "tmp"
    for folder in (out, work, tmp):
        folder.mkdir(exist_ok=True)
    before = (_listing(work), _listing(tmp), _listing(out))
    bundle = out / "bundle.zip"
    done = subprocess.run([sys.executable, "-m", "triage", "collect", "-o", str(bundle), *args],
                          cwd=work, env={**os.environ, "TMPDIR": str(tmp), **(env or {})},
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert (_listing(work), _listing(tmp)) == before[:2], "collect left files outside the output path"
    assert _listing(out) - before[2] <= {"bundle.zip"}
    return done, bundle


def members(bundle: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(bundle) as z:
        return {name: z.read(name) for name in z.namelist()}


def manifest(bundle: Path) -> dict:
    return json.loads(members(bundle)["manifest.json"])


def report(bundle: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "triage", str(bundle), "-f", "json"], capture_output=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr.decode()
    return json.loads(done.stdout)


def _kernel_saw_it(files: dict[str, bytes], pid: int) -> bool:
    return f"[{pid}]: segfault at".encode() in files.get("kernel.log", b"")


def test_sigsegv_in_a_library_gives_the_same_fault(tmp_path: Path, programs: Path) -> None:
    done, bundle = collect(tmp_path, "--", str(programs / "segv"))
    assert done.returncode == 0, done.stderr.decode()
    files, m = members(bundle), manifest(bundle)
    assert {"manifest.json", "command.txt", "stdout.txt", "stderr.txt", "system.txt", "environment.txt"} <= set(files)
    run = m["run"]
    assert (run["signal"], run["signal_number"], run["exit_status"]) == ("SEGV", 11, 139)
    assert b"exit code 139 (killed by signal 11, SIGSEGV)" in files["command.txt"]
    assert set(m["collected"]) == set(files) - {"manifest.json"}
    assert b"libcrashme.so" in files["ldd.txt"]  # which libraries the program loads, and from where
    assert b"AMD_LOG_LEVEL=3" in files["environment.txt"]
    assert b"OS: " in files["system.txt"] and b"kernel " in files["system.txt"]
    # What this machine cannot give is in the manifest with the reason, not an error.
    each = {"rocminfo": {"rocminfo.txt"}, "amd-smi / rocm-smi": {"amd-smi.txt", "rocm-smi.txt"},
            "coredump": {"coredump.txt"}, "kernel log": {"kernel.log"}}
    for item, names in each.items():
        assert (item in m["missing"]) != bool(names & set(files)), item
    assert all(why for why in m["missing"].values())

    r = report(bundle)
    jsonschema.validate(r, json.loads((ROOT / "reports" / "report.schema.json").read_text()))
    assert r["fault"]["kind"] == "signal" and r["fault"]["signal"] == "SEGV"
    assert r["facts"]["exit_status"] == "139"
    not_collected = {n["item"] for n in r["not_collected"]}
    assert not_collected == set(m["missing"])
    # ldd lists no GPU library and the runtime, asked to log, wrote nothing: not the GPU stack.
    assert r["diagnoses"][0]["class"] == "outside-gpu-stack", r["diagnoses"][0]
    # What the bundle holds is never asked for again.
    asks = " ".join(r["ask_for"] + r["diagnoses"][0]["ask_for"])
    assert "AMD_LOG_LEVEL" not in asks and "rocminfo" not in asks
    if "kernel.log" in files:
        assert "journalctl" not in asks
    if _kernel_saw_it(files, run["pid"]) or "coredump.txt" in files:
        assert r["fault"]["module"] == "libcrashme.so"
    else:  # neither the kernel log nor a core says where it faulted: the report says what is missing
        assert "coredump" in not_collected
        assert "kernel log" in not_collected or "segfault at" not in files.get("kernel.log", b"").decode()


def test_under_gdb_the_bundle_has_the_crashing_stack(tmp_path: Path, programs: Path) -> None:
    """Without coredumpctl, running the program under gdb is the route to its stack (no system setting changes)."""
    if shutil.which("gdb") is None:
        pytest.skip("gdb is not installed")
    done, bundle = collect(tmp_path, "--", "gdb", "-q", "-batch", "-ex", "run", "-ex", "bt", "-ex", "info registers",
                           "-ex", "x/i $pc", "--args", str(programs / "segv"))
    assert done.returncode == 0
    if b"received signal SIGSEGV" not in members(bundle)["stdout.txt"]:
        pytest.skip("gdb cannot trace processes here")
    fault = report(bundle)["fault"]
    assert (fault["signal"], fault["symbol"], fault["address"]) == ("SEGV", "crash_here", "0x0")
    assert fault["module"].endswith("/libcrashme.so")


@pytest.fixture
def coredumpctl(tmp_path: Path, programs: Path) -> Path:
    """A stand-in for systemd-coredump's coredumpctl (absent here) serving a real core of the
    SIGSEGV program, written by gdb's gcore (no system setting changes); returns its folder."""
    if shutil.which("gdb") is None:
        pytest.skip("gdb is not installed")
    core = tmp_path / "segv.core"
    subprocess.run(["gdb", "-q", "-batch", "-ex", "run", "-ex", f"gcore {core}", str(programs / "segv")],
                   capture_output=True, timeout=120)
    if not core.exists():
        pytest.skip("gdb cannot write a core here")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "coredumpctl").write_text(
        '#!/bin/sh\ncase "$1" in\n'
        '  info) printf "           PID: %s (segv)\\n        Signal: 11 (SEGV)\\n" "$3" ;;\n'
        f'  dump) cat "{core}" ;;\n'
        '  *) exit 1 ;;\nesac\n')
    (fake / "coredumpctl").chmod(0o755)
    return fake


def test_with_core_the_bundle_has_the_core(tmp_path: Path, programs: Path, coredumpctl: Path) -> None:
    path = {"PATH": f"{coredumpctl}:{os.environ['PATH']}"}
    done, bundle = collect(tmp_path, "--with-core", "--", str(programs / "segv"), env=path)
    assert done.returncode == 0
    files, m = members(bundle), manifest(bundle)
    assert files["core"] == (tmp_path / "segv.core").read_bytes()
    assert f"PID: {m['run']['pid']} (segv)".encode() in files["coredump.txt"]
    assert not {"coredump", "core file"} & set(m["missing"])
    fault = report(bundle)["fault"]
    assert (fault["signal"], fault["module"]) == ("SEGV", "libcrashme.so") and fault["offset"]

    done, bundle = collect(tmp_path, "--with-core", "--redact", "--", str(programs / "segv"), env=path)
    assert "core" not in members(bundle) and "--redact" in manifest(bundle)["missing"]["core file"]


def test_a_core_over_the_limit_is_left_out(coredumpctl: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.collect.probes import core_file

    monkeypatch.setenv("PATH", f"{coredumpctl}:{os.environ['PATH']}")
    assert core_file(1, limit=1000).why.startswith("over the 1000 bytes a bundle member may hold")


def test_sigabrt(tmp_path: Path, programs: Path) -> None:
    done, bundle = collect(tmp_path, "--", str(programs / "abrt"))
    assert done.returncode == 0
    m = manifest(bundle)
    assert (m["run"]["signal"], m["run"]["exit_status"]) == ("ABRT", 134)
    r = report(bundle)
    assert r["fault"]["signal"] == "ABRT"
    assert ("coredump" in m["missing"]) != ("coredump.txt" in members(bundle))


def test_exit_code_keeps_the_output_whole(tmp_path: Path, programs: Path) -> None:
    done, bundle = collect(tmp_path, "--log-level", "1", "--", str(programs / "exit3"))
    assert done.returncode == 0
    files, m = members(bundle), manifest(bundle)
    assert files["stdout.txt"] == b"to stdout\n" and files["stderr.txt"] == b"to stderr\n"
    assert (m["run"]["exit_status"], m["run"]["signal"], m["run"]["amd_log_level"]) == (3, None, 1)
    assert "coredump" not in m["missing"]  # nothing crashed: no core to look for
    r = report(bundle)
    assert r["fault"] is None and r["facts"]["exit_status"] == "3"


def test_success(tmp_path: Path, programs: Path) -> None:
    done, bundle = collect(tmp_path, "--", str(programs / "ok"))
    assert done.returncode == 0
    m = manifest(bundle)
    assert m["run"]["exit_status"] == 0 and m["run"]["ended"] == "exit code 0"
    assert members(bundle)["stdout.txt"] == b"all good\n"
    summary = done.stderr.decode()
    assert f"wrote {tmp_path / 'out' / 'bundle.zip'}" in summary and "stdout.txt" in summary
    assert "\r" not in summary  # not a terminal: no progress line
    assert report(bundle)["fault"] is None


def test_command_without_dashes_keeps_its_options_and_its_status(tmp_path: Path) -> None:
    # echo closes its output before it exits: the end of the output is not the end of the process
    done, bundle = collect(tmp_path, "echo", "--hello")
    assert done.returncode == 0
    assert members(bundle)["stdout.txt"] == b"--hello\n"
    assert manifest(bundle)["run"]["ended"] == "exit code 0"


def test_redacted_bundle_has_no_user_host_or_home(tmp_path: Path, programs: Path) -> None:
    home = tmp_path / "home-qzxvuser"
    home.mkdir()
    done, bundle = collect(tmp_path, "--redact", "--", str(programs / "whoami"),
                           env={"HOME": str(home), "USER": "qzxvuser", "LOGNAME": "qzxvuser"})
    assert done.returncode == 0
    files = members(bundle)
    assert b"user <user-" in files["stdout.txt"]  # the program printed them; they were replaced
    host = socket.gethostname()
    for name, data in files.items():
        text = name + "\n" + data.decode("utf-8", "replace")
        assert "qzxvuser" not in text and str(home) not in text, name
        if len(host) >= 2 and host.casefold() not in _GENERIC_NAMES:
            assert not re.search(rf"(?<![A-Za-z0-9_]){re.escape(host)}(?![A-Za-z0-9_])", text, re.I), name
    assert manifest(bundle)["redacted"] is True
    assert report(bundle)["fault"]["signal"] == "SEGV"  # still triages the same


# Made-up credentials, in the command's environment, its arguments and what it prints.
LEAK_TOKEN = "ghp_" + "MadeUpCollectTest" + "0123456789abcdefghi"
LEAK_FLAGS_TOKEN = "ghp_" + "MadeUpEnvFlagsTok" + "9876543210zyxwvutsr"
LEAK_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjb2xsZWN0In0.TWFkZVVwQ29sbGVjdFNpZw"
LEAK_AWS = "AKIA" + "MADEUPCOLLECT042"
LEAK_ENV = {
    "FOO_CREDS": "FooCreds-2d9f7", "MY_PASS": "MyPass-hunter42", "LEAKY_TOKEN": LEAK_TOKEN, "LEAKY_JWT": LEAK_JWT,
    "LEAKY_AWS": LEAK_AWS,
    # HIP/ROCm variables go into environment.txt, unless the name or the value looks like a credential
    "HIP_FOO_CREDS": "HipCreds-77aa1", "ROCM_MY_PASS": "RocmPass-55bb2", "HIP_EXTRA_FLAGS": f"-v --token {LEAK_FLAGS_TOKEN}",
    "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
}
LEAK_ARGS = ["--password=hunter2", "--token", LEAK_TOKEN, "-u", "qbertz", "-p", "pw-Hunter9", "--threads", "4"]
PRINTED = ["hunter2", "pw-Hunter9", "FooCreds-2d9f7", "MyPass-hunter42", LEAK_TOKEN, LEAK_JWT, LEAK_AWS]
LEAKED = PRINTED + ["HipCreds-77aa1", "RocmPass-55bb2", LEAK_FLAGS_TOKEN, LEAK_JWT.split(".")[1]]


def test_redacted_bundle_has_no_secret_in_any_member(tmp_path: Path, programs: Path) -> None:
    leaky = str(programs / "leaky")
    (tmp_path / "plain").mkdir()
    plain_done, plain = collect(tmp_path / "plain", "--", leaky, *LEAK_ARGS, env=LEAK_ENV)
    assert plain_done.returncode == 0, plain_done.stderr.decode()
    shown = members(plain)
    for secret in PRINTED:  # the command really printed them
        assert secret.encode() in shown["stdout.txt"] + shown["stderr.txt"], secret
    # the environment never holds a credential, redacted or not; what the diagnosis reads stays
    environment = shown["environment.txt"].decode()
    assert not {"HIP_FOO_CREDS", "ROCM_MY_PASS", "HIP_EXTRA_FLAGS"} & set(re.findall(r"(?m)^(\w+)=", environment))
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in environment
    assert int(re.search(r"# (\d+) variables? left out", environment).group(1)) >= 3

    (tmp_path / "redacted").mkdir()
    done, bundle = collect(tmp_path / "redacted", "--redact", "--", leaky, *LEAK_ARGS, env=LEAK_ENV)
    assert done.returncode == 0, done.stderr.decode()
    files = members(bundle)
    assert {"manifest.json", "command.txt", "stdout.txt", "stderr.txt", "environment.txt"} <= set(files)
    for name, data in files.items():
        text = name + "\n" + data.decode("utf-8", "replace")
        for secret in LEAKED:
            assert secret not in text, f"{secret!r} left in {name}"
    m = manifest(bundle)
    assert m["command"] == [leaky, "--password=<redacted>", "--token", "<redacted>", "-u", "qbertz", "-p", "<redacted>",
                            "--threads", "4"]
    assert files["command.txt"].decode().splitlines()[0] == "$ " + " ".join(m["command"])
    stdout, stderr = files["stdout.txt"].decode(), files["stderr.txt"].decode()
    assert "arg 1: --password=<redacted>" in stdout and "arg 3: <github-token>" in stdout
    assert "FOO_CREDS=<redacted>" in stdout and "MY_PASS=<redacted>" in stdout
    assert "connecting with <redacted>" in stdout and "pushing with <github-token>" in stdout
    assert "Authorization: Bearer <jwt>" in stderr and "key id <aws-key-id>" in stderr
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0" in files["environment.txt"].decode()
    # what the diagnosis needs is still there: the redacted bundle triages as the plain one does
    plain_report, redacted_report = report(plain), report(bundle)
    assert redacted_report["diagnoses"][0]["class"] == plain_report["diagnoses"][0]["class"]
    assert redacted_report["fault"]["signal"] == plain_report["fault"]["signal"] == "SEGV"
    assert redacted_report["facts"]["exit_status"] == plain_report["facts"]["exit_status"] == "139"


def _sleeping(seconds: str) -> list[Path]:
    """The processes running ``sleep SECONDS`` (a duration no other test run picks)."""
    wanted = f"sleep\x00{seconds}\x00".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "cmdline").read_bytes() == wanted:
                found.append(proc)
        except OSError:
            pass
    return found


def test_timeout_stops_the_command_and_everything_it_started(tmp_path: Path) -> None:
    started = time.monotonic()
    seconds = str(random.randrange(10**6, 10**7))
    done, bundle = collect(tmp_path, "--timeout", "1", "--", "sh", "-c", f"sleep {seconds} & sleep {seconds}")
    assert done.returncode == 0 and time.monotonic() - started < 60
    run = manifest(bundle)["run"]
    assert run["stopped_by_collect"] == "timeout" and "after the 1 s --timeout" in run["ended"]
    assert run["signal"] is None and run["exit_status"] is None
    assert not _sleeping(seconds), "the command's processes outlived the timeout"
    r = report(bundle)
    assert r["fault"] is None and "--timeout" in r["facts"]["run_ended"]


def test_ctrl_c_stops_the_command_and_still_writes_the_bundle(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    bundle = tmp_path / "out" / "bundle.zip"
    seconds = str(random.randrange(10**6, 10**7))
    proc = subprocess.Popen([sys.executable, "-m", "triage", "collect", "-o", str(bundle), "--", "sleep", seconds],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not _sleeping(seconds):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert manifest(bundle)["run"]["stopped_by_collect"] == "interrupted"
    assert not _sleeping(seconds)


def test_ctrl_c_while_gathering_writes_nothing(tmp_path: Path) -> None:
    seconds = str(random.randrange(10**6, 10**7))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rocminfo").write_text(f"#!/bin/sh\nsleep {seconds}\n")
    (fake / "rocminfo").chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "triage", "collect", "-o", str(out / "bundle.zip"), "--", "true"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "TMPDIR": str(out)})
    deadline = time.monotonic() + 60
    while not _sleeping(seconds):  # collect is waiting for the (fake, hanging) rocminfo
        assert time.monotonic() < deadline, "rocminfo never ran"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"nothing was written" in err and b"Traceback" not in err
    assert not list(out.iterdir())
    time.sleep(0.5)
    assert not _sleeping(seconds), "the tool outlived the interrupted collection"


def test_a_hanging_tool_is_stopped_and_noted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from triage.collect import probes

    seconds = str(random.randrange(10**6, 10**7))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rocminfo").write_text(f"#!/bin/sh\nsleep {seconds}\n")
    # exits at once, but leaves a process holding its output open
    (fake / "amd-smi").write_text(f"#!/bin/sh\necho partial\nsleep {seconds} &\nexit 0\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setattr(probes, "TOOL_TIMEOUT_S", 1.0)
    started = time.monotonic()
    hung = probes.rocminfo()
    assert hung.why == "rocminfo did not finish within 1 s"
    smi = probes.smi()
    assert smi.name == "amd-smi.txt" and smi.data.startswith("partial")
    assert time.monotonic() - started < 30
    time.sleep(0.5)  # SIGKILL takes a moment
    assert not _sleeping(seconds), "a tool's processes outlived it"


def test_system_part_and_component_folder(tmp_path: Path) -> None:
    comp = tmp_path / "engine"
    (comp / "rocblas" / "library").mkdir(parents=True)
    (comp / "libamdhip64.so.7").write_bytes(b"\x7fELF" + bytes(100))
    (comp / "engine-component.json").write_text('{"name": "engine", "files": ["libamdhip64.so.7"]}\n')
    (comp / "rocblas" / "library" / "TensileLibrary.dat").write_text("x")
    (comp / "big.bin").symlink_to("/nonexistent")
    done, bundle = collect(tmp_path, "--component", str(comp))
    assert done.returncode == 0, done.stderr.decode()
    files, m = members(bundle), manifest(bundle)
    assert m["command"] is None and m["run"] is None and "command run" in m["missing"]
    assert files["component/engine-component.json"].startswith(b'{"name": "engine"')
    listing = files["component/listing.txt"].decode()
    assert f"{comp}/rocblas/library:" in listing and "big.bin -> /nonexistent" in listing
    case = triage_paths([str(bundle)]).case
    listed = {name for _, name in case.files_listed}
    assert {"libamdhip64.so.7", "rocblas", "TensileLibrary.dat", "engine-component.json"} <= listed


def test_enormous_output_is_cut_with_a_note(tmp_path: Path, programs: Path) -> None:
    done, bundle = collect(tmp_path, "--max-output", "1", "--", str(programs / "chatty"))
    assert done.returncode == 0
    out, run = members(bundle)["stdout.txt"], manifest(bundle)["run"]
    assert run["stdout_bytes"] == 300000 * 23
    assert out.startswith(b"line 0000000 of output\n") and out.endswith(b"line 0299999 of output\n")
    assert b"bytes left out here; the output was 6900000 bytes" in out and len(out) < (1 << 20) + 200


@pytest.mark.parametrize("args, message", [
    (["-o", "/nonexistent-folder/b.zip", "--", "true"], b"not a folder"),
    (["--", "./no-such-program"], b"cannot run ./no-such-program"),
    (["--component", "/nonexistent-folder", "--", "true"], b"--component"),
])
def test_bad_usage_writes_nothing(tmp_path: Path, args: list[str], message: bytes) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "triage", "collect", *args], cwd=work, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr and b"Traceback" not in done.stderr
    assert not list(work.iterdir())


DMESG = """\
[  100.000000] old line, before the command
[  199.500000] usb 1-1: new device
[  200.100000] other[50]: segfault at 8 ip 00007f sp 00007ff error 4 in libother.so[1000,7f0000+2000]
[  200.100001] Code: 48 8b 07 <c3>
[  200.200000] prog[120]: segfault at 0 ip 00007f sp 00007ff error 6 in libcrashme.so[1105,7f1000+1000]
[  200.200001] Code: c7 00 2a <00>
[  200.300000] child[130]: segfault at 0 ip 00007f sp 00007ff error 6 in libhip.so[10,7f2000+1000]
[  200.400000] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!
"""


def test_kernel_log_keeps_the_command_and_what_it_started() -> None:
    from triage.collect.probes import _dmesg_after, _others_faults_removed

    lines = _dmesg_after(DMESG.splitlines(), after=199.0)  # a slack before the start: the clocks differ slightly
    assert lines[0].startswith("[  199.500000]")
    kept, dropped = _others_faults_removed(lines, pid=120, comm="prog")
    assert dropped == 2 and not any("other[50]" in line or "48 8b 07" in line for line in kept)
    assert any("prog[120]" in line for line in kept) and any("child[130]" in line for line in kept)
    assert kept[-1].endswith("GPU reset begin!")
    assert _dmesg_after(DMESG.splitlines(), after=200.1)[0].startswith("[  200.100001] Code")


# A crash of an earlier process, logged a moment before the command starts, with a pid above
# any the command can get (pids wrap around): only the kernel log's place when the command
# started tells it apart. Each stand-in prints the old crash always, and a new line once the
# command has run (its second call).
_OLD_CRASH = ("[{t:12.6f}] whoami[4194303]: segfault at 0 ip 000055d0c0a0c1cb sp 00007ffd4d3b0a60 error 6 in whoami[11cb,55d0c0a0c000+1000]\n"
              "[{t:12.6f}] Code: 00 00 b8 00 00 00 00 <c7> 00 01 00 00 00\n")
_STAND_INS = {
    "dmesg": ("journalctl", "print('-- No entries --')",
              "dmesg", "out = OLD\nif calls > 1: out += '[{t:12.6f}] usb 1-1: new device\\n'.format(t=time.monotonic())\nprint(out, end='')"),
    "journal": ("journalctl",
                "if '--show-cursor' in sys.argv: print(OLD + '-- cursor: s=0a1b;i=7', end='')\n"
                "elif any(a == '--after-cursor=s=0a1b;i=7' for a in sys.argv): print('Dec 07 10:00:01 host kernel: usb 1-1: new device')\n"
                "else: print(OLD, end='')",
                "dmesg", "sys.exit('dmesg: read kernel buffer failed: Operation not permitted')"),
}


@pytest.mark.parametrize("source", sorted(_STAND_INS))
def test_an_earlier_crash_with_a_wrapped_pid_is_not_the_commands(tmp_path: Path, programs: Path, source: str) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    old = _OLD_CRASH.format(t=time.monotonic() - 0.3)
    if source == "journal":
        old = "".join(f"Dec 07 10:00:00 host kernel: {line.split('] ', 1)[1]}\n" for line in old.splitlines())
    first, first_body, second, second_body = _STAND_INS[source]
    for name, body in ((first, first_body), (second, second_body)):
        (fake / name).write_text(
            f"#!{sys.executable}\nimport sys, time\nfrom pathlib import Path\nOLD = {old!r}\n"
            f"count = Path({str(fake / (name + '.calls'))!r})\n"
            "calls = int(count.read_text()) + 1 if count.exists() else 1\ncount.write_text(str(calls))\n" + body + "\n")
        (fake / name).chmod(0o755)
    done, bundle = collect(tmp_path, "--", str(programs / "ok"), env={"PATH": f"{fake}:{os.environ['PATH']}"})
    assert done.returncode == 0, done.stderr.decode()
    kernel = members(bundle)["kernel.log"].decode()
    assert "usb 1-1: new device" in kernel and "whoami[4194303]" not in kernel and "Code:" not in kernel
    assert report(bundle)["fault"] is None


def test_a_failed_write_leaves_the_old_bundle_and_no_stray_file(tmp_path: Path) -> None:
    from triage.collect.bundle import write
    from triage.collect.items import Item

    (tmp_path / "bundle.zip").write_text("the previous bundle")
    with pytest.raises(TypeError):
        write(tmp_path / "bundle.zip", [Item("a.txt", "fine", "text"), Item("b.txt", "broken", None)], {})
    assert [p.name for p in tmp_path.iterdir()] == ["bundle.zip"]
    assert (tmp_path / "bundle.zip").read_text() == "the previous bundle"


def test_issue_form_asks_for_the_bundle() -> None:
    import yaml

    form = yaml.safe_load((ROOT / ".github" / "ISSUE_TEMPLATE" / "gpu-crash.yml").read_text())
    fields = {b["id"]: b for b in form["body"] if "id" in b}
    assert {"bundle", "output", "command", "gpu", "os"} <= set(fields)
    assert all(fields[name]["validations"]["required"] for name in ("command", "gpu", "os"))
    # The bundle or a paste: GitHub allows no attachment in a field with ``render``, so the two are apart
    # and neither is required (a user who can only paste can still file the issue).
    assert "render" not in fields["bundle"]["attributes"] and fields["output"]["attributes"]["render"] == "shell"
    assert "triage collect" in form["body"][0]["attributes"]["value"]
