"""SHA-256 for the cache's keys, without importing ``hashlib``.

``hashlib`` starts OpenSSL when imported, some 2% of a warm single triage; CPython's own SHA-256
module gives the same digests and costs nothing to import. Another Python falls back to hashlib.
"""

from __future__ import annotations

try:
    from _sha256 import sha256
except ImportError:  # pragma: no cover - depends on the Python (3.12 names the module _sha2)
    try:
        from _sha2 import sha256  # type: ignore[no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[no-redef]

__all__ = ["sha256"]
