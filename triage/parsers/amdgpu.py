"""The amdgpu kernel driver's reports of a GPU in trouble, turned into facts: page faults, ring
timeouts, MES failures, resets and RAS errors, with any dmesg or journal prefix.

Examples::

    amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32794)
    amdgpu 0000:c3:00.0: amdgpu:  for process python3 pid 4711 thread python3 pid 4711)
    amdgpu 0000:c3:00.0: amdgpu:   in page starting at address 0x00007f418f76f000 from client 10
    amdgpu 0000:c3:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031
    amdgpu 0000:c3:00.0: amdgpu:          Faulty UTCL2 client ID: TCP (0x8)
    amdgpu 0000:c3:00.0: amdgpu:          PERMISSION_FAULTS: 0x3            (and MAPPING_ERROR, WALKER_ERROR, RW)
    [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=20268, emitted seq=20269
    [drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process blender pid 10728 thread blender:cs0 pid 10762
    amdgpu 0000:c5:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE
    amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!   /   GPU reset(2) succeeded!
    amdgpu 0000:83:00.0: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!

Each becomes an ``amdgpu_*`` fact (the first of each kind in the input wins), and the line is
claimed as kernel-log output. Signatures test the facts; reports quote the lines.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable

_PAGE_FAULT = lazy(r"\[(?P<hub>(?:gfx|mm|vm)hub\d*)\] (?P<retry>retry |no-retry )?page fault "
                         r"\(src_id:\d+ ring:\d+ vmid:(?P<vmid>\d+) pasid:(?P<pasid>\d+)(?P<rest>[^)]*)\)?")
_PROCESS = lazy(r"\bfor process (?P<name>\S*) pid (?P<pid>\d+)")
_FAULT_PAGE = lazy(r"\bin page starting at address (?P<addr>0x[0-9a-fA-F]+) from (?:IH )?client "
                         r"(?P<client>0x[0-9a-fA-F]+|\d+)(?: \((?P<name>\w+)\))?")
_FAULT_STATUS = lazy(r"\b(?P<hub>GCVM|MMVM|VM)_L2_PROTECTION_FAULT_STATUS\s*:\s*(?P<v>0x[0-9a-fA-F]+)")
_FAULT_FIELD = lazy(r"\b(?:Faulty UTCL2 client ID: (?P<client>\w+)|(?P<field>MORE_FAULTS|WALKER_ERROR|"
                          r"PERMISSION_FAULTS|MAPPING_ERROR|RW): (?P<v>0x[0-9a-fA-F]+))")
_RING_TIMEOUT = lazy(r"\bring (?P<ring>[\w.]+) timeout, signaled seq=\d+, emitted seq=\d+")
_HANG_PROCESS = lazy(r"Process information: process (?P<name>\S*) pid (?P<pid>\d+)")
_MES = lazy(r"\bMES failed to respon(?:d|se) (?:to )?msg=(?P<msg>\w+)|failed to (?P<what>remove hardware queue"
                  r"|unmap legacy queue|add hardware queue) (?:from|to) MES")
_RESET = lazy(r"\bGPU reset(?:\(\d+\))? (?P<state>begin|succeeded|failed)|\bGPU recovery (?P<off>disabled)"
                    r"|\bring (?P<ring>[\w.]+) reset (?P<ring_state>succeeded|failed)")
_RAS = lazy(r"\buncorrectable hardware error(?:s)?(?:\((?P<event>\w+)\))?(?: detected in (?P<block>\w+) block)?"
                  r"|\[RAS\]\s*(?P<ras>[^\n]{1,80}?(?:uncorrectable|poison)[^\n]{0,40})", re.IGNORECASE)
_NEEDLES = Needles(_PAGE_FAULT, _PROCESS, _FAULT_PAGE, _FAULT_STATUS, _FAULT_FIELD, _RING_TIMEOUT, _HANG_PROCESS,
                   _MES, _RESET, _RAS)

_FIELD_FACT = {"MORE_FAULTS": "amdgpu_fault_more", "WALKER_ERROR": "amdgpu_fault_walker_error",
               "PERMISSION_FAULTS": "amdgpu_fault_permission", "MAPPING_ERROR": "amdgpu_fault_mapping_error",
               "RW": "amdgpu_fault_rw"}


def parse(artifact: Artifact, case: Case) -> None:
    for index in _NEEDLES.lines(artifact):
        text = artifact.lines[index]
        if not readable(text):
            continue
        where = Where(artifact.name, index + 1)
        quoted = text.strip()
        found = False

        def fact(name: str, value: str, score: int = 60) -> None:
            nonlocal found
            case.add_fact(name, value, where, quoted, score)
            found = True

        if m := _PAGE_FAULT.search(text):
            fact("amdgpu_page_fault", m["hub"] + (" retry" if m["retry"] == "retry " else ""))
            fact("amdgpu_fault_vmid", m["vmid"])
            fact("amdgpu_fault_pasid", m["pasid"])
        if (m := _PROCESS.search(text)) and m["name"]:
            fact("amdgpu_fault_process", f"{m['name']} pid {m['pid']}")
        if m := _FAULT_PAGE.search(text):
            fact("amdgpu_fault_address", m["addr"].lower())
            if m["name"]:
                fact("amdgpu_fault_client", m["name"], 40)
        if m := _FAULT_STATUS.search(text):
            fact("amdgpu_fault_status", m["v"].lower())
        if m := _FAULT_FIELD.search(text):
            if m["client"]:
                fact("amdgpu_fault_client", m["client"])
            else:
                fact(_FIELD_FACT[m["field"]], m["v"].lower())
        if m := _RING_TIMEOUT.search(text):
            fact("amdgpu_ring_timeout", m["ring"])
        if (m := _HANG_PROCESS.search(text)) and m["name"]:
            fact("amdgpu_hang_process", f"{m['name']} pid {m['pid']}")
        if m := _MES.search(text):
            fact("amdgpu_mes_error", m["msg"] or m["what"])
        if m := _RESET.search(text):
            state = m["state"] or m["off"] or f"ring {m['ring']} reset {m['ring_state']}"
            fact("amdgpu_reset", state, 70 if state == "failed" else 60)
        if m := _RAS.search(text):
            fact("amdgpu_ras", m["event"] or m["block"] or (m["ras"] or "uncorrectable").strip())
        if found:
            case.claim(where, "kernel", "kernel-log")
            case.add_fact("os", "linux", where, quoted, 20)  # the amdgpu kernel driver's own report: a Linux kernel
