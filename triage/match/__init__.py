"""Match a Case against the signature database (top-level ``signatures/``)."""

from triage.match.database import Database, SignatureError, load
from triage.match.engine import match

__all__ = ["Database", "SignatureError", "load", "match"]
