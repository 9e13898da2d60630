"""The desk's case history: SQLAlchemy Core over SQLite (the default) or PostgreSQL (a team server).

The schema is made and upgraded by the Alembic migrations shipped in ``migrations/`` (``Store.migrate``),
never by ``create_all``, so a team database is upgraded in place by a newer version of the tool.
Every query is a bound statement; text search escapes LIKE's wildcards. SQLite runs in WAL mode
with a busy timeout, so concurrent requests of one server queue for the write lock instead of failing.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.engine import Engine, make_url

metadata = MetaData()

cases = Table(
    "cases", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("submitter", String(200), nullable=False),
    Column("source", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("note", Text, nullable=False),
    Column("redacted", Boolean, nullable=False),
    Column("input_name", String(200)),
    Column("input_kind", String(8), nullable=False),  # raw | text | none
    Column("input_bytes", Integer, nullable=False),
    Column("input_data", LargeBinary),
    Column("signature", String(200), nullable=False),
    Column("klass", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("stack_hash", String(16)),
    Column("cluster_key", String(16)),
    Column("gfx_arch", String(200)),
    Column("os", String(200)),
    Column("rocm_version", String(200)),
    Column("tool_version", String(200)),
    Column("signatures_version", String(200)),
    Column("report_json", Text, nullable=False),
    Column("report_html", Text, nullable=False),
    Index("ix_cases_signature_stack", "signature", "stack_hash"),
    Index("ix_cases_cluster_key", "cluster_key"),
    Index("ix_cases_klass", "klass"),
    Index("ix_cases_status", "status"),
    Index("ix_cases_created_at", "created_at"),
)

changes = Table(
    "case_changes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("case_id", Integer, ForeignKey("cases.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("changed_at", DateTime(timezone=True), nullable=False),
    Column("old_signature", String(200), nullable=False),
    Column("new_signature", String(200), nullable=False),
    Column("old_class", String(64), nullable=False),
    Column("new_class", String(64), nullable=False),
    Column("old_signatures_version", String(200)),
    Column("new_signatures_version", String(200)),
)

# What a case page and the API show (not the stored input or the HTML report).
SUMMARY = [c for c in cases.c if c.name not in ("input_data", "report_json", "report_html")]
FILTERS = {"class": cases.c.klass, "signature": cases.c.signature, "gfx_arch": cases.c.gfx_arch, "os": cases.c.os,
           "rocm": cases.c.rocm_version, "status": cases.c.status}
TRIAGE_COLUMNS = ("signature", "klass", "title", "confidence", "stack_hash", "cluster_key", "gfx_arch", "os",
                  "rocm_version", "tool_version", "signatures_version", "report_json", "report_html")
SEEN_LISTED = 20
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK = 0x68697074  # PostgreSQL advisory lock key held while the schema is upgraded ("hipt")
INSERT_LOCK = 0x68697075  # PostgreSQL advisory lock key held while a case is inserted and committed


class StoreError(RuntimeError):
    """The database cannot be opened or upgraded; the message says what to do."""


def default_url() -> str:
    """An SQLite file in the user's data folder: ``$XDG_DATA_HOME/hip-triage/desk.sqlite3``."""
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "hip-triage"
    return f"sqlite:///{base / 'desk.sqlite3'}"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    """SQLite gives back naive times: they were written in UTC."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _text(value: Any) -> Any:
    """A text value without NUL characters, which PostgreSQL's text cannot hold (nobody means them in a note, a
    name or a search)."""
    return value.replace("\x00", "") if isinstance(value, str) else value


def _row(mapping: Any) -> dict[str, Any]:
    out = dict(mapping)
    for name in ("created_at", "updated_at", "changed_at"):
        if name in out:
            out[name] = _utc(out[name])
    return out


@dataclass
class Filters:
    """The list page's filters; empty ones are ignored. ``q`` searches title, note, file name and the report."""

    values: dict[str, str] = field(default_factory=dict)  # keys of FILTERS
    q: str = ""

    def clauses(self) -> list[Any]:
        chosen = {name: _text(value) for name, value in self.values.items() if name in FILTERS}
        out = [FILTERS[name] == value for name, value in chosen.items() if value]
        q = _text(self.q).strip()
        if q:
            needle = "%" + q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            out.append(func.lower(cases.c.title).like(needle, escape="\\")
                       | func.lower(cases.c.note).like(needle, escape="\\")
                       | func.lower(cases.c.input_name).like(needle, escape="\\")
                       | func.lower(cases.c.report_json).like(needle, escape="\\"))
        return out


