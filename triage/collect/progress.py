"""What ``triage collect`` tells the person at the terminal while it works, and at the end.

Progress is one line redrawn in place on standard error, and only when that is a terminal;
piped or in CI, nothing is printed until the summary.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from triage.collect.items import Item, Missing


def size(n: int) -> str:
    """1536 -> "1.5 KiB"."""
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


class Progress:
    """A status line on a terminal; silent elsewhere."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = 0.0

    def show(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text[:200])
            self.stream.flush()

    def running(self, command: str, seconds: float, output: int) -> None:
        """Redraw the running command's line at most a few times a second."""
        now = time.monotonic()
        if now - self._drawn >= 0.25:
            self._drawn = now
            self.show(f"running {command}  {seconds:.0f} s, {size(output)} of output (Ctrl-C stops it; collection goes on)")

    def clear(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()


def summary(path: str, total: int, items: list[Item], missing: list[Missing], ended: str | None) -> str:
    """The closing words: where the bundle is, what is in it and what is not."""
    lines = [f"triage collect: wrote {path} ({size(total)})"]
    if ended:
        lines.append(f"  the command: {ended}")
    width = max([len(i.name) for i in items] + [len("manifest.json")])
    lines.append(f"  {'manifest.json':<{width}}  {'':>10}  what was collected, and what not and why")
    for item in items:
        data = len(item.data.encode("utf-8") if isinstance(item.data, str) else item.data)
        lines.append(f"  {item.name:<{width}}  {size(data):>10}  {item.what}")
    for m in missing:
        lines.append(f"  not collected: {m.item}: {m.why}")
    lines.append(f"Attach {path} to the issue; `triage {path}` shows what hip-triage makes of it.")
    return "\n".join(lines)
