"""Triage in worker processes, so the desk's own process stays free to answer pages while logs are triaged.

A triage is pure Python and CPU-bound: in the server's process it would hold the interpreter lock
and every page would wait for it. Here each runs in one of a few spawned processes (spawn, not
fork: the server has threads). A worker that dies (a crash in a native library on a hostile input)
fails only that request; the pool is made again for the next one. ``workers=0`` triages in a thread
of the server instead (tests, tiny machines).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from starlette.concurrency import run_in_threadpool


class WorkerCrashed(RuntimeError):
    """The worker process triaging this input died."""


class Pool:
    """A process pool that is made on first use and again after a worker died."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None

    def _submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        with self._lock:
            if self._executor is None:
                self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            executor = self._executor
        try:
            return executor.submit(fn, *args)
        except BrokenProcessPool:
            self._forget(executor)
            raise WorkerCrashed("a triage worker died; the next request gets a new one") from None

    def _forget(self, executor: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)

    def _unbroken(self, future: Future) -> Any:
        try:
            return future.result()
        except BrokenProcessPool:
            with self._lock:
                executor = self._executor
            if executor is not None:
                self._forget(executor)
            raise WorkerCrashed("the triage worker died on this input; the next request gets a new one") from None

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker process (or a thread with no workers), awaited without blocking the server."""
        if not self.workers:
            return await run_in_threadpool(fn, *args)
        future = self._submit(fn, *args)
        try:
            await asyncio.wrap_future(future)
        except BrokenProcessPool:
            pass
        return self._unbroken(future)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in a worker process, from a thread (a re-triage loops over many cases)."""
        if not self.workers:
            return fn(*args)
        return self._unbroken(self._submit(fn, *args))

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