@dataclass
class SeenBefore:
    """Earlier cases of the same failure: same signature and stack hash, or (unknown) the same cluster."""

    count: int
    first: dt.datetime | None
    last: dt.datetime | None
    cases: list[dict[str, Any]]  # the latest SEEN_LISTED, newest first, with their notes


@dataclass
class Change:
    """A case whose answer a re-triage changed."""

    case_id: int
    old_signature: str
    new_signature: str
    old_class: str
    new_class: str
    old_signatures_version: str | None
    new_signatures_version: str | None


class Store:
    """One database of cases. Thread-safe: each call takes its own connection from the engine's pool."""

    def __init__(self, url: str | None = None) -> None:
        self.url = url or default_url()
        try:
            parsed = make_url(self.url)
        except Exception as err:
            raise StoreError(f"{self.url!r} is not a database URL; give sqlite:///PATH or "
                             "postgresql+psycopg://USER:PASSWORD@HOST/DB") from err
        if parsed.get_backend_name() not in ("sqlite", "postgresql"):  # the schema is made and tested for these two
            raise StoreError(f"{parsed.render_as_string(hide_password=True)!r}: the desk keeps its cases in SQLite or "
                             "PostgreSQL; give sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/DB")
        if parsed.drivername == "postgresql":  # SQLAlchemy 2.0's default driver is psycopg2, not the extra's psycopg
            parsed = parsed.set(drivername="postgresql+psycopg")
        self.sqlite = parsed.get_backend_name() == "sqlite"
        options: dict[str, Any] = {"future": True}
        if self.sqlite:
            database = parsed.database or ""
            if database and database != ":memory:":
                Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            options["connect_args"] = {"check_same_thread": False, "timeout": 30}
        else:
            options.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        try:
            self.engine: Engine = create_engine(parsed, **options)
        except Exception as err:  # a missing driver, say
            raise StoreError(f"cannot open {parsed.render_as_string(hide_password=True)}: {err}; install the "
                             "desk extra (pip install 'hip-triage[desk]')") from err
        if self.sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)

    @property
    def safe_url(self) -> str:
        """The URL without its password, for messages and logs."""
        return make_url(self.url).render_as_string(hide_password=True)

    def migrate(self) -> None:
        """Bring the schema to the newest migration (creates it in an empty database)."""
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        try:
            with self.engine.begin() as connection:
                # one upgrade at a time: a second desk (or --migrate-only) started at once waits for the first,
                # then finds the schema made, instead of creating the same tables again
                if self.sqlite:  # the write lock now (pysqlite would run each CREATE in its own transaction)
                    connection.exec_driver_sql("BEGIN IMMEDIATE")
                else:
                    connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
                config.attributes["connection"] = connection
                command.upgrade(config, "head")
        except Exception as err:  # the driver's own message, not SQLAlchemy's statement and links after it
            lines = str(getattr(err, "orig", None) or err).strip().splitlines()
            reason = lines[0] if lines else type(err).__name__
            raise StoreError(f"cannot open or upgrade the case database {self.safe_url}: {reason}") from err

    def close(self) -> None:
        self.engine.dispose()

    # -- writing ------------------------------------------------------------------------------------------

    def add(self, values: dict[str, Any], at: dt.datetime | None = None) -> int:
        """Store a new case (the values ``intake.triage`` made) and return its id."""
        when = at or now()
        row = {name: _text(value) for name, value in {"status": "open", "note": "", **values}.items()}
        row.update(created_at=when, updated_at=when)
        with self.engine.begin() as connection:
            # ids must be given in commit order: "seen before" counts the committed cases with a smaller id, and a
            # PostgreSQL sequence hands out ids outside the transaction, so two inserts at once could commit the
            # larger id first and the later case would miss the earlier one (SQLite's write lock already orders them)
            if not self.sqlite:
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": INSERT_LOCK})
            return int(connection.execute(cases.insert().values(**row)).inserted_primary_key[0])

    def update(self, case_id: int, status: str | None = None, note: str | None = None) -> bool:
        """Set a case's status and/or note; False when there is no such case."""
        values: dict[str, Any] = {"updated_at": now()}
        if status is not None:
            values["status"] = status
        if note is not None:
            values["note"] = _text(note)
        with self.engine.begin() as connection:
            return connection.execute(update(cases).where(cases.c.id == case_id).values(**values)).rowcount > 0

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, case_id: int, *extra: str) -> dict[str, Any] | None:
        """A case's summary columns (and ``extra`` ones such as ``report_json``), or None."""
        columns = SUMMARY + [cases.c[name] for name in extra]
        with self.engine.connect() as connection:
            found = connection.execute(select(*columns).where(cases.c.id == case_id)).mappings().first()
        return _row(found) if found else None

    def search(self, filters: Filters, limit: int = 50, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Cases matching the filters, newest first, and how many match in all."""
        where = filters.clauses()
        with self.engine.connect() as connection:
            total = connection.execute(select(func.count()).select_from(cases).where(*where)).scalar_one()
            found = connection.execute(select(*SUMMARY).where(*where).order_by(cases.c.id.desc())
                                       .limit(limit).offset(offset)).mappings().all()
        return [_row(r) for r in found], int(total)

    def weekly(self, filters: Filters, weeks: int = 26, since: dt.datetime | None = None) -> list[tuple[dt.date, int]]:
        """Cases per ISO week (the Monday that starts it), for the latest ``weeks`` weeks that have any; only cases
        from ``since`` on are read (the list pages give half a year, so a large history costs little)."""
        where = filters.clauses() + ([cases.c.created_at >= since] if since is not None else [])
        with self.engine.connect() as connection:
            times = connection.execute(select(cases.c.created_at).where(*where)).scalars().all()
        counted = Counter()
        for value in times:
            day = _utc(value).date()  # type: ignore[union-attr]
            counted[day - dt.timedelta(days=day.weekday())] += 1
        return sorted(counted.items())[-weeks:]

    def facets(self, limit: int = 200) -> dict[str, list[str]]:
        """The values each filter can take, for the list page's choices."""
        out = {}
        with self.engine.connect() as connection:
            for name, column in FILTERS.items():
                out[name] = [v for v in connection.execute(select(column).distinct().where(column.is_not(None))
                                                           .order_by(column).limit(limit)).scalars()]
        return out

    def seen_before(self, case: dict[str, Any]) -> SeenBefore:
        """The earlier cases of the same failure as ``case`` (a row from ``get``)."""
        if case["klass"] == "unknown":
            if not case.get("cluster_key"):
                return SeenBefore(0, None, None, [])
            same = cases.c.cluster_key == case["cluster_key"]
        else:
            stack = case.get("stack_hash")
            same = (cases.c.signature == case["signature"]) & (
                cases.c.stack_hash == stack if stack else cases.c.stack_hash.is_(None))
        where = [same, cases.c.id < case["id"]]
        with self.engine.connect() as connection:
            count, first, last = connection.execute(
                select(func.count(), func.min(cases.c.created_at), func.max(cases.c.created_at)).where(*where)).one()
            listed = connection.execute(
                select(cases.c.id, cases.c.created_at, cases.c.status, cases.c.note, cases.c.submitter,
                       cases.c.klass, cases.c.signature).where(*where)
                .order_by(cases.c.id.desc()).limit(SEEN_LISTED)).mappings().all()
        return SeenBefore(int(count), _utc(first), _utc(last), [_row(r) for r in listed])

    def recent_changes(self, limit: int = 100) -> list[dict[str, Any]]:
        """The latest class or signature changes re-triages made, newest first."""
        with self.engine.connect() as connection:
            found = connection.execute(select(changes).order_by(changes.c.id.desc()).limit(limit)).mappings().all()
        return [_row(r) for r in found]

    def case_changes(self, case_id: int) -> list[dict[str, Any]]:
        with self.engine.connect() as connection:
            found = connection.execute(select(changes).where(changes.c.case_id == case_id)
                                       .order_by(changes.c.id)).mappings().all()
        return [_row(r) for r in found]

    # -- re-triage ----------------------------------------------------------------------------------------

    def without_input(self) -> int:
        """How many cases kept no input (over the size limit, or stored before inputs were kept): a re-triage
        cannot reach them."""
        with self.engine.connect() as connection:
            return connection.execute(
                select(func.count()).select_from(cases).where(cases.c.input_kind == "none")).scalar_one()

    def stored_inputs(self, batch: int = 20) -> Iterator[dict[str, Any]]:
        """Every case whose input was kept, oldest first, a few at a time (inputs can be large)."""
        last = 0
        while True:
            with self.engine.connect() as connection:
                found = connection.execute(
                    select(cases.c.id, cases.c.input_kind, cases.c.input_data, cases.c.input_name, cases.c.redacted,
                           cases.c.signature, cases.c.klass, cases.c.signatures_version)
                    .where(cases.c.id > last, cases.c.input_kind != "none").order_by(cases.c.id).limit(batch)
                ).mappings().all()
            if not found:
                return
            yield from (dict(r) for r in found)
            last = found[-1]["id"]

    def retriage(self, analyse: Callable[[dict[str, Any]], dict[str, Any]]) -> tuple[int, list[Change], list[int]]:
        """Triage every kept input again with ``analyse`` (stored case -> new triage columns); store the new
        answers and a record of each case whose signature or class changed. A case whose triage fails keeps its
        answer. Returns (cases re-triaged, changes, ids of the cases that failed)."""
        done, made, failed = 0, [], []
        for stored in self.stored_inputs():
            try:
                values = {name: value for name, value in analyse(stored).items() if name in TRIAGE_COLUMNS}
            except Exception:  # one case's failure must not stop the others; the log has the details
                logging.getLogger("triage.desk").exception("re-triage of case %s failed", stored["id"])
                failed.append(stored["id"])
                continue
            done += 1
            when = now()
            with self.engine.begin() as connection:
                # compared with the row as it is now, not as it was read: a re-triage running at the same time (a
                # second click, another desk) may have stored this answer already, and the change is recorded once
                if self.sqlite:  # the write lock before the read (PostgreSQL: the row's lock, FOR UPDATE)
                    connection.exec_driver_sql("BEGIN IMMEDIATE")
                before = connection.execute(
                    select(cases.c.signature, cases.c.klass, cases.c.signatures_version)
                    .where(cases.c.id == stored["id"]).with_for_update()).mappings().first()
                if before is None:  # deleted meanwhile
                    continue
                connection.execute(update(cases).where(cases.c.id == stored["id"]).values(**values, updated_at=when))
                if (values["signature"], values["klass"]) != (before["signature"], before["klass"]):
                    change = Change(stored["id"], before["signature"], values["signature"], before["klass"],
                                    values["klass"], before["signatures_version"], values.get("signatures_version"))
                    connection.execute(changes.insert().values(
                        case_id=change.case_id, changed_at=when, old_signature=change.old_signature,
                        new_signature=change.new_signature, old_class=change.old_class, new_class=change.new_class,
                        old_signatures_version=change.old_signatures_version,
                        new_signatures_version=change.new_signatures_version))
                    made.append(change)
        return done, made, failed


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    """WAL lets readers run beside the writer; the busy timeout makes writers wait their turn."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    # SQLite's own lower() changes only A-Z: a search for "Ошибка" or "Ünïcode.log" (lowered by the search) found
    # nothing; Python's lowers every script, as PostgreSQL's does
    connection.create_function("lower", 1, _lower, deterministic=True)


def _switch_to_wal(cursor: Any, wait: float = 30.0) -> None:
    """Set WAL mode, waiting while another connection holds the file.

    Switching a new file to WAL needs it to itself, and SQLite answers "database is locked" at once instead of
    calling the busy handler when another connection is at work on it (four desks started on one new file at
    once failed so one time in fifteen); the mode is kept in the file, so once any connection set it, this
    only reads it back."""
    deadline = time.monotonic() + wait
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def _lower(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value
