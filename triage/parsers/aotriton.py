"""AOTriton's own account of the kernel it looked for and the kernels its image pack holds (its debug builds print it,
and newer releases at AOTRITON_LOG debug level): ``aotriton_missing_arch`` when the pack lacks the GPU's architecture.

Example (a Windows debug build of PyTorch on gfx1103: the gfx11xx pack holds gfx1100 kernels only)::

    Trying to decompress kernel amd-gfx11xx\\flash\\attn_fwd\\FONLY__ attn_fwd-Sig-F__...--Arch_gfx1103
    dladdr locates libaotriton at: C:\\Portable\\python_embeded\\Lib\\site-packages\\torch\\lib\\aotriton_v2.dll
    PackedKernel decompressed to 000002610D6CE080
    Add kernel 0: attn_fwd-Sig-F__...--Arch_gfx1100 offset: 0
    Add kernel 1: attn_fwd-Sig-F__...--Arch_gfx1100 offset: 25496

The kernel asked for names the architecture (``--Arch_gfx1103``; ``stem=...--Arch_gfx1103`` in the newer log line),
and each ``Add kernel`` line is one entry of the pack's directory. When the pack listed entries right after the
request and none is for that architecture, the fact is the architecture asked for. A pack that holds it (the
normal load) gives nothing.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles

_WANT = lazy(r"Trying to decompress kernel\b.*?--Arch_(?P<arch>gfx[0-9a-f]{3,4})\b")
_HAVE = lazy(r"^\s*Add kernel \d+: \S*?--Arch_(?P<arch>gfx[0-9a-f]{3,4})\b")
_NEEDLES = Needles("Trying to decompress kernel", "Add kernel ")
_NEAR = 40  # directory lines belong to the request above them within this many lines


def parse(artifact: Artifact, case: Case) -> None:
    lines = artifact.lines
    want: tuple[str, int] | None = None
    have: set[str] = set()

    def settle() -> bool:
        if want is None or not have or want[0] in have:
            return False
        arch, index = want
        case.add_fact("aotriton_missing_arch", arch, Where(artifact.name, index + 1), lines[index].strip(), 40)
        return True

    for index in _NEEDLES.lines(artifact):
        text = lines[index]
        if m := _WANT.search(text):
            if settle():
                return
            want, have = (m["arch"], index), set()
        elif want is not None and index - want[1] <= _NEAR and (m := _HAVE.search(text)):
            have.add(m["arch"])
    settle()
