"""``triage desk``: the pages and the JSON API over HTTP, served by uvicorn on loopback as in use."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the desk extra is not installed: pip install -e '.[desk]'")
pytest.importorskip("uvicorn", reason="the desk extra is not installed: pip install -e '.[desk]'")

import jsonschema
import uvicorn
import yaml

from tests.conftest import CORPUS, ROOT
from tests.test_desk_storage import BACKENDS, open_store
from triage.desk.app import Settings, create_app
from triage.desk.storage import Filters, Store
from triage.desk.workers import Pool, WorkerCrashed

SEED = CORPUS / "seed-000-blit-kernels-device-libs-missing"
SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text(encoding="utf-8"))


def paste_of(case: Path) -> str:
    """Everything a user sent for a case, pasted as one text."""
    return "".join(p.read_text(encoding="utf-8") for p in sorted(case.iterdir())
                   if p.is_file() and p.name != "expected.yaml")


def expected_class(case: Path) -> str:
    return yaml.safe_load((case / "expected.yaml").read_text(encoding="utf-8"))["class"]


@dataclass
class Desk:
    """A desk served on loopback by uvicorn in a thread."""

    port: int
    store: Store
    settings: Settings

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
                ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def json(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             ) -> tuple[int, Any]:
        status, _, data = self.request(method, path, body, headers)
        return status, json.loads(data) if data.startswith((b"{", b"[")) else data.decode("utf-8")


@contextlib.contextmanager
def serving(settings: Settings, store: Store) -> Iterator[Desk]:
    """Start uvicorn on a loopback socket bound here (so the port is known before the app is made)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    settings.port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings, store), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the desk did not start")
        time.sleep(0.02)
    try:
        yield Desk(settings.port, store, settings)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    store = open_store("sqlite", tmp_path)
    with serving(Settings(max_upload=1 << 20, max_input=1 << 20), store) as running:
        yield running
    store.close()


def multipart(fields: dict[str, str], file: tuple[str, bytes] | None = None) -> tuple[bytes, dict[str, str]]:
    """A multipart/form-data body as a browser or ``curl -F`` sends it."""
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                     + value.encode("utf-8") + b"\r\n")
    if file is not None:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file[0]}"\r\n'
                     "Content-Type: application/octet-stream\r\n\r\n".encode() + file[1] + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def form_page(desk: Desk, path: str = "/") -> tuple[str, str]:
    """The page's CSRF cookie and the token its form carries."""
    status, headers, body = desk.request("GET", path)
    assert status == 200
    cookie = re.search(r"desk_csrf=([^;]+)", headers["set-cookie"]).group(1)
    token = re.search(r'name="csrf" value="([^"]+)"', body.decode()).group(1)
    return cookie, token


# --- the API ----------------------------------------------------------------------------------------------------


