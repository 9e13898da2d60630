"""How long a line the line parsers read.

Stack frames, environment lines, strace calls and the like are short. A longer line is a
dump of data, not one of those records, and some of their regexes would cost time
quadratic in its length, so the line parsers pass over it (the runtime-log and kernel-log
parsers, whose patterns are anchored, still read it).
"""

MAX_LINE = 4096


def readable(text: str) -> bool:
    return len(text) <= MAX_LINE
