"""Inspect what a user sent beyond logs: fat binaries (offload bundles) and runtime folders.

``bundle`` reads the offload bundles of a binary, ``targets`` knows which code object a GPU
can load, ``gpu`` answers "can this binary run on that GPU", ``component`` checks a bundled
runtime folder, ``folder`` gets that folder from a real directory or from a case's listing and
manifest, and ``describe`` turns results into text and JSON.
"""