def test_api_takes_a_file_a_text_field_or_a_raw_body(desk: Desk) -> None:
    log = paste_of(SEED).encode("utf-8")
    body, headers = multipart({"submitter": "ana"}, ("user log.txt", log))
    status, first = desk.json("POST", "/api/v1/cases", body, headers)
    assert status == 201, first
    jsonschema.validate(first["report"], SCHEMA)
    assert first["report"]["diagnoses"][0]["class"] == expected_class(SEED)
    assert first["url"] == f"{desk.url}/cases/{first['id']}"
    assert (first["case"]["submitter"], first["case"]["source"], first["case"]["input_name"]) == (
        "ana", "file", "user log.txt")
    assert first["seen_before"]["count"] == 0

    body, headers = multipart({"text": log.decode()})
    status, second = desk.json("POST", "/api/v1/cases", body, headers)
    assert status == 201 and second["seen_before"]["count"] == 1
    assert second["seen_before"]["cases"][0]["id"] == first["id"]

    status, third = desk.json("POST", "/api/v1/cases?submitter=bot", log, {"X-File-Name": "hip%20run.log"})
    assert status == 201 and third["case"]["input_name"] == "hip run.log" and third["case"]["submitter"] == "bot"
    assert third["seen_before"]["count"] == 2

    status, urlencoded = desk.json("POST", "/api/v1/cases", b"text=hipErrorNoBinaryForGpu",
                                   {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 201 and urlencoded["case"]["source"] == "api"

    # what the README's `curl --data-binary @hip.log -H 'X-File-Name: hip.log'` sends: a raw log labelled as a form
    curl_form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, as_curl = desk.json("POST", "/api/v1/cases", log, {**curl_form, "X-File-Name": "hip.log"})
    assert status == 201 and as_curl["case"]["input_name"] == "hip.log"
    assert as_curl["report"]["diagnoses"][0]["class"] == expected_class(SEED)
    status, unnamed = desk.json("POST", "/api/v1/cases", log, curl_form)
    assert status == 201 and unnamed["report"]["diagnoses"][0]["class"] == expected_class(SEED)

    status, listed = desk.json("GET", f"/api/v1/cases?class={expected_class(SEED)}")
    assert status == 200 and listed["total"] == 5
    assert [c["id"] for c in listed["cases"]] == [unnamed["id"], as_curl["id"], third["id"], second["id"], first["id"]]
    assert sum(week["cases"] for week in listed["weeks"]) == 5

    status, one = desk.json("GET", f"/api/v1/cases/{first['id']}")
    assert status == 200 and one["report"] == first["report"] and one["case"]["status"] == "open"


def test_a_file_sent_as_the_text_field_or_a_text_sent_as_the_file_field_is_triaged(desk: Desk) -> None:
    log = paste_of(SEED).encode("utf-8")
    boundary = uuid.uuid4().hex
    kind = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    # curl -F text=@hip.log: a file part named text
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="text"; filename="hip.log"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + log + f"\r\n--{boundary}--\r\n".encode()
    status, made = desk.json("POST", "/api/v1/cases", body, kind)
    assert status == 201 and (made["case"]["class"], made["case"]["input_name"], made["case"]["source"]) == (
        expected_class(SEED), "hip.log", "file")
    # curl -F file=<hip.log: the file's text as a field named file
    body, headers = multipart({"file": log.decode()})
    status, made = desk.json("POST", "/api/v1/cases", body, headers)
    assert status == 201 and made["case"]["class"] == expected_class(SEED) and made["seen_before"]["count"] == 1


def test_a_file_name_is_shown_as_the_user_named_it(desk: Desk) -> None:
    for sent, shown in (('say%22hi%22 100%.log', 'say"hi" 100%.log'), ("ré sumé.log", "ré sumé.log"),
                        ("../../etc/passwd", "passwd"), ("line%0Abreak.log", "line_break.log"),
                        ("evil\u202egol.exe", "evil_gol.exe")):
        body, headers = multipart({}, (sent, b"segfault"))
        status, made = desk.json("POST", "/api/v1/cases", body, headers)
        assert status == 201 and made["case"]["input_name"] == shown, sent


def test_a_zipped_bundle_through_the_form_and_the_api(desk: Desk, tmp_path: Path) -> None:
    bundle = tmp_path / "user-bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for path in sorted(SEED.iterdir()):
            if path.name != "expected.yaml":
                archive.write(path, f"report/{path.name}")
    cookie, token = form_page(desk)
    body, headers = multipart({"csrf": token, "text": "", "submitter": "ana"}, ("user-bundle.zip", bundle.read_bytes()))
    status, answer, _ = desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}"})
    assert status == 303
    case = desk.store.get(int(answer["location"].rsplit("/", 1)[1]))
    assert (case["klass"], case["source"], case["input_name"], case["submitter"]) == (
        expected_class(SEED), "file", "user-bundle.zip", "ana")
    status, made = desk.json("POST", "/api/v1/cases", bundle.read_bytes(), {"X-File-Name": "user-bundle.zip"})
    assert status == 201 and made["case"]["class"] == expected_class(SEED)
    assert any(a["name"].startswith("user-bundle.zip") for a in made["report"]["artifacts"])
    assert made["seen_before"]["count"] == 1


def test_the_retriage_button_needs_its_csrf_token(desk: Desk) -> None:
    desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    cookie, token = form_page(desk, "/retriage")
    body, headers = multipart({"csrf": "forged"})
    assert desk.request("POST", "/retriage", body, {**headers, "Cookie": f"desk_csrf={cookie}"})[0] == 403
    body, headers = multipart({"csrf": token})
    status, _, page = desk.request("POST", "/retriage", body, {**headers, "Cookie": f"desk_csrf={cookie}"})
    assert status == 200 and "1 case re-triaged" in page.decode() and "0 changed" in page.decode()


def test_api_refuses_nothing_and_unknown_cases_in_one_line(desk: Desk) -> None:
    status, message = desk.json("POST", "/api/v1/cases", b"  \n")
    assert status == 400 and "Nothing to triage" in message and message.count("\n") == 1
    # a form whose text is empty (curl -d text= -d submitter=ana) is not a log of its own field names
    for body in (b"text=&submitter=ana", b"submitter=ana&text=%20%0A&redact=1"):
        status, message = desk.json("POST", "/api/v1/cases", body,
                                    {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 400 and "Nothing to triage" in message
    status, message = desk.json("GET", "/api/v1/cases/999")
    assert status == 404 and "no case 999" in message
    status, message = desk.json("PATCH", "/api/v1/cases/999", b'{"status": "closed"}')
    assert status == 404
    status, message = desk.json("PATCH", "/api/v1/cases/1", b'{"status": "solved"}')
    assert status == 400 and "open, answered, closed" in message


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_case_number_past_the_database_integers_is_no_case(tmp_path: Path, backend: str) -> None:
    store = open_store(backend, tmp_path)
    with serving(Settings(), store) as desk:
        cookie, token = form_page(desk)
        for huge in ("2147483648", "99999999999999999999"):  # past PostgreSQL's INTEGER, past SQLite's
            for method, path in (("GET", f"/cases/{huge}"), ("GET", f"/cases/{huge}/report.html"),
                                 ("GET", f"/api/v1/cases/{huge}")):
                status, _, message = desk.request(method, path)
                assert (status, message) == (404, f"There is no case {huge}; the list is at /cases.\n".encode())
            status, message = desk.json("PATCH", f"/api/v1/cases/{huge}", b'{"status": "closed"}')
            assert status == 404 and f"no case {huge}" in message
            body, headers = multipart({"csrf": token, "status": "closed", "note": ""})
            status, _, message = desk.request("POST", f"/cases/{huge}", body,
                                              {**headers, "Cookie": f"desk_csrf={cookie}"})
            assert status == 404 and f"no case {huge}".encode() in message
    store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_nul_characters_in_a_note_or_a_filter_are_dropped(tmp_path: Path, backend: str) -> None:
    store = open_store(backend, tmp_path)
    with serving(Settings(), store) as desk:
        status, made = desk.json("POST", "/api/v1/cases?submitter=a%00na", paste_of(SEED).encode())
        assert status == 201 and made["case"]["submitter"] == "ana"
        status, changed = desk.json("PATCH", f"/api/v1/cases/{made['id']}",
                                    b'{"note": "rebuilt\\u0000 for gfx1201"}')
        assert status == 200 and changed["case"]["note"] == "rebuilt for gfx1201"
        for path in ("/cases?q=rebuilt%00", "/cases?class=%00&os=linux%00",
                     "/api/v1/cases?q=%00rebuilt&status=open%00"):
            status, _, page = desk.request("GET", path)
            assert status == 200, (path, page)
            assert b'"total":1' in page or b'id="total">1 case match' in page, path
    store.close()


def test_unknown_texts_without_an_error_line_or_a_stack_are_not_seen_before(desk: Desk) -> None:
    for text in ("hello world", "PK\x03\x04 not really a zip", "hello world"):
        status, made = desk.json("POST", "/api/v1/cases", text.encode(), {"X-File-Name": "a.txt"})
        assert status == 201 and made["case"]["class"] == "unknown"
        assert made["seen_before"]["count"] == 0, text
    status, _, page = desk.request("GET", f"/cases/{made['id']}")
    assert 'id="seen">seen before: 0' in page.decode()
    for n, text in enumerate(("frobnicate error: widget 12 failed at 0x1234",
                              "frobnicate error: widget 97 failed at 0x9999")):
        status, made = desk.json("POST", "/api/v1/cases", text.encode())
        assert status == 201 and made["case"]["class"] == "unknown" and made["seen_before"]["count"] == n


def test_the_frameworks_refusals_are_one_line_that_says_what_to_do(desk: Desk) -> None:
    two_files = b"".join(b'--b\r\nContent-Disposition: form-data; name="file"; filename="%s.log"\r\n\r\nsegfault\r\n'
                         % name for name in (b"a", b"b")) + b"--b--\r\n"
    for method, path, body, headers, status, words in (
            ("GET", "/cases/abc", None, {}, 404, "There is no case 'abc': cases are numbered"),
            ("GET", "/api/v1/cases/1.5", None, {}, 404, "There is no case '1.5'"),
            ("GET", "/case/1", None, {}, 404, "There is no such page"),
            ("DELETE", "/api/v1/cases/1", None, {}, 405, "DELETE is not taken at /api/v1/cases/1"),
            ("POST", "/api/v1/cases", b"log", {"Content-Type": "multipart/form-data"}, 400,
             "The form cannot be read (Missing boundary in multipart.)"),
            ("POST", "/api/v1/cases", two_files, {"Content-Type": "multipart/form-data; boundary=b"}, 400,
             "Maximum number of files is 1"),
    ):
        got, answer, message = desk.request(method, path, body, headers)
        text = message.decode()
        assert (got, answer["content-type"].split(";")[0]) == (status, "text/plain"), (path, text)
        assert words in text and text.count("\n") == 1, text
    assert desk.store.search(Filters())[1] == 0


def test_status_and_note_through_the_api(desk: Desk) -> None:
    status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    status, changed = desk.json("PATCH", f"/api/v1/cases/{made['id']}",
                                json.dumps({"status": "answered",
                                            "note": "LD_PRELOAD the system HIP (ticket QX-7731)"}).encode(),
                                {"Content-Type": "application/json"})
    assert status == 200 and (changed["case"]["status"], changed["case"]["note"]) == (
        "answered", "LD_PRELOAD the system HIP (ticket QX-7731)")
    status, later = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    assert later["seen_before"]["cases"][0]["note"] == "LD_PRELOAD the system HIP (ticket QX-7731)"
    assert desk.json("GET", "/api/v1/cases?status=answered")[1]["total"] == 1
    for path in ("/api/v1/cases?status=answerd", "/cases?status=answerd"):  # a typo is said, not an empty list
        status, _, body = desk.request("GET", path)
        assert status == 400 and b"open, answered, closed" in body
    assert desk.json("GET", "/api/v1/cases?q=qx-7731")[1]["total"] == 1


def test_a_status_or_note_that_would_not_be_kept_as_sent_is_refused(desk: Desk) -> None:
    status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    path = f"/api/v1/cases/{made['id']}"
    for body in ({"stauts": "closed"}, {}, {"status": "closed", "notes": "x"}, {"note": "x" * 20001}):
        status, message = desk.json("PATCH", path, json.dumps(body).encode())
        assert status == 400 and message.count("\n") == 1, body
    assert "20001 characters" in message
    assert desk.json("GET", path)[1]["case"]["status"] == "open" and desk.json("GET", path)[1]["case"]["note"] == ""
    status, changed = desk.json("PATCH", path, json.dumps({"note": "y" * 20000}).encode())
    assert status == 200 and changed["case"]["note"] == "y" * 20000
    # the page's text area sends CRLF line ends and counts each as one character
    cookie, token = form_page(desk, f"/cases/{made['id']}")
    note = "line\r\n" * 4000
    body, headers = multipart({"csrf": token, "status": "answered", "note": note})
    assert desk.request("POST", f"/cases/{made['id']}", body, {**headers, "Cookie": f"desk_csrf={cookie}"})[0] == 303
    assert desk.json("GET", path)[1]["case"]["note"] == "line\n" * 4000
    body, headers = multipart({"csrf": token, "status": "closed", "note": "z" * 20001})
    headers["Cookie"] = f"desk_csrf={cookie}"
    status, _, message = desk.request("POST", f"/cases/{made['id']}", body, headers)
    assert status == 400 and b"over the 20000" in message
    assert desk.json("GET", path)[1]["case"]["status"] == "answered"


def test_openapi_is_served_with_the_report_schema(desk: Desk) -> None:
    status, spec = desk.json("GET", "/api/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.")
    assert {"/api/v1/cases", "/api/v1/cases/{case_id}", "/api/v1/retriage"} <= set(spec["paths"])
    post = spec["paths"]["/api/v1/cases"]["post"]
    assert {"multipart/form-data", "application/x-www-form-urlencoded", "application/octet-stream"} <= set(
        post["requestBody"]["content"])
    assert spec["components"]["schemas"]["Report"]["properties"].keys() == SCHEMA["properties"].keys()
    # what the refusals are: a missing case is a 404 line of text, never a 422 validation error
    one = spec["paths"]["/api/v1/cases/{case_id}"]
    assert "404" in one["get"]["responses"] and {"400", "404"} <= set(one["patch"]["responses"])
    assert not any("422" in op["responses"] for ops in spec["paths"].values() for op in ops.values())
    assert "HTTPValidationError" not in json.dumps(spec)
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(spec)))
    assert "#/$defs/" not in json.dumps(spec) and refs <= set(spec["components"]["schemas"])  # every one resolves
    # the report in an answer is valid against the served description of it, not only against the shipped schema
    status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    jsonschema.validate(made["report"], {**spec["components"]["schemas"]["Report"], "components": spec["components"]})
    status, message = desk.json("GET", "/api/v1/cases/x")
    assert status == 404 and message.endswith("\n")


def test_redacted_cases_keep_no_user_or_host_names(desk: Desk) -> None:
    log = ("ana@render-box-07:~$ ./app\n:1:hip_code_object.cpp:507 : Error: hipErrorNoBinaryForGpu: Unable to find "
           "code object for all current devices!\n/home/ana/app/run.sh: line 4: 1234 Aborted (core dumped)\n")
    status, made = desk.json("POST", "/api/v1/cases?redact=1", log.encode(), {"X-File-Name": "ana-render-box-07.log"})
    assert status == 201 and made["case"]["redacted"] is True
    stored = desk.store.get(made["id"], "input_data", "report_json", "report_html")
    for text in (stored["input_data"].decode(), stored["report_json"], stored["report_html"], stored["input_name"]):
        assert "render-box-07" not in text and "/home/ana" not in text
    assert stored["input_kind"] == "text"
    status, plain = desk.json("POST", "/api/v1/cases", log.encode())
    assert desk.store.get(plain["id"], "input_data")["input_data"] == log.encode()


def test_redact_0_or_false_keeps_the_input_as_sent(desk: Desk) -> None:
    log = "ana@render-box-07:~$ ./app\n:1:hip_code_object.cpp:507 : Error: hipErrorNoBinaryForGpu\n"
    for flag, redacted in (("0", False), ("false", False), ("off", False), ("1", True), ("on", True)):
        body, headers = multipart({"text": log, "redact": flag})
        status, made = desk.json("POST", "/api/v1/cases", body, headers)
        assert status == 201 and made["case"]["redacted"] is redacted, flag
        status, made = desk.json("POST", f"/api/v1/cases?redact={flag}", log.encode())
        assert made["case"]["redacted"] is redacted, flag
    cookie, token = form_page(desk)
    body, headers = multipart({"csrf": token, "text": log, "redact": "0"})
    status, answer, _ = desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}"})
    case = desk.store.get(int(answer["location"].rsplit("/", 1)[1]), "input_data")
    assert case["redacted"] is False and case["input_data"] == log.encode()


