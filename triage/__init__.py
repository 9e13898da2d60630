"""hip-triage: recognise known HIP/ROCm failures in what users send, and say what to do."""

__version__ = "0.1.0"
