"""Bytes to text the parsers can read: BOMs, UTF-16 without BOM, CRLF, ANSI colours, NULs."""

from __future__ import annotations

import codecs

from triage.lazy import lazy

_ANSI = lazy(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


_BINARY_MAGIC = (b"\x7fELF", b"MDMP", b"PAGEDU64", b"PAGEDUMP", b"PK\x03\x04", b"\x1f\x8b")
_CONTROLS = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27))


def looks_binary(data: bytes) -> bool:
    """True for bytes that are not text in any encoding we read (ELF, minidump, zip...)."""
    head = data[:4096]
    if not head:
        return False
    if head.startswith(_BINARY_MAGIC):
        return True
    if _utf16_order(head):
        return False
    # A few NULs do not make a log binary (a file cut by a crash often has a run of them):
    # only a share of control bytes, NUL included, past 5% does.
    controls = len(head) - len(head.translate(None, _CONTROLS))
    return controls > len(head) // 20


def _utf16_order(head: bytes) -> str | None:
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be"
    sample = head[:512]
    if len(sample) >= 8:
        even_nuls = sample[0::2].count(0)
        odd_nuls = sample[1::2].count(0)
        half = len(sample) // 2
        if odd_nuls > half * 0.8 and even_nuls < half * 0.1:
            return "utf-16-le"
        if even_nuls > half * 0.8 and odd_nuls < half * 0.1:
            return "utf-16-be"
    return None


def text_encoding(head: bytes) -> str:
    """The encoding ``decode`` reads a text in, from its first bytes: ``utf-16-le``, ``utf-16-be`` or ``utf-8``."""
    return _utf16_order(head[:4096]) or "utf-8"


def decode(data: bytes, encoding: str | None = None) -> str:
    """Decode user bytes; never raises (undecodable bytes become U+FFFD).

    ``encoding`` (from ``text_encoding``) is for a piece cut from a longer text, whose own first bytes
    may not say it: the last part of a UTF-16 file, without its byte order mark.
    """
    order = encoding if encoding is not None else _utf16_order(data[:4096])
    if order and order != "utf-8":
        bom = codecs.BOM_UTF16_LE if order == "utf-16-le" else codecs.BOM_UTF16_BE
        body = data[len(bom):] if data.startswith(bom) else data
        text = body.decode(order, errors="replace")
    else:
        body = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
        text = body.decode("utf-8", errors="replace")
    # Each fix only where needed: looking for one character costs far less than a replace.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return without_colours(text)


def without_colours(text: str) -> str:
    """The text without a terminal's colour and title escape sequences."""
    return _ANSI.sub("", text) if "\x1b" in text else text