def test_retriage_shows_which_cases_changed_class(tmp_path: Path) -> None:
    shipped = ROOT / "signatures"
    older = tmp_path / "signatures"
    shutil.copytree(shipped, older)
    matched = [p for p in older.glob("*.yaml") if (yaml.safe_load(p.read_text()) or {}).get("id") ==
               "hip-blit-kernels-device-libs-missing"]
    assert matched
    for path in matched:
        path.unlink()
    store = open_store("sqlite", tmp_path)
    with serving(Settings(signatures=older), store) as desk:
        status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
        status, _ = desk.json("POST", "/api/v1/cases", paste_of(CORPUS / "seed-002-hipmoduleload-access-violation-"
                                                                          "windows").encode())
        assert status == 201
        status, redacted = desk.json("POST", "/api/v1/cases?redact=1", paste_of(SEED).encode())  # kept as text
        assert made["case"]["class"] != "device-libs-missing" and redacted["case"]["class"] == made["case"]["class"]
    with serving(Settings(signatures=older, max_input=16), store) as desk:  # its input is over the limit: not kept
        assert desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())[0] == 201
    with serving(Settings(signatures=shipped, workers=1), store) as desk:
        status, result = desk.json("POST", "/api/v1/retriage")
        assert status == 200 and result["retriaged"] == 3 and result["failed"] == []
        assert result["without_input"] == 1  # said, not silently left out
        assert [(c["case_id"], c["new_class"]) for c in result["changed"]] == [
            (made["id"], "device-libs-missing"), (redacted["id"], "device-libs-missing")]
        assert result["changed"][0]["old_class"] == made["case"]["class"]
        status, now = desk.json("GET", f"/api/v1/cases/{made['id']}")
        assert now["case"]["class"] == "device-libs-missing" and now["report"]["diagnoses"][0]["class"] == \
            "device-libs-missing"
        assert now["changes"][0]["new_signature"] == "hip-blit-kernels-device-libs-missing"
        status, _, page = desk.request("GET", f"/cases/{made['id']}")
        assert "Re-triaged" in page.decode() and "device-libs-missing" in page.decode()
        status, _, listing = desk.request("GET", "/retriage")
        assert f'href="/cases/{made["id"]}"' in listing.decode()
    store.close()


