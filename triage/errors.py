"""What a damaged input may raise, and how an unforeseen error is reported.

Parsers of binary formats (minidumps, core files, ELF libraries) raise or catch only the errors
that malformed data causes (``data_errors()``) and report them as a damaged file. Any other
exception is a bug: the stage that catches it says "internal error" in the report's warnings,
which the fuzz tool (tools/fuzz.py) and the tests count as a failure.
"""

from __future__ import annotations

import struct
import zlib


class BadInput(ValueError):
    """The input is damaged or of an unexpected shape (the message says how)."""


# Errors a damaged file makes the standard library raise.
_STANDARD_ERRORS: tuple[type[BaseException], ...] = (BadInput, struct.error, ValueError, IndexError, KeyError, EOFError,
                                                     OverflowError, UnicodeError, zlib.error)


def data_errors() -> tuple[type[BaseException], ...]:
    """Errors a damaged file makes the standard library and the parsing libraries (pyelftools) raise.

    A function, not a constant: an ``except`` clause evaluates it only when something was raised, so a
    triage of text never imports pyelftools (and the debugger module it pulls in) for this."""
    found: list[type[BaseException]] = []
    try:
        from elftools.common.exceptions import ELFError, ELFParseError

        found += [ELFError, ELFParseError]
    except ImportError:
        pass
    try:
        from elftools.construct.core import ConstructError

        found.append(ConstructError)
    except ImportError:
        pass
    return (*_STANDARD_ERRORS, *found)


INTERNAL = "internal error"


def internal(what: str, err: BaseException) -> str:
    """The warning for an unforeseen exception: a bug to report, with the input that caused it."""
    return f"{INTERNAL} in {what} ({type(err).__name__}: {err}); the rest was still read. Please report it with this input"
