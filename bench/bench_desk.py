"""A bounded load test of ``triage desk`` on loopback: many concurrent clients for a fixed time, latency and errors.

    python3 bench/bench_desk.py [--clients 50] [--seconds 180] [--post-share 0.2] [--database URL]

Starts ``triage desk`` as its own process (an SQLite file in a temporary folder unless
``--database`` names one, e.g. the PostgreSQL server of ``.ci/run``), then runs a baseline (one
client, ``--baseline-seconds``) and the load (``--clients`` clients for ``--seconds``), each in the
same mix: a share of submissions (a seed case posted to ``/api/v1/cases``, which triages and stores
it) and reads otherwise (the list page, a case page, a case and a filtered list from the API). Prints
p50/p90/p99 latency per kind and overall, the ratio of the load's medians to the baseline's,
requests per second and the error count (any answer but 200/201, or no answer). Exits 1 when
there was any error. A benchmark, not a test: read it on a quiet machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = sorted(p for p in (ROOT / "corpus").glob("seed-*") if p.is_dir())


def paste_of(case: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(case.iterdir()) if p.is_file() and p.name != "expected.yaml")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers={"X-File-Name": "bench.log"} if body else {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def start(database: str, port: int, folder: Path) -> subprocess.Popen:
    log = open(folder / "desk.log", "wb")  # noqa: SIM115 - closed with the process
    process = subprocess.Popen([sys.executable, "-m", "triage", "desk", "--port", str(port), "--database", database],
                               stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                               env={**os.environ, "TRIAGE_CACHE": str(folder / "cache")})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"triage desk stopped: {(folder / 'desk.log').read_text(errors='replace')[-800:]}")
        try:
            if request(port, "GET", "/api/v1/cases?limit=1")[0] == 200:
                return process
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise SystemExit("triage desk did not answer within 60 s")


def run(port: int, clients: int, seconds: float, post_share: float, seed: int) -> tuple[dict, int, int]:
    """Latencies by kind, errors and requests made by ``clients`` threads for ``seconds``."""
    pastes = [paste_of(p) for p in SEEDS]
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        known = [1]
        while time.monotonic() < stop:
            if rng.random() < post_share:
                kind, method, path, body = "submit", "POST", "/api/v1/cases", rng.choice(pastes)
            else:
                kind, method, path, body = rng.choice([
                    ("list page", "GET", "/cases", None),
                    ("case page", "GET", f"/cases/{rng.choice(known)}", None),
                    ("api case", "GET", f"/api/v1/cases/{rng.choice(known)}", None),
                    ("api list", "GET", "/api/v1/cases?class=device-libs-missing&limit=20", None)])
            began = time.perf_counter()
            try:
                status, data = request(port, method, path, body)
                problem = None if status in (200, 201) else f"{method} {path}: {status} {data[:120]!r}"
            except OSError as err:
                status, data, problem = 0, b"", f"{method} {path}: {type(err).__name__}: {err}"
            took = time.perf_counter() - began
            with lock:
                latencies[kind].append(took)
                if problem:
                    errors.append(problem)
            if status == 201:
                known.append(json.loads(data)["id"])

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for problem in errors[:5]:
        print(f"  error: {problem}")
    return latencies, len(errors), sum(len(v) for v in latencies.values())


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(title: str, latencies: dict[str, list[float]], baseline: dict[str, list[float]] | None) -> None:
    print(f"\n{title}")
    print(f"  {'kind':<10} {'requests':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}"
          + (f" {'p50/base':>9}" if baseline else ""))
    everything = [v for values in latencies.values() for v in values]
    for kind, values in sorted(latencies.items()) + [("all", everything)]:
        if not values:
            continue
        base = baseline.get(kind) if baseline else None
        if kind == "all" and baseline:
            base = [v for vs in baseline.values() for v in vs]
        ratio = f" {statistics.median(values) / statistics.median(base):>9.1f}" if base else (" " * 10 if baseline
                                                                                               else "")
        print(f"  {kind:<10} {len(values):>8} {statistics.median(values) * 1000:>8.0f} "
              f"{quantile(values, 0.90) * 1000:>8.0f} {quantile(values, 0.99) * 1000:>8.0f} "
              f"{max(values) * 1000:>8.0f}{ratio}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--baseline-seconds", type=float, default=20)
    parser.add_argument("--post-share", type=float, default=0.2, help="share of requests that submit a case")
    parser.add_argument("--database", default="", help="database URL (default: SQLite in a temporary folder)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not 1 <= args.clients <= 500 or not 0 < args.seconds <= 3600 or not 0 <= args.post_share <= 1:
        parser.error("--clients 1..500, --seconds up to 3600, --post-share 0..1")
    with tempfile.TemporaryDirectory(prefix="bench-desk-") as tmp:
        folder = Path(tmp)
        database = args.database or f"sqlite:///{folder / 'cases.sqlite3'}"
        port = free_port()
        process = start(database, port, folder)
        try:
            status, _ = request(port, "POST", "/api/v1/cases", paste_of(SEEDS[0]))  # case 1, and a warm cache
            if status != 201:
                raise SystemExit(f"the first submission failed with {status}")
            print(f"triage desk on 127.0.0.1:{port}, {database.split('://')[0]}, {os.cpu_count()} CPUs; mix: "
                  f"{args.post_share:.0%} submissions of {len(SEEDS)} seed cases, the rest reads")
            base, base_errors, base_count = run(port, 1, args.baseline_seconds, args.post_share, args.seed)
            table(f"baseline: 1 client, {args.baseline_seconds:g} s, {base_count} requests, {base_errors} errors",
                  base, None)
            began = time.monotonic()
            load, errors, count = run(port, args.clients, args.seconds, args.post_share, args.seed + 1)
            took = time.monotonic() - began
            table(f"load: {args.clients} clients, {took:.0f} s, {count} requests ({count / took:.1f}/s), "
                  f"{errors} errors", load, base)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
    return 1 if errors or base_errors else 0


if __name__ == "__main__":
    sys.exit(main())