def _die() -> None:
    os._exit(3)  # a worker killed by a crash in a native library


def _answer() -> int:
    return 42


def test_a_worker_that_dies_fails_only_its_own_request() -> None:
    pool = Pool(1)
    try:
        with pytest.raises(WorkerCrashed):
            pool.call(_die)
        assert pool.call(_answer) == 42  # a new worker
        with pytest.raises(WorkerCrashed):
            asyncio.run(pool.run(_die))
        assert asyncio.run(pool.run(_answer)) == 42
    finally:
        pool.close()


# --- the pages --------------------------------------------------------------------------------------------------


def test_pages_have_a_strict_policy_and_a_csrf_cookie(desk: Desk) -> None:
    status, headers, body = desk.request("GET", "/")
    assert status == 200
    assert "script-src" not in headers["content-security-policy"]  # no script at all: default-src 'none'
    assert "default-src 'none'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert re.search(r"desk_csrf=[^;]+; HttpOnly; Path=/; SameSite=strict", headers["set-cookie"], re.IGNORECASE)
    assert b'<form method="post" action="/cases" enctype="multipart/form-data"' in body


def test_the_form_needs_its_csrf_token_and_the_same_origin(desk: Desk) -> None:
    cookie, token = form_page(desk)
    body, headers = multipart({"text": paste_of(SEED)})
    status, _, message = desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}"})
    assert status == 403 and b"reload the page" in message
    body, headers = multipart({"text": paste_of(SEED), "csrf": "forged"})
    assert desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}"})[0] == 403
    body, headers = multipart({"text": paste_of(SEED), "csrf": token})
    assert desk.request("POST", "/cases", body, headers)[0] == 403  # no cookie
    status, _, message = desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}",
                                                               "Origin": "http://evil.example"})
    assert status == 403 and b"own pages" in message
    status, _, message = desk.request("POST", "/api/v1/cases", b"log", {"Sec-Fetch-Site": "cross-site"})
    assert status == 403
    assert desk.store.search(Filters())[1] == 0
    status, headers_, _ = desk.request("POST", "/cases", body, {**headers, "Cookie": f"desk_csrf={cookie}",
                                                                "Origin": desk.url})
    assert status == 303 and re.fullmatch(r"/cases/\d+", headers_["location"])


