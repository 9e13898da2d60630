"""CMake's messages: ``CMake Error at cmake/LoadHIP.cmake:138 (find_package):`` and the text under it.

CMake words its errors as sentences and wraps them, two spaces in, over as many lines as they take::

    CMake Error at CMakeLists.txt:12 (project):
      No CMAKE_CUDA_COMPILER could be found.

      Tell CMake where to find the compiler by setting either the environment

A build's failure is often told only there ("Could not find nvcc executable in path specified by", "The ROCm root
directory: /usr does not contain the HIP runtime CMake package"), and evidence in a person's sentence counts half:
every line of such a message is claimed as a program's output. The message runs to the first line not indented two
spaces deeper than its header (CMake's "Call Stack (most recent call first):", the next "-- " status line); pip shows
a build's output six spaces in, header and message alike.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles

# "CMake Error at <file>:<line> (<command>):", "CMake Warning (dev) at ...", "CMake Error in <file>:", "CMake Error:"
_HEADER = lazy(r"^(?P<indent>[ \t]{0,8})CMake (?:Error|Warning|Deprecation (?:Error|Warning))(?: \(dev\))?"
               r"(?: (?:at|in) [^\n]{1,400}?(?::\d{1,7})?(?: \([\w.-]{1,64}\))?)?:")
_NEEDLES = Needles(_HEADER)
_MOST_LINES = 200  # a message longer than this is not one message


def parse(artifact: Artifact, case: Case) -> None:
    lines = artifact.lines
    read_to = 0  # a header inside the message before it (indented, or quoted in it) was read with that message
    for index in _NEEDLES.lines(artifact):
        header = _HEADER.match(lines[index]) if index >= read_to else None
        if header is None:
            continue
        deeper = len(header["indent"].expandtabs()) + 2  # CMake indents a message two spaces deeper than its header
        body = []
        read_to = min(len(lines), index + 1 + _MOST_LINES)
        for number in range(index + 1, read_to):
            text = lines[number].expandtabs()
            if not text.strip():
                continue
            if len(text) - len(text.lstrip()) < deeper:
                read_to = number
                break
            body.append(number + 1)
        case.claim(Where(artifact.name, index + 1), "cmake")
        case.claim_lines(artifact.name, body, "cmake")
