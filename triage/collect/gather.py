"""Run the command, then every gatherer in turn, and put together the bundle's content and manifest."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from triage import __version__
from triage.collect import probes, system
from triage.collect.bundle import FORMAT_VERSION
from triage.collect.component import component
from triage.collect.items import Found, Item, Missing
from triage.collect.progress import Progress, size
from triage.collect.run import Run, run_command
from triage.ingest.reader import Limits
from triage.parsers.manifest import FORMAT  # what the bundle reader recognises the manifest by


@dataclass
class Options:
    command: list[str]
    component: Path | None = None
    redact: bool = False
    with_core: bool = False
    log_level: int = 3
    timeout: float | None = None
    output_limit: int = 32 << 20
    core_limit: int = Limits().member_bytes  # a bigger core would be skipped by the bundle reader


@dataclass
class Collection:
    items: list[Item] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    manifest: dict = field(default_factory=dict)
    ended: str | None = None

    def add(self, found: Found | list[Found]) -> None:
        for one in found if isinstance(found, list) else [found]:
            (self.items if isinstance(one, Item) else self.missing).append(one)


def _run_items(run: Run) -> list[Item]:
    items = [Item("command.txt", "the command, its working folder, log level and how it ended", run.describe())]
    for name, stream in (("stdout", run.captured.stdout), ("stderr", run.captured.stderr)):
        what = f"the command's standard {'output' if name == 'stdout' else 'error'}"
        what += " (with the HIP runtime log)" if name == "stderr" and run.log_level else ""
        if stream.cut:
            what += f", {stream.total} bytes cut to the first and last {size(stream.limit // 2)}"
        items.append(Item(f"{name}.txt", what, stream.value()))
    return items


def _run_manifest(run: Run) -> dict:
    c = run.captured
    signal_short = run.signal_name[3:] if run.signal_name and not c.stopped else None
    return {
        "pid": c.pid,
        "cwd": run.cwd,
        "amd_log_level": run.log_level,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(c.started)),
        "seconds": round(c.seconds, 3),
        "ended": run.status_line(),
        "exit_status": None if c.stopped else run.exit_code,
        "signal": signal_short,
        "signal_number": None if c.stopped else run.signal_number,
        "stopped_by_collect": c.stopped,
        "timeout_s": run.timeout,
        "stdout_bytes": c.stdout.total,
        "stderr_bytes": c.stderr.total,
        "notes": c.notes,
    }


def _core(options: Options, pid: int) -> Found:
    if options.redact:
        return Missing("core file", "--redact cannot clean a core's memory, so it is left out")
    return probes.core_file(pid, options.core_limit)


def _steps(options: Options, run: Run | None, mark: probes.KernelMark | None,
           env: dict[str, str]) -> list[tuple[str, Callable[[], Found | list[Found]]]]:
    """The gatherers to run, in order, as (label, call)."""
    pid = run.captured.pid if run else None
    comm = os.path.basename(options.command[0])[:15] if options.command else None
    steps: list[tuple[str, Callable[[], Found | list[Found]]]] = [
        ("kernel log", lambda: probes.kernel_log(mark, run.captured.started if run else None,
                                                 run.started_monotonic if run else None, pid, comm)),
    ]
    crashed = run is not None and not run.captured.stopped and run.signal_name in probes.CORE_SIGNALS
    if crashed:
        steps.append(("coredump", lambda: probes.coredump_info(pid, system.core_settings())))
        if options.with_core:
            steps.append(("core file", lambda: _core(options, pid)))
    steps += [
        ("rocminfo", probes.rocminfo),
        ("amd-smi / rocm-smi", probes.smi),
        ("versions", system.system_item),
        ("environment", lambda: system.environment_item(env)),
    ]
    if run is not None:
        program = shutil.which(options.command[0], path=env.get("PATH"))
        steps.append(("ldd", lambda: probes.ldd(program, env)))
    if options.component is not None:
        steps.append(("component folder", lambda: component(options.component)))
    return steps


def gather(options: Options, progress: Progress) -> Collection:
    """Everything for the bundle, redacted when asked. OSError if the command cannot be started."""
    out = Collection()
    run = mark = None
    env = dict(os.environ)
    if options.command:
        shown = subprocess.list2cmdline(options.command)
        mark = probes.kernel_mark()
        progress.show(f"running {shown}")
        run = run_command(options.command, options.log_level, options.timeout, options.output_limit,
                          on_tick=lambda seconds, size: progress.running(shown, seconds, size))
        env["AMD_LOG_LEVEL"] = str(options.log_level)
        out.items += _run_items(run)
        out.ended = run.status_line()
    else:
        out.missing.append(Missing("command run", "no command was given (triage collect -- COMMAND runs it with the "
                                   "HIP runtime log on and records how it ends)"))
    steps = _steps(options, run, mark, env)
    for number, (label, step) in enumerate(steps, 1):
        progress.show(f"[{number}/{len(steps)}] {label}")
        out.add(step())
    progress.clear()
    out.manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool": f"hip-triage {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "redacted": options.redact,
        "command": options.command or None,
        "run": _run_manifest(run) if run else None,
        "collected": {item.name: item.what for item in out.items},
        "missing": {m.item: m.why for m in out.missing},
    }
    if options.redact:
        _redact(out, env, run)
    return out


def _redact(out: Collection, env: dict[str, str], run: Run | None) -> None:
    """Every text, member name and manifest string through the same scrubber; the command line
    argument by argument, in the manifest and in command.txt."""
    from triage.collect.scrub import scrubber

    texts = [i.data if isinstance(i.data, str) else i.data.decode("utf-8", "replace") for i in out.items]
    command = out.manifest.get("command") or []
    scrub = scrubber([*texts, *_strings(out.manifest), subprocess.list2cmdline(command)], env)
    argv = scrub.argv(command)
    if run is not None:  # the command line as the argument-wise redaction left it, then scrubbed as text
        texts = [run.describe(argv) if i.name == "command.txt" else text for i, text in zip(out.items, texts)]
    out.items = [Item(scrub(i.name), scrub(i.what), scrub(text)) for i, text in zip(out.items, texts)]
    out.missing = [Missing(scrub(m.item), scrub(m.why)) for m in out.missing]
    out.manifest = {key: {scrub(k): scrub(v) for k, v in value.items()} if key in ("collected", "missing")
                    else (argv or None) if key == "command" else _scrubbed(value, scrub)
                    for key, value in out.manifest.items()}
    out.ended = scrub(out.ended) if out.ended else None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _scrubbed(value: object, scrub: Callable[[str], str]) -> object:
    """Every string value scrubbed; keys are the manifest's own and stay."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v, scrub) for v in value]
    return value