def test_the_case_page_escapes_everything_the_user_sent(desk: Desk) -> None:
    hostile = ('<script>alert(1)</script>\n:1:hip_code_object.cpp:507 : Error: hipErrorNoBinaryForGpu "><img src=x '
               'onerror=alert(2)>\n')
    status, made = desk.json("POST", "/api/v1/cases?submitter=%3Cb%3Eeve%3C/b%3E", hostile.encode(),
                             {"X-File-Name": "%3Csvg%20onload=alert(3)%3E.log"})
    assert status == 201
    desk.json("PATCH", f"/api/v1/cases/{made['id']}", json.dumps({"note": "<iframe src=//evil>"}).encode())
    desk.json("POST", "/api/v1/cases", hostile.encode())
    for path in (f"/cases/{made['id']}", f"/cases/{made['id'] + 1}", "/cases", "/cases?q=%3Cscript%3E"):
        status, _, page = desk.request("GET", path)
        text = page.decode()
        assert status == 200
        for raw in ("<script", "<img", "<svg", "<iframe src=//evil", "<b>eve"):
            assert raw not in text, (path, raw)
    assert "&lt;iframe src=//evil&gt;" in desk.request("GET", f"/cases/{made['id'] + 1}")[2].decode()
    status, headers, report = desk.request("GET", f"/cases/{made['id']}/report.html")
    assert "sandbox allow-scripts" in headers["content-security-policy"]
    assert b"<script>alert(1)" not in report


