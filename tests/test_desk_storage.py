"""The desk's case store against SQLite always and a real PostgreSQL server when one is given.

PostgreSQL: ``HIP_TRIAGE_TEST_PG_URL`` (``.ci/run`` starts Debian's server and sets it). When it is
set the server must answer (a CI machine without it fails); when it is unset those tests skip.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("sqlalchemy", reason="the desk extra is not installed: pip install -e '.[desk]'")
pytest.importorskip("alembic", reason="the desk extra is not installed: pip install -e '.[desk]'")

from sqlalchemy import event, inspect, text

from triage.desk.storage import Filters, Store, default_url

PG_URL = os.environ.get("HIP_TRIAGE_TEST_PG_URL", "")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not PG_URL, reason="no PostgreSQL server given: set HIP_TRIAGE_TEST_PG_URL=postgresql+psycopg://USER:PASS@HOST/DB "
    "(.ci/run starts one)"))]
UTC = dt.UTC


def open_store(backend: str, folder: Any) -> Store:
    """A migrated, empty store: a new SQLite file, or the test PostgreSQL database emptied first."""
    if backend == "sqlite":
        store = Store(f"sqlite:///{folder / 'cases.sqlite3'}")
    else:
        store = Store(PG_URL)
        with store.engine.begin() as connection:
            for table in ("case_changes", "cases", "alembic_version"):
                connection.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
    store.migrate()
    return store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Store]:
    made = open_store(request.param, tmp_path)
    try:
        yield made
    finally:
        made.close()


def row(**values: Any) -> dict[str, Any]:
    """A case row as intake.triage makes one (without running a triage)."""
    base = {"submitter": "ana", "source": "paste", "redacted": False, "input_name": "paste.txt", "input_kind": "raw",
            "input_bytes": 5, "input_data": b"hello", "signature": "hip-blit-kernels-device-libs-missing",
            "klass": "device-libs-missing", "title": "HIP could not build its blit kernels", "confidence": 0.9,
            "stack_hash": "adae378795037651", "cluster_key": None, "gfx_arch": "gfx1201", "os": "linux",
            "rocm_version": "6.4.1", "tool_version": "0.1", "signatures_version": "2026.12.01",
            "report_json": "{}", "report_html": "<p>report</p>"}
    return {**base, **values}


def at(day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2026, 11, day, hour, tzinfo=UTC)


def test_migrations_make_the_schema_once(store: Store) -> None:
    store.migrate()  # again: nothing to do, nothing lost
    tables = set(inspect(store.engine).get_table_names())
    assert {"cases", "case_changes", "alembic_version"} <= tables
    with store.engine.connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == "0001"


@pytest.mark.parametrize("backend", BACKENDS)
def test_desks_started_at_once_on_a_new_database_make_the_schema_once(backend: str, tmp_path: Any) -> None:
    open_store(backend, tmp_path).close()  # emptied (PostgreSQL) and migrated once, to be emptied again below
    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}" if backend == "sqlite" else PG_URL
    if backend != "sqlite":
        with Store(url).engine.begin() as connection:
            for table in ("case_changes", "cases", "alembic_version"):
                connection.execute(text(f"DROP TABLE IF EXISTS {table} CASCADE"))
    stores = [Store(url) for _ in range(4)]
    errors: list[BaseException] = []
    start = threading.Barrier(len(stores))

    def migrate(store: Store) -> None:
        start.wait()
        try:
            store.migrate()
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=migrate, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []  # was "table cases already exists" for all but the first
        assert stores[0].add(row()) == 1
    finally:
        for store in stores:
            store.close()


def test_a_case_round_trips_with_its_time_in_utc(store: Store) -> None:
    case_id = store.add(row(note="", input_data=b"\x00\xffbinary"), at=at(3, 9))
    got = store.get(case_id, "report_json", "input_data")
    assert got is not None
    assert got["created_at"] == at(3, 9) and got["created_at"].tzinfo is not None
    assert (got["status"], got["klass"], got["submitter"], got["input_data"]) == (
        "open", "device-libs-missing", "ana", b"\x00\xffbinary")
    assert "input_data" not in store.get(case_id)  # not read unless asked for
    assert store.get(case_id + 1000) is None


def test_status_and_note_are_kept(store: Store) -> None:
    case_id = store.add(row())
    assert store.update(case_id, status="answered", note="LD_PRELOAD the system libamdhip64")
    got = store.get(case_id)
    assert (got["status"], got["note"]) == ("answered", "LD_PRELOAD the system libamdhip64")
    assert store.update(case_id, note="and it worked")
    assert store.get(case_id)["status"] == "answered"
    assert not store.update(case_id + 1000, status="closed")


def test_nul_characters_are_dropped_from_notes_names_and_searches(store: Store) -> None:
    # PostgreSQL's text cannot hold NUL: a note, a submitter or a search with one was a driver error there
    case_id = store.add(row(submitter="a\x00na", input_name="hip\x00.log"))
    assert store.update(case_id, note="set HSA_\x00OVERRIDE")
    got = store.get(case_id)
    assert (got["submitter"], got["input_name"], got["note"]) == ("ana", "hip.log", "set HSA_OVERRIDE")
    assert store.search(Filters({"gfx_arch": "gfx1201\x00"}, "hsa_\x00override"))[1] == 1
    assert store.search(Filters({}, "\x00"))[1] == 1  # nothing left to search for: every case
    assert [n for _, n in store.weekly(Filters({"os": "\x00"}, "\x00"))] == [1]


def test_seen_before_counts_earlier_cases_of_the_same_signature_and_stack(store: Store) -> None:
    first = store.add(row(note="fixed by the system ROCm"), at=at(2))
    other_stack = store.add(row(stack_hash="0000000000000000"), at=at(3))
    other_signature = store.add(row(signature="hip-no-binary-for-gpu", klass="arch-mismatch"), at=at(4))
    second = store.add(row(note=""), at=at(5))
    third = store.add(row(), at=at(6))

    seen = store.seen_before(store.get(third))
    assert seen.count == 2
    assert (seen.first, seen.last) == (at(2), at(5))
    assert [c["id"] for c in seen.cases] == [second, first]  # newest first
    assert seen.cases[1]["note"] == "fixed by the system ROCm"
    assert store.seen_before(store.get(first)).count == 0  # later cases are not "before"
    assert store.seen_before(store.get(other_stack)).count == 0
    assert store.seen_before(store.get(other_signature)).count == 0


def test_seen_before_without_a_stack_and_for_unknown_clusters(store: Store) -> None:
    a = store.add(row(stack_hash=None))
    b = store.add(row(stack_hash=None))
    store.add(row())  # same signature with a stack: another failure
    assert store.seen_before(store.get(b)).count == 1
    u1 = store.add(row(signature="unknown", klass="unknown", stack_hash=None, cluster_key="c1"))
    store.add(row(signature="unknown", klass="unknown", stack_hash=None, cluster_key="c2"))
    u3 = store.add(row(signature="unknown", klass="unknown", stack_hash=None, cluster_key="c1"))
    seen = store.seen_before(store.get(u3))
    assert (seen.count, [c["id"] for c in seen.cases]) == (1, [u1])
    assert a < b


def test_filters_search_and_weekly_counts(store: Store) -> None:
    store.add(row(title="100% of the blit kernels"), at=at(2))  # 2026-11-02 is a Monday
    store.add(row(gfx_arch="gfx906", rocm_version="5.7.1"), at=at(10))
    store.add(row(signature="hip-no-binary-for-gpu", klass="arch-mismatch", os="windows", status="closed",
                  note="Rebuilt with gfx1100_snake"), at=at(11))
    store.add(row(), at=at(12))

    def ids(**values: str) -> int:
        q = values.pop("q", "")
        return store.search(Filters(values, q))[1]

    assert ids() == 4
    assert ids(**{"class": "arch-mismatch"}) == 1
    assert ids(signature="hip-blit-kernels-device-libs-missing") == 3
    assert ids(gfx_arch="gfx906") == 1
    assert ids(os="windows") == 1
    assert ids(rocm="5.7.1") == 1
    assert ids(status="closed") == 1 and ids(status="open") == 3
    assert ids(**{"class": "arch-mismatch", "os": "linux"}) == 0
    assert ids(q="REBUILT") == 1  # notes, case-insensitively
    assert ids(q="100%") == 1 and ids(q="%") == 1  # LIKE's wildcards are plain characters
    assert ids(q="gfx1100_snake") == 1 and ids(q="_") == 1
    assert ids(unknown_filter="x") == 4  # not a filter: ignored
    assert store.weekly(Filters()) == [(dt.date(2026, 11, 2), 1), (dt.date(2026, 11, 9), 3)]
    assert store.weekly(Filters({"gfx_arch": "gfx906"})) == [(dt.date(2026, 11, 9), 1)]
    assert store.weekly(Filters(), since=at(10)) == [(dt.date(2026, 11, 9), 3)]
    assert store.weekly(Filters(), weeks=1) == [(dt.date(2026, 11, 9), 3)]
    rows, total = store.search(Filters(), limit=2, offset=1)
    assert total == 4 and [r["id"] for r in rows] == [3, 2]
    facets = store.facets()
    assert facets["os"] == ["linux", "windows"] and facets["status"] == ["closed", "open"]


def test_text_search_ignores_case_beyond_a_to_z(store: Store) -> None:
    store.add(row(input_name="Ünïcode.log", note="Ошибка сегментирования"))
    store.add(row(report_json='{"path": "/home/José/app"}'))
    store.add(row())
    for q in ("Ünïcode.log", "ünïcode", "ÜNÏCODE", "ошибка", "ОШИБКА", "josé", "JOSÉ"):  # SQLite lowers only A-Z
        assert store.search(Filters({}, q))[1] == 1, q


def test_retriage_stores_new_answers_and_records_changes(store: Store) -> None:
    kept = store.add(row(signature="unknown", klass="unknown", cluster_key="c1", signatures_version="old"))
    same = store.add(row())
    store.add(row(input_kind="none", input_data=None))  # input over the limit: not re-triaged

    def analyse(stored: dict[str, Any]) -> dict[str, Any]:
        assert stored["input_data"] == b"hello"
        return {**row(), "signatures_version": "new", "submitter": "ignored"}

    done, changed, failed = store.retriage(analyse)
    assert done == 2 and failed == []
    assert [(c.case_id, c.old_class, c.new_class, c.old_signatures_version, c.new_signatures_version)
            for c in changed] == [(kept, "unknown", "device-libs-missing", "old", "new")]
    assert store.get(kept)["klass"] == "device-libs-missing" and store.get(kept)["submitter"] == "ana"
    assert store.get(same)["signatures_version"] == "new"
    assert [c["case_id"] for c in store.recent_changes()] == [kept]
    assert store.case_changes(same) == []

    def broken(stored: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("a worker died")

    assert store.retriage(broken) == (0, [], [kept, same])
    assert store.get(kept)["klass"] == "device-libs-missing"  # the answer stays


def test_a_change_is_recorded_once_when_two_retriages_overlap(store: Store) -> None:
    first = store.add(row(signature="unknown", klass="unknown", cluster_key="c1", signatures_version="old"))
    second = store.add(row(signature="unknown", klass="unknown", cluster_key="c1", signatures_version="old"))

    def analyse(stored: dict[str, Any]) -> dict[str, Any]:
        return {**row(), "signatures_version": "new"}

    overlapped: list[tuple[int, list[Any], list[int]]] = []

    def analyse_while_another_runs(stored: dict[str, Any]) -> dict[str, Any]:
        if not overlapped:  # a second click on Re-triage while this one is at its first case
            overlapped.append(store.retriage(analyse))
        return analyse(stored)

    done, changed, failed = store.retriage(analyse_while_another_runs)
    assert done == 2 and failed == [] and changed == []  # the other one had stored these answers already
    assert [c.case_id for c in overlapped[0][1]] == [first, second]
    assert sorted(c["case_id"] for c in store.recent_changes()) == [first, second]  # once each, not twice


def test_a_case_added_while_an_earlier_one_commits_sees_it(store: Store) -> None:
    """Two desks on one database: a case whose insert is slow to commit has the smaller id, so the case added
    meanwhile must wait for it, or its "seen before" misses that case (a PostgreSQL sequence gives ids outside the
    transaction)."""
    slow = Store(store.url)
    later: list[tuple[int, int]] = []  # the later case's id and its "seen before" count read right after the add
    started, finished = threading.Event(), threading.Event()

    @event.listens_for(slow.engine, "after_cursor_execute")
    def hold_before_commit(*_: Any) -> None:
        if not started.is_set():  # the insert ran, its transaction is still open
            started.set()
            finished.wait(timeout=1.0)  # the other add finishes now unless it waits for this commit

    def add_later() -> None:
        started.wait(timeout=10)
        case_id = store.add(row(), at=at(3))
        later.append((case_id, store.seen_before(store.get(case_id)).count))  # as the desk answers the upload
        finished.set()

    other = threading.Thread(target=add_later)
    other.start()
    first = slow.add(row(), at=at(2))
    other.join()
    slow.close()
    assert later == [(first + 1, 1)]


def test_concurrent_writers_each_get_their_own_case(store: Store) -> None:
    made: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            for i in range(5):
                case_id = store.add(row(submitter=f"w{n}-{i}"))
                store.update(case_id, note=f"note {n}-{i}")
                with lock:
                    made.append(case_id)
        except BaseException as err:  # noqa: BLE001 - any failure of a writer is reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(made)) == 60
    assert store.search(Filters())[1] == 60
    for case_id in made[:10]:
        got = store.get(case_id)
        assert got["note"] == "note " + got["submitter"][1:]


def test_the_default_database_is_a_file_in_the_users_data_folder(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_url() == f"sqlite:///{tmp_path / 'data' / 'hip-triage' / 'desk.sqlite3'}"
    store = Store()
    try:
        store.migrate()
        assert (tmp_path / "data" / "hip-triage" / "desk.sqlite3").is_file()
    finally:
        store.close()


def test_a_postgresql_url_without_a_driver_uses_the_extras_psycopg() -> None:
    store = Store("postgresql://triage:secret@db.invalid/cases")  # no connection is made before the first query
    try:
        assert store.engine.url.drivername == "postgresql+psycopg"
    finally:
        store.close()


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path: Any) -> None:
    from triage.desk.storage import StoreError

    (tmp_path / "cases.sqlite3").write_bytes(b"not a database, but a log someone saved here\n" * 100)
    store = Store(f"sqlite:///{tmp_path / 'cases.sqlite3'}")
    try:
        with pytest.raises(StoreError) as caught:
            store.migrate()
    finally:
        store.close()
    message = str(caught.value)
    assert "file is not a database" in message and "\n" not in message and "sqlalche.me" not in message


def test_a_bad_url_says_what_to_give() -> None:
    from triage.desk.storage import StoreError

    with pytest.raises(StoreError, match="sqlite:///PATH"):
        Store("not a url")
    for other in ("postgres://triage:secret@db/cases", "mysql://triage@db/cases", "mssql+pyodbc://db/cases"):
        # no "install the desk extra" for a database the desk does not keep cases in, and no password shown
        with pytest.raises(StoreError, match="in SQLite or PostgreSQL; give sqlite:///PATH") as caught:
            Store(other)
        assert "secret" not in str(caught.value)
