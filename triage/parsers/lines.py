"""How long a line the line parsers read.

Stack frames, environment lines, strace calls and the like are short. A longer line is a
dump of data, not one of those records, and some of their regexes would cost time
quadratic in its length, so the line parsers pass over it (the runtime-log and kernel-log
parsers, whose patterns are anchored, still read it).
"""

MAX_LINE = 4096


def readable(text: str) -> bool:
    return len(text) <= MAX_LINE


def wanted_lines(lines: list[str], cased: tuple[str, ...], caseless: tuple[str, ...] = ()) -> list[int]:
    """Indexes of the lines holding one of the literals (``caseless`` ones case-folded), in order.

    A parser whose every pattern needs one of a few literals reads only these lines: one
    C-level search per literal over the whole text instead of regexes on every line.
    """
    import bisect
    from itertools import accumulate

    text = "\n".join(lines)
    lowered = text.casefold() if caseless else ""  # casefold: re.IGNORECASE also takes "ſ" for "s"
    if caseless and len(lowered) != len(text):  # a character that folds to several: line by line
        return [i for i, line in enumerate(lines) if any(w in line for w in cased)
                or any(w in line.casefold() for w in caseless)]
    found: set[int] = set()
    for haystack, words in ((text, cased), (lowered, caseless)):
        for word in words:
            at = haystack.find(word)
            while at >= 0:
                found.add(at)
                at = haystack.find(word, at + 1)
    if not found:
        return []
    ends = list(accumulate(len(line) + 1 for line in lines))  # one past each line's newline
    return sorted({bisect.bisect_right(ends, at) for at in found})
