"""Turn what the user gave (paths, folders, zips, stdin) into decoded text artifacts."""

from triage.ingest.reader import IngestError, read_inputs

__all__ = ["IngestError", "read_inputs"]