def test_right_to_left_text_a_user_sent_cannot_reorder_the_page_around_it(desk: Desk) -> None:
    rlo = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: would show the rest of the line (status, date) mirrored
    status, made = desk.json("POST", "/api/v1/cases?submitter=eve%E2%80%AEnimda", paste_of(SEED).encode())
    assert status == 201
    desk.json("PATCH", f"/api/v1/cases/{made['id']}", json.dumps({"note": f"fixed {rlo}by nobody"}).encode())
    desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
    case, listing = (desk.request("GET", path)[2].decode() for path in (f"/cases/{made['id'] + 1}", "/cases"))
    assert f"<bdi>eve{rlo}nimda</bdi>" in case and f'<blockquote dir="auto">fixed {rlo}by nobody</blockquote>' in case
    assert f"<td><bdi>eve{rlo}nimda</bdi></td>" in listing
    own = desk.request("GET", f"/cases/{made['id']}")[2].decode()
    assert f"by <bdi>eve{rlo}nimda</bdi> (" in own and "<td><bdi>upload</bdi>," in own


def test_list_page_filters_and_counts_per_week(desk: Desk) -> None:
    for case in (SEED, SEED, CORPUS / "seed-003-getdevicekernel-null-gfx906-only-kernel"):
        assert desk.json("POST", "/api/v1/cases", paste_of(case).encode())[0] == 201
    status, _, page = desk.request("GET", "/cases")
    text = page.decode()
    assert status == 200 and 'id="total">3 cases' in text and 'id="weeks"' in text
    assert 'value="3"' in text  # the week's bar: three cases
    status, _, page = desk.request("GET", f"/cases?class={expected_class(SEED)}")
    assert 'id="total">2 cases match' in page.decode()
    gfx = desk.store.get(3)["gfx_arch"]
    status, _, page = desk.request("GET", f"/cases?gfx_arch={gfx}&q=")
    assert f"<option selected>{gfx}</option>" in page.decode()


