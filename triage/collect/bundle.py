"""Write the bundle: a zip of the gathered items and ``manifest.json``, all or nothing.

The zip is written to a temporary file next to the output and renamed over it only when
complete, so a failure or Ctrl-C leaves neither a half-written bundle nor a stray file.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
import zipfile
from pathlib import Path

from triage.collect.items import Item

MANIFEST = "manifest.json"
FORMAT_VERSION = 1


def manifest_text(manifest: dict) -> str:
    """One key per line (the report quotes manifest lines as evidence)."""
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, time.localtime()[:6])
    info.external_attr = (stat.S_IFREG | 0o644) << 16  # a plain file, for readers that check
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def write(path: Path, items: list[Item], manifest: dict) -> int:
    """Write the zip atomically; returns its size in bytes. OSError if it cannot be written."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as raw:
            with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(_member(MANIFEST), manifest_text(manifest))
                for item in items:
                    data = item.data.encode("utf-8") if isinstance(item.data, str) else item.data
                    archive.writestr(_member(item.name), data)
            raw.flush()
            os.fsync(raw.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # as any file the user makes (mkstemp's is 0600)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return path.stat().st_size
