"""The desk's web pages and JSON API (FastAPI on uvicorn), over a ``Store`` of cases.

Pages: ``/`` (paste or drop a file), ``/cases`` (the list, its filters and counts per week),
``/cases/ID`` (the permalink: verdict, "seen before", status and note, the HTML report),
``/retriage``. API: ``/api/v1/cases`` (POST a multipart file, a form ``text`` or a raw body;
GET a filtered list), ``/api/v1/cases/ID`` (GET, PATCH status and note), ``/api/v1/retriage``;
the OpenAPI description is at ``/api/openapi.json``.

Access (``Guard``): on loopback no login, but only requests addressed to a loopback name
(no DNS rebinding); otherwise an access token (``Authorization: Bearer``, or a cookie the
sign-in page sets) or a header a reverse proxy sets after its own login. Every POST, PATCH
must come from this site (Origin / Sec-Fetch-Site), and a page's form must also carry the
CSRF token of its cookie (double submit, SameSite=Strict). Bodies are bounded before and
while they are read. Triage and database work run in worker threads; every request has
its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hmac
import json
import logging
import re
import secrets
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from triage import __version__
from triage.desk import intake
from triage.desk.storage import Filters, Store, StoreError, now
from triage.desk.workers import Pool
from triage.report import percent

TEMPLATES = Path(__file__).resolve().parent / "templates"
CSRF_COOKIE = "desk_csrf"
TOKEN_COOKIE = "desk_token"
PAGE_SIZE = 50
WEEKS = 26  # weeks of counts on the list page and in the API's list
MAX_PAGE = 500
NOTE_CHARS = 20000
MAX_ID = (1 << 31) - 1  # the largest id an INTEGER column holds on PostgreSQL (SQLite's go further)
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_OPEN_PATHS = ("/login", "/static/desk.css")
_UNSAFE = ("POST", "PUT", "PATCH", "DELETE")
FILTER_LABELS = (("class", "Class"), ("signature", "Signature"), ("gfx_arch", "GPU"), ("os", "OS"), ("rocm", "ROCm"),
                 ("status", "Status"))
PAGE_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; frame-src 'self'; form-action 'self'; "
            "base-uri 'none'; frame-ancestors 'none'")
REPORT_CSP = "sandbox allow-scripts; frame-ancestors 'self'"
log = logging.getLogger("triage.desk")


@dataclass
class Settings:
    """How one desk runs; ``token`` and ``auth_header`` are the two ways to open it beyond loopback."""

    database: str | None = None
    host: str = "127.0.0.1"
    port: int = 8766
    max_upload: int = 50 << 20
    max_input: int = intake.DEFAULT_MAX_INPUT
    token: str | None = None
    auth_header: str | None = None
    signatures: Path | None = None
    workers: int = 0  # processes that triage (0: a thread of the server)
    request_timeout: float = 60.0  # seconds a client has to send a request's body
    public_url: str | None = None  # the address users open when a reverse proxy is in front (its Host and Origin)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def loopback(self) -> bool:
        from triage.server import is_loopback

        return is_loopback(self.host)

    def refusal(self) -> str | None:
        """Why the desk must not start with these settings, or None."""
        if self.loopback or self.token or self.auth_header:
            return None
        return (f"{self.host} is not a loopback address: give an access token (--token-file FILE or "
                "HIP_TRIAGE_DESK_TOKEN) or the header your reverse proxy sets after its login (--auth-header "
                "X-Forwarded-User), or listen on 127.0.0.1")


class TooLarge(Exception):
    """A request body went past the upload limit while it was read."""


class TooSlow(Exception):
    """A request body took longer than the request timeout to arrive."""


def _yes(value: Any) -> bool:
    """A form or query flag: 1, true, yes or on (a checkbox sends 1); 0, false, no, off or nothing is no."""
    return isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g}"


def _refuse(status: int, message: str) -> PlainTextResponse:
    """One line of plain text saying what to do next."""
    return PlainTextResponse(" ".join(message.split()) + "\n", status_code=status,
                             headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


class Guard:
    """ASGI middleware: host check, access, same-origin unsafe methods and the body limit, before any route."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "HEAD":  # answered as a GET without its body (uvicorn sends none), as monitors ask
            scope = {**scope, "method": "GET"}
        headers = Headers(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        limit = self.settings.max_upload + (64 << 10)  # room for the multipart framing and the other fields
        deadline = asyncio.get_running_loop().time() + self.settings.request_timeout
        received, complete = 0, False

        async def bounded() -> dict:
            """The body's next part, within the size limit and the request's deadline (once the body is whole,
            a wait for the client to go away is not bounded)."""
            nonlocal received, complete
            if complete:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), deadline - asyncio.get_running_loop().time())
            except TimeoutError:
                raise TooSlow from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                complete = not message.get("more_body", False)
                if received > limit:
                    raise TooLarge
            return message

        await self.app(scope, bounded, send)

    def refusal(self, scope: dict, headers: Headers) -> Response | None:
        settings = self.settings
        host = (headers.get("host") or "").lower()
        public = urllib.parse.urlsplit(settings.public_url or "")
        if settings.loopback and host not in {f"{n}:{settings.port}" for n in _LOOPBACK_NAMES} | set(
                _LOOPBACK_NAMES) | ({public.netloc.lower()} if public.netloc else set()):
            return _refuse(403, f"This desk answers only to localhost; open it as http://127.0.0.1:{settings.port}/"
                           " (behind a reverse proxy, start it with --public-url https://NAME).")
        method, path = scope["method"], scope["path"]
        if method in _UNSAFE:
            origin = urllib.parse.urlsplit(headers.get("origin") or "")
            if headers.get("sec-fetch-site") == "cross-site" or (headers.get("origin") is not None and not (
                    origin.netloc.lower() == host or (public.netloc and (origin.scheme, origin.netloc.lower()) ==
                                                      (public.scheme, public.netloc.lower())))):
                return _refuse(403, "Requests that change cases are accepted only from this desk's own pages "
                               "(or from tools such as curl); open the desk and send it from there.")
            declared = headers.get("content-length")
            if declared is not None and (not declared.strip().isdigit() or
                                         int(declared) > settings.max_upload + (64 << 10)):
                return _refuse(413, f"The upload is over the {_mib(settings.max_upload)} MiB limit: send only the "
                               "logs, or ask whoever runs the desk to raise it (triage desk --max-upload MIB).")
        if path in _OPEN_PATHS:
            return None
        if settings.auth_header and not (headers.get(settings.auth_header) or "").strip():
            return _refuse(401, f"Sign in through the desk's front page (the proxy did not send "
                           f"{settings.auth_header}).")
        if settings.token and not self._has_token(headers):
            if method == "GET" and not path.startswith("/api/"):
                return RedirectResponse("/login", status_code=303)
            return _refuse(401, "An access token is needed: send Authorization: Bearer TOKEN (ask whoever runs "
                           "the desk for it), or sign in at /login.")
        return None

    def _has_token(self, headers: Headers) -> bool:
        token = self.settings.token or ""
        given = headers.get("authorization") or ""
        if given.lower().startswith("bearer ") and hmac.compare_digest(given[7:].strip().encode(), token.encode()):
            return True
        for part in (headers.get("cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == TOKEN_COOKIE and hmac.compare_digest(urllib.parse.unquote(value).encode(), token.encode()):
                return True
        return False


def _when(value: dt.datetime | None) -> str:
    return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC") if value else "?"


def _public(case: dict[str, Any]) -> dict[str, Any]:
    """A case row as the API gives it: JSON values and its permalink path."""
    out = {("class" if k == "klass" else k): (v.isoformat() if isinstance(v, dt.datetime) else v)
           for k, v in case.items() if k not in ("input_data", "report_json", "report_html", "cluster_key")}
    out["url"] = f"/cases/{case['id']}"
    return out


def _report_schemas() -> dict[str, Any]:
    """The report's JSON Schema as OpenAPI components: ``Report`` and its ``$defs`` beside it as ``Report_NAME``
    (a ``#/$defs/...`` reference would point at the OpenAPI document's root, where there are none)."""
    from triage.resources import data_dir

    schema = json.loads((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"))
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    defs = schema.pop("$defs", {})

    def moved(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: (f"#/components/schemas/Report_{v[len('#/$defs/'):]}" if k == "$ref" and isinstance(v, str)
                        and v.startswith("#/$defs/") else moved(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [moved(v) for v in node]
        return node

    return {"Report": moved(schema), **{f"Report_{name}": moved(value) for name, value in defs.items()}}


def create_app(settings: Settings, store: Store | None = None) -> FastAPI:
    """The desk's ASGI application over ``store`` (opened from ``settings.database`` and migrated when not given)."""
    if store is None:
        store = Store(settings.database)
        store.migrate()
    pool = Pool(settings.workers)
    secure_cookies = (settings.public_url or "").startswith("https://")  # behind TLS the browser keeps them there only

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await run_in_threadpool(pool.close)

    app = FastAPI(title="hip-triage desk", version=__version__, openapi_url="/api/openapi.json", docs_url=None,
                  redoc_url=None, lifespan=lifespan,
                  description="Triage crash logs of AMD GPU software and keep every case. POST a log to "
                  "/api/v1/cases; the answer is the JSON report (see `triage schema`) and the case URL.")
    app.state.store = store
    app.state.settings = settings
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(("html",)))
    env.filters["when"] = _when
    env.filters["urlencode"] = lambda v: urllib.parse.quote(str(v), safe="")

    def signatures_version() -> str:
        from triage.match import load
        from triage.resources import data_dir

        return load(settings.signatures or data_dir("signatures")).version

    shipped_version = signatures_version()

    def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        """A page with the CSRF cookie set (made now when the browser has none)."""
        token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        html = env.get_template(name).render(csrf=token, version=__version__, signatures_version=shipped_version,
                                             database=store.safe_url.split("://", 1)[0], **values)
        response = HTMLResponse(html, status_code=status, headers={
            "Content-Security-Policy": PAGE_CSP, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            # same-origin, not no-referrer: with no-referrer a browser sends "Origin: null" on the page's own forms
            "Referrer-Policy": "same-origin"})
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict", path="/", secure=secure_cookies)
        return response

    def csrf_ok(request: Request, form: Any) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE) or ""
        given = form.get("csrf") if form is not None else None
        return bool(cookie) and isinstance(given, str) and hmac.compare_digest(cookie.encode(), given.encode())

    def submitter(request: Request, given: Any) -> str:
        if settings.auth_header:
            return request.headers.get(settings.auth_header, "").strip() or "anonymous"
        text = given.strip() if isinstance(given, str) else ""
        return text or ("local" if settings.loopback else "token holder")

    def stale_form() -> Response:
        return _refuse(403, "The form has expired or did not come from this desk; reload the page and send it again.")

    async def read_form(request: Request) -> Any:
        return await request.form(max_files=1, max_fields=20, max_part_size=settings.max_upload)

    async def file_upload(form: Any) -> tuple[bytes, str, str] | None:
        """(data, display name, source) from a form's ``file`` or ``text``, or None when both are empty."""
        from triage.server import display_name

        # curl's -F text=@LOG sends a file under the text's name and -F file=<LOG the file's text as a field:
        # either field takes either
        for name in ("file", "text"):
            item = form.get(name)
            if isinstance(item, UploadFile):
                data = await item.read(settings.max_upload + 1)
                if data.strip():
                    # browsers and curl send a '"' in a file name as %22 (and CR, LF as %0D, %0A)
                    sent = re.sub("%(22|0D|0A)", lambda m: chr(int(m.group(1), 16)), item.filename or "upload",
                                  flags=re.IGNORECASE)
                    return data, display_name(urllib.parse.quote(sent)), "file"
        for name in ("text", "file"):
            text = form.get(name)
            if isinstance(text, str) and text.strip():
                return text.encode("utf-8"), "paste.txt", "paste"
        return None

    async def submit(upload: intake.Upload) -> int | Response:
        """Triage and store; an id, or the refusal to send."""
        from triage.ingest import IngestError

        if len(upload.data) > settings.max_upload:
            return _refuse(413, f"The upload is over the {_mib(settings.max_upload)} MiB limit: send only the logs.")
        try:
            values = await pool.run(intake.triage, upload, settings.signatures, settings.max_input)
            return await run_in_threadpool(store.add, values)
        except IngestError:  # its message names the temporary file: only the server's log shows it
            ref = secrets.token_hex(4)
            log.exception("upload unreadable (ref %s)", ref)
            return _refuse(400, f"The upload cannot be read (ref {ref}); send the log as text or a .zip/.tar.gz "
                           "bundle.")
        except Exception:
            ref = secrets.token_hex(4)
            log.exception("triage or storage failed (ref %s)", ref)
            return _refuse(500, f"The triage or the database failed on this upload (ref {ref}); try again, and if "
                           "it fails again run triage FILE on the command line and report the problem with that ref.")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> Response:
        """The framework's own refusals as one line saying what to do, like the desk's (not JSON ``detail``)."""
        if err.status_code == 404:
            return _refuse(404, "There is no such page; the desk's pages are /, /cases and /retriage, and its API is "
                           "described at /api/openapi.json.")
        if err.status_code == 405:
            answer = _refuse(405, f"{request.method} is not taken at {request.url.path}; the API is described at "
                             "/api/openapi.json.")
            answer.headers.update(err.headers or {})
            return answer
        if err.status_code == 400:  # a multipart body the parser refused
            return _refuse(400, f"The form cannot be read ({err.detail}); send one file (-F file=@LOG), the text "
                           "(--form-string text=...) or the raw log as the body (--data-binary @LOG).")
        return _refuse(err.status_code, str(err.detail))

    @app.exception_handler(RequestValidationError)
    async def not_a_number(request: Request, _err: RequestValidationError) -> Response:
        """Only a case's number is validated by the framework: a word there is no case."""
        given = str(request.path_params.get("case_id", ""))[:40]
        return _refuse(404, f"There is no case {given!r}: cases are numbered; the list is at /cases.")

    @app.exception_handler(TooSlow)
    async def too_slow(_request: Request, _err: TooSlow) -> Response:
        return _refuse(408, f"The upload took longer than {settings.request_timeout:g} s to arrive; send it again (a "
                       "slow link may need a smaller file, or ask for a longer triage desk --timeout).")

    @app.exception_handler(TooLarge)
    async def too_large(_request: Request, _err: TooLarge) -> Response:
        return _refuse(413, f"The upload is over the {_mib(settings.max_upload)} MiB limit: send only the logs, or "
                       "ask whoever runs the desk to raise it (triage desk --max-upload MIB).")

    # -- pages ------------------------------------------------------------------------------------------

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> HTMLResponse:
        return page(request, "index.html", text="", error=None, ask_submitter=not settings.auth_header,
                    limit_mib=_mib(settings.max_upload), kept_mib=_mib(settings.max_input))

    @app.get("/static/desk.css", include_in_schema=False)
    def stylesheet() -> Response:
        return Response((TEMPLATES / "desk.css").read_text(encoding="utf-8"), media_type="text/css",
                        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"})

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        return Response(status_code=204, headers={"Cache-Control": "max-age=86400"})

    @app.post("/cases", include_in_schema=False)
    async def new_case(request: Request) -> Response:
        form = await read_form(request)
        if not csrf_ok(request, form):
            return stale_form()
        got = await file_upload(form)
        if got is None:
            return page(request, "index.html", 400, text="", error="Paste a log or choose a file first.",
                        ask_submitter=not settings.auth_header, limit_mib=_mib(settings.max_upload),
                        kept_mib=_mib(settings.max_input))
        data, name, source = got
        made = await submit(intake.Upload(data, name, source, _yes(form.get("redact")),
                                          submitter(request, form.get("submitter"))))
        if isinstance(made, Response):
            return made
        return RedirectResponse(f"/cases/{made}", status_code=303)

    def long_note(length: int) -> Response:
        return _refuse(400, f"The note has {length} characters, over the {NOTE_CHARS} a case keeps: write what fixed "
                       "it and link to the longer story.")

    def no_case(case_id: int) -> Response:
        return _refuse(404, f"There is no case {case_id}; the list is at /cases.")

    def case_or_404(case_id: int, *extra: str) -> dict[str, Any] | Response:
        found = store.get(case_id, *extra) if 0 < case_id <= MAX_ID else None  # a larger id is no row, not an error
        return found if found is not None else no_case(case_id)

    @app.get("/cases/{case_id}", response_class=HTMLResponse, include_in_schema=False)
    def case_page(request: Request, case_id: int) -> Response:
        case = case_or_404(case_id)
        if isinstance(case, Response):
            return case
        return page(request, "case.html", case=case, confidence=percent(case["confidence"]),
                    seen=store.seen_before(case), history=store.case_changes(case_id), statuses=intake.STATUSES)

    @app.get("/cases/{case_id}/report.html", include_in_schema=False)
    def case_report(case_id: int) -> Response:
        case = case_or_404(case_id, "report_html")
        if isinstance(case, Response):
            return case
        return HTMLResponse(case["report_html"], headers={"Content-Security-Policy": REPORT_CSP,
                                                           "X-Content-Type-Options": "nosniff",
                                                           "Referrer-Policy": "no-referrer"})

    @app.post("/cases/{case_id}", include_in_schema=False)
    async def case_update(request: Request, case_id: int) -> Response:
        form = await read_form(request)
        if not csrf_ok(request, form):
            return stale_form()
        status, note = form.get("status"), form.get("note")
        if status not in intake.STATUSES or not isinstance(note, (str, type(None))):
            return _refuse(400, f"Status must be one of {', '.join(intake.STATUSES)}; reload the case and try again.")
        note = note.replace("\r\n", "\n") if note is not None else None  # a text area sends CRLF line ends
        if note is not None and len(note) > NOTE_CHARS:
            return long_note(len(note))
        if not 0 < case_id <= MAX_ID or not await run_in_threadpool(store.update, case_id, status, note):
            return no_case(case_id)
        return RedirectResponse(f"/cases/{case_id}", status_code=303)

    def chosen_filters(request: Request) -> tuple[Filters, dict[str, str]]:
        chosen = {name: request.query_params[name] for name, _ in FILTER_LABELS if request.query_params.get(name)}
        return Filters(chosen, request.query_params.get("q", "")), chosen

    def bad_status(chosen: dict[str, str]) -> Response | None:
        """A status filter no case can have (a typo) is said, not answered with an empty list."""
        if chosen.get("status", "open").replace("\x00", "") in intake.STATUSES:
            return None
        return _refuse(400, f"status is one of {', '.join(intake.STATUSES)}; fix the filter and ask again.")

    def paging(request: Request) -> tuple[int, int]:
        def number(name: str, default: int, top: int) -> int:
            raw = request.query_params.get(name, "")
            return min(max(int(raw), 0), top) if raw.isdigit() else default
        return number("limit", PAGE_SIZE, MAX_PAGE) or PAGE_SIZE, number("offset", 0, 1 << 40)

    def recent_weeks(filters: Filters) -> list[tuple[dt.date, int]]:
        return store.weekly(filters, WEEKS, now() - dt.timedelta(weeks=WEEKS))

    @app.get("/cases", response_class=HTMLResponse, include_in_schema=False)
    def cases_page(request: Request) -> Response:
        filters, chosen = chosen_filters(request)
        if refused := bad_status(chosen):
            return refused
        limit, offset = paging(request)
        rows, total = store.search(filters, limit, offset)
        weeks = recent_weeks(filters)

        def at(new_offset: int) -> str:
            size = {"limit": limit} if limit != PAGE_SIZE else {}  # the next page is as long as this one
            return "/cases?" + urllib.parse.urlencode({**chosen, "q": filters.q, **size, "offset": new_offset})

        return page(request, "cases.html", rows=rows, total=total, weeks=weeks,
                    max_week=max((c for _, c in weeks), default=1), facets=store.facets(), chosen=chosen, q=filters.q,
                    filter_labels=FILTER_LABELS, prev_url=at(max(offset - limit, 0)) if offset else None,
                    next_url=at(offset + limit) if offset + limit < total else None)

    @app.get("/retriage", response_class=HTMLResponse, include_in_schema=False)
    def retriage_page(request: Request) -> HTMLResponse:
        return page(request, "retriage.html", done=None, changed=[], failed=[], changes=store.recent_changes())

    def run_retriage() -> tuple[int, list[Any], list[int]]:
        def analyse(stored: dict[str, Any]) -> dict[str, Any]:
            return pool.call(intake.retriage, stored["input_kind"], stored["input_data"],
                             stored["input_name"] or "upload", stored["redacted"], settings.signatures)
        return store.retriage(analyse)

    @app.post("/retriage", include_in_schema=False)
    async def retriage_form(request: Request) -> Response:
        form = await read_form(request)
        if not csrf_ok(request, form):
            return stale_form()
        done, changed, failed = await run_in_threadpool(run_retriage)
        return page(request, "retriage.html", done=done, changed=changed, failed=failed,
                    skipped=await run_in_threadpool(store.without_input), changes=store.recent_changes())

    @app.get("/login", response_class=HTMLResponse, include_in_schema=False)
    def login_page(request: Request) -> HTMLResponse:
        return page(request, "login.html", error=None)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        form = await read_form(request)
        token = form.get("token")
        if not csrf_ok(request, form) or not settings.token or not isinstance(token, str) or not hmac.compare_digest(
                token.encode(), settings.token.encode()):
            return page(request, "login.html", 401, error="That token is not this desk's; ask whoever runs it.")
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(TOKEN_COOKIE, urllib.parse.quote(token), httponly=True, samesite="strict", path="/",
                            secure=secure_cookies)
        return response

    # -- API --------------------------------------------------------------------------------------------

    case_schema = {"type": "object", "description": "A stored case (no input, no report).",
                   "properties": {"id": {"type": "integer"}, "url": {"type": "string"},
                                  "created_at": {"type": "string", "format": "date-time"},
                                  "submitter": {"type": "string"}, "status": {"enum": list(intake.STATUSES)},
                                  "note": {"type": "string"}, "class": {"type": "string"},
                                  "signature": {"type": "string"}, "title": {"type": "string"},
                                  "signatures_version": {"type": "string"}}}
    upload_body = {"required": True, "content": {
        "multipart/form-data": {"schema": {"type": "object", "properties": {
            "file": {"type": "string", "format": "binary", "description": "a log, dump, core or .zip/.tar.gz bundle"},
            "text": {"type": "string", "description": "pasted text (when no file)"},
            "redact": {"type": "string", "description": "1 (or true, yes, on): redact names, addresses, serials "
                       "before storing"},
            "submitter": {"type": "string"}}}},
        "application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {
            "text": {"type": "string"}, "redact": {"type": "string"}, "submitter": {"type": "string"}}}},
        "application/octet-stream": {"schema": {"type": "string", "format": "binary",
                                                "description": "the raw file; name it with X-File-Name or ?name="}}}}

    @app.post("/api/v1/cases", status_code=201, summary="Triage and store a case", openapi_extra={
        "requestBody": upload_body,
        "parameters": [{"name": "redact", "in": "query", "schema": {"type": "boolean"}},
                       {"name": "name", "in": "query", "schema": {"type": "string"}},
                       {"name": "submitter", "in": "query", "schema": {"type": "string"}}]},
        responses={201: {"description": "The case: its id, url, stored fields and the JSON report", "content": {
            "application/json": {"schema": {"type": "object", "properties": {
                "id": {"type": "integer"}, "url": {"type": "string"}, "case": case_schema,
                "report": {"$ref": "#/components/schemas/Report"}}}}}},
            400: {"description": "nothing to triage, or unreadable"}, 413: {"description": "over the upload limit"}})
    async def api_create(request: Request) -> Response:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        params = request.query_params
        redact = _yes(params.get("redact"))
        who = params.get("submitter")
        named = request.headers.get("x-file-name") or params.get("name")
        got, is_form = None, kind == "multipart/form-data"
        if is_form or (kind == "application/x-www-form-urlencoded" and not named):
            if not is_form:
                await request.body()  # kept by the request, so the raw fallback below can still read it
            form = await read_form(request)
            got = await file_upload(form)
            is_form = is_form or "text" in form or "file" in form  # an empty text field is nothing to triage
            redact = redact or _yes(form.get("redact"))
            who = who or form.get("submitter")
        if got is None and not is_form:
            # curl's --data-binary labels a raw log as a form: a name, or a form without `text`, means raw
            from triage.server import display_name

            data = await request.body()
            got = (data, display_name(named), "api") if data.strip() else None
        if got is None:
            return _refuse(400, "Nothing to triage: send a file (-F file=@LOG), a text field (--form-string "
                           "text=...) or the raw log as the body (--data-binary @LOG).")
        data, name, source = got
        made = await submit(intake.Upload(data, name, "api" if source != "file" else "file", redact,
                                          submitter(request, who)))
        if isinstance(made, Response):
            return made
        return await run_in_threadpool(one_case, request, made, 201)

    def one_case(request: Request, case_id: int, status: int = 200) -> Response:
        case = case_or_404(case_id, "report_json")
        if isinstance(case, Response):
            return case
        seen = store.seen_before(case)
        # behind a proxy the address people open is --public-url, not the one the proxy asked (http, its Host)
        base = settings.public_url or str(request.base_url)
        body = {"id": case_id, "url": base.rstrip("/") + f"/cases/{case_id}",
                "case": _public(case), "report": json.loads(case["report_json"]),
                "seen_before": {"count": seen.count, "first": seen.first.isoformat() if seen.first else None,
                                "last": seen.last.isoformat() if seen.last else None,
                                "cases": [_public(c) for c in seen.cases]},
                "changes": [_public_change(c) for c in store.case_changes(case_id)]}
        headers = {"Location": f"/cases/{case_id}"} if status == 201 else None
        return JSONResponse(body, status_code=status, headers=headers)

    @app.get("/api/v1/cases/{case_id}", summary="One case: its fields, JSON report, seen-before and changes")
    def api_case(request: Request, case_id: int) -> Response:
        return one_case(request, case_id)

    @app.get("/api/v1/cases", summary="Cases matching filters, newest first", openapi_extra={"parameters": [
        *({"name": n, "in": "query", "schema": {"type": "string"}, "description": label} for n, label in FILTER_LABELS),
        {"name": "q", "in": "query", "schema": {"type": "string"}, "description": "text in title, note, name, report"},
        {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": MAX_PAGE}},
        {"name": "offset", "in": "query", "schema": {"type": "integer"}}]})
    def api_cases(request: Request) -> Response:
        filters, chosen = chosen_filters(request)
        if refused := bad_status(chosen):
            return refused
        limit, offset = paging(request)
        rows, total = store.search(filters, limit, offset)
        return JSONResponse({"total": total, "limit": limit, "offset": offset, "cases": [_public(r) for r in rows],
                             "weeks": [{"week": w.isoformat(), "cases": n} for w, n in recent_weeks(filters)]})

    @app.patch("/api/v1/cases/{case_id}", summary="Set a case's status and/or note", openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object", "properties": {
            "status": {"enum": list(intake.STATUSES)}, "note": {"type": "string", "maxLength": NOTE_CHARS}},
            "additionalProperties": False, "minProperties": 1}}}}})
    async def api_update(request: Request, case_id: int) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        # a misspelt or missing field would otherwise change nothing and still answer 200
        if not isinstance(body, dict) or not body or set(body) - {"status", "note"} or body.get(
                "status", "open") not in intake.STATUSES or not isinstance(body.get("note", ""), str):
            return _refuse(400, f'Send JSON such as {{"status": "answered", "note": "..."}} (either field or both); '
                           f"status is one of {', '.join(intake.STATUSES)}.")
        note = body.get("note")
        if note is not None and len(note) > NOTE_CHARS:
            return long_note(len(note))
        if not 0 < case_id <= MAX_ID or not await run_in_threadpool(store.update, case_id, body.get("status"), note):
            return no_case(case_id)
        return await run_in_threadpool(one_case, request, case_id)

    @app.post("/api/v1/retriage", summary="Triage every stored input again with the current signatures")
    async def api_retriage() -> Response:
        done, changed, failed = await run_in_threadpool(run_retriage)
        return JSONResponse({"retriaged": done, "failed": failed, "signatures_version": signatures_version(),
                             "without_input": await run_in_threadpool(store.without_input),
                             "changed": [{"case_id": c.case_id, "url": f"/cases/{c.case_id}",
                                          "old_class": c.old_class, "new_class": c.new_class,
                                          "old_signature": c.old_signature, "new_signature": c.new_signature,
                                          "old_signatures_version": c.old_signatures_version,
                                          "new_signatures_version": c.new_signatures_version} for c in changed]})

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(_report_schemas())
            schema["components"]["securitySchemes"] = {"token": {"type": "http", "scheme": "bearer"}}
            # the refusals as they are: one line of text (a word for a case number is "no case", not a 422)
            line = {"text/plain": {"schema": {"type": "string"}}}
            for path, operations in schema["paths"].items():
                for method, operation in operations.items():
                    answers = operation.setdefault("responses", {})
                    answers.pop("422", None)
                    if "{case_id}" in path:
                        answers["404"] = {"description": "there is no such case", "content": line}
                    if method == "patch":
                        answers["400"] = {"description": "not a status and/or note, or the note is too long",
                                          "content": line}
                    for code in ("400", "413"):
                        if code in answers:
                            answers[code].setdefault("content", line)
            for unused in ("HTTPValidationError", "ValidationError"):
                schema["components"]["schemas"].pop(unused, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(Guard, settings=settings)
    return app


def _public_change(change: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in change.items()}


__all__ = ["Guard", "Settings", "StoreError", "create_app"]