def test_the_list_pages_through_cases_as_long_as_asked(desk: Desk) -> None:
    for n in range(5):
        assert desk.json("POST", "/api/v1/cases", f"hipErrorNoBinaryForGpu on run {n}".encode())[0] == 201
    pages: list[list[str]] = []
    path = "/cases?limit=2"
    while path:
        status, _, page = desk.request("GET", path.replace("&amp;", "&"))
        text = page.decode()
        assert status == 200, text
        pages.append(re.findall(r'<tr><td><a href="/cases/(\d+)">', text))
        older = re.search(r'<a href="([^"]+)">Older</a>', text)
        path = older.group(1) if older else ""
    assert pages == [["5", "4"], ["3", "2"], ["1"]]  # before, the second page was 50 long


def test_uploads_are_bounded_before_and_while_they_are_read(desk: Desk) -> None:
    big = b"x" * ((1 << 20) + (128 << 10))
    status, _, message = desk.request("POST", "/api/v1/cases", big)
    assert status == 413 and b"1 MiB limit" in message
    # A chunked body declares no size: counted while read, refused once past the limit.
    connection = http.client.HTTPConnection("127.0.0.1", desk.port, timeout=60)
    try:
        connection.request("POST", "/api/v1/cases", body=iter([big[i:i + 65536] for i in range(0, len(big), 65536)]),
                           encode_chunked=True)
        response = connection.getresponse()
        assert response.status == 413
    finally:
        connection.close()
    # No body after the bad length: a server closing with bytes unread resets the connection, and the reset can
    # overtake its answer (seen once in CI as ConnectionResetError).
    assert desk.request("POST", "/api/v1/cases", b"", {"Content-Length": "-1"})[0] in (400, 413)
    assert desk.store.search(Filters())[1] == 0


def test_a_body_sent_too_slowly_is_refused(tmp_path: Path) -> None:
    store = open_store("sqlite", tmp_path)
    with serving(Settings(request_timeout=1.0), store) as desk:
        with socket.create_connection(("127.0.0.1", desk.port), timeout=30) as sock:
            sock.sendall(f"POST /api/v1/cases HTTP/1.1\r\nHost: 127.0.0.1:{desk.port}\r\n"
                         "Content-Length: 1000\r\n\r\nsegfault".encode())
            answer = b""
            while chunk := sock.recv(4096):  # the server answers without the other 992 bytes
                answer += chunk
                head, _, body = answer.partition(b"\r\n\r\n")
                length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                if length and len(body) >= int(length.group(1)):  # the whole answer, however it arrived in pieces
                    break
        assert answer.startswith(b"HTTP/1.1 408") and b"longer than 1 s" in answer
        assert desk.store.search(Filters())[1] == 0
    store.close()


def test_head_is_answered_like_get_without_a_body(desk: Desk) -> None:
    for path in ("/", "/cases", "/api/v1/cases", "/api/openapi.json", "/static/desk.css"):
        get_status, get_headers, _ = desk.request("GET", path)
        status, headers, body = desk.request("HEAD", path)
        assert (status, body, headers["content-type"]) == (get_status, b"", get_headers["content-type"]), path
    assert desk.request("HEAD", "/cases/7")[0] == 404


def test_only_requests_addressed_to_localhost_are_answered(desk: Desk) -> None:
    status, _, message = desk.request("GET", "/", headers={"Host": "rebound.example"})
    assert status == 403 and b"127.0.0.1" in message
    assert desk.request("GET", "/", headers={"Host": f"localhost:{desk.port}"})[0] == 200


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_submissions_are_all_stored(tmp_path: Path, backend: str) -> None:
    store = open_store(backend, tmp_path)
    log = paste_of(SEED).encode()
    results: list[tuple[int, Any]] = []
    lock = threading.Lock()
    with serving(Settings(workers=2), store) as desk:  # triaged in worker processes, as `triage desk` runs
        def submit(n: int) -> None:
            got = desk.json("POST", f"/api/v1/cases?submitter=c{n}", log)
            with lock:
                results.append(got)

        threads = [threading.Thread(target=submit, args=(n,)) for n in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [status for status, _ in results] == [201] * 12
        assert len({made["id"] for _, made in results}) == 12
        assert sorted(made["seen_before"]["count"] for _, made in results) == list(range(12))
        assert desk.json("GET", "/api/v1/cases")[1]["total"] == 12
    store.close()


# --- access beyond loopback -------------------------------------------------------------------------------------


def test_other_addresses_need_a_token_or_a_proxy_header() -> None:
    assert Settings(host="0.0.0.0").refusal() is not None
    assert Settings(host="192.0.2.7", token="t" * 20).refusal() is None
    assert Settings(host="::", auth_header="X-Forwarded-User").refusal() is None
    assert Settings(host="127.0.0.1").refusal() is None and Settings(host="::1").refusal() is None


def test_the_command_refuses_to_start_open_on_the_network(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "triage", "desk", "--host", "0.0.0.0", "--database",
                           f"sqlite:///{tmp_path / 'd.sqlite3'}"], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "HIP_TRIAGE_DESK_TOKEN": ""})
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "--auth-header" in done.stderr
    assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "triage", "desk", "--migrate-only", "--database",
                           f"sqlite:///{tmp_path / 'd.sqlite3'}"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0 and (tmp_path / "d.sqlite3").is_file()


