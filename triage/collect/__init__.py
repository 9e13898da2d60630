"""``triage collect``: run a failing program and gather what triage needs into one bundle.

Users who hit a GPU crash otherwise guess what to send. One command runs the program with
the HIP runtime log on, then gathers the kernel log, coredump, GPU and driver tools' output,
versions, the environment that matters and the component folder, each best effort with a
timeout, and writes a zip with a manifest saying what is in it and what could not be had.

Modules, one job each: ``items`` (what a gatherer returns), ``process`` (run a process
with bounded output and a deadline), ``run`` (the user's command), ``probes`` (external
tools), ``system`` (files the kernel and the OS keep), ``component`` (a folder's listing and
manifests), ``scrub`` (``--redact``), ``bundle`` (the zip), ``progress`` (the terminal),
``gather`` (all of it, in order).
"""