def test_the_command_serves_until_ctrl_c_and_says_when_the_port_is_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "triage", "desk", "--port", str(port), "--database",
                               f"sqlite:///{tmp_path / 'd.sqlite3'}"], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "HIP_TRIAGE_DESK_DATABASE": ""}
    process = subprocess.Popen([sys.executable, "-m", "triage", "desk", "--port", str(port), "--workers", "1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        desk = Desk(port, None, Settings())  # type: ignore[arg-type]
        deadline = time.monotonic() + 60
        while True:
            try:
                status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
                break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
                time.sleep(0.2)
        assert status == 201 and made["case"]["class"] == expected_class(SEED)
        assert (tmp_path / "data" / "hip-triage" / "desk.sqlite3").is_file()  # the user's data folder
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(60)
        finally:
            if process.poll() is None:
                process.kill()
    assert code == 0 and "Traceback" not in process.stderr.read()


def test_token_access(tmp_path: Path) -> None:
    token = "s3cret-token-of-the-desk"
    store = open_store("sqlite", tmp_path)
    with serving(Settings(token=token), store) as desk:
        status, message = desk.json("GET", "/api/v1/cases")
        assert status == 401 and "Authorization: Bearer" in message
        status, headers, _ = desk.request("GET", "/cases")
        assert status == 303 and headers["location"] == "/login"
        assert desk.json("GET", "/api/v1/cases", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert desk.json("GET", "/api/v1/cases", headers={"Authorization": f"Bearer {token}"})[0] == 200
        cookie, csrf = form_page(desk, "/login")
        body, headers = multipart({"token": "guess", "csrf": csrf})
        assert desk.request("POST", "/login", body, {**headers, "Cookie": f"desk_csrf={cookie}"})[0] == 401
        body, headers = multipart({"token": token, "csrf": csrf})
        status, answer, _ = desk.request("POST", "/login", body, {**headers, "Cookie": f"desk_csrf={cookie}"})
        assert status == 303
        signed_in = re.search(r"desk_token=([^;]+)", answer["set-cookie"]).group(1)
        assert desk.request("GET", "/cases", headers={"Cookie": f"desk_token={signed_in}"})[0] == 200
    store.close()


def test_proxy_header_access_names_the_submitter(tmp_path: Path) -> None:
    store = open_store("sqlite", tmp_path)
    with serving(Settings(auth_header="X-Forwarded-User"), store) as desk:
        status, message = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode())
        assert status == 401 and "X-Forwarded-User" in message
        status, made = desk.json("POST", "/api/v1/cases?submitter=mallory", paste_of(SEED).encode(),
                                 {"X-Forwarded-User": "ana@example.com"})
        assert status == 201 and made["case"]["submitter"] == "ana@example.com"
    store.close()


def test_behind_a_reverse_proxy_its_public_name_and_origin_are_accepted(tmp_path: Path) -> None:
    store = open_store("sqlite", tmp_path)
    settings = Settings(auth_header="X-Forwarded-User", public_url="https://desk.example.com")
    with serving(settings, store) as desk:
        user = {"X-Forwarded-User": "ana"}
        status, headers, _ = desk.request("GET", "/", headers={**user, "Host": "desk.example.com"})
        assert status == 200 and "secure" in headers["set-cookie"].lower()  # served over https: cookies stay there
        assert desk.request("GET", "/", headers={**user, "Host": "other.example.com"})[0] == 403
        proxied = {**user, "Host": f"127.0.0.1:{desk.port}", "Origin": "https://desk.example.com"}
        status, made = desk.json("POST", "/api/v1/cases", paste_of(SEED).encode(), proxied)
        assert status == 201 and made["url"] == f"https://desk.example.com/cases/{made['id']}"  # not http://127.0.0.1
        status, one = desk.json("GET", f"/api/v1/cases/{made['id']}", headers={**user, "Host": "desk.example.com"})
        assert one["url"] == f"https://desk.example.com/cases/{made['id']}"  # not http:// (the proxy's link to it)
        assert desk.json("POST", "/api/v1/cases", paste_of(SEED).encode(),
                         {**proxied, "Origin": "http://desk.example.com"})[0] == 403  # not the public scheme
        assert desk.json("POST", "/api/v1/cases", paste_of(SEED).encode(),
                         {**proxied, "Origin": "https://evil.example"})[0] == 403
    store.close()
