"""Symbols outside ASCII (a progress bar's blocks, a table's rules, an emoji) as one ASCII character.

A line outside ASCII is read the Python way (scanner.py), which costs far more than Hyperscan: a
model loader's progress bars made a third of a log's lines so. But many such lines hold no
character outside ASCII other than symbols: characters that are no word character, digit or
space (for ``re`` and ``regex`` alike) and have no case. A regex item that names no character
outside ASCII matches every such symbol or none of them (``.``, ``\\W``, ``[^x]`` match them all;
``\\w``, ``x``, ``[a-z]`` none), and so does it DEL; so where an expression's every item treats
DEL as it treats a symbol (expression.py says which), Hyperscan reads the line with each symbol
written as DEL and finds what the pattern finds on the line as it was.
"""

from __future__ import annotations

import unicodedata

SYMBOL = 0x7F  # DEL: what a symbol is written as
REPRESENTATIVE = "\u2588"  # a symbol (a full block) that stands for them all when an item is checked
# Symbols, dashes, brackets, quotes and other punctuation; no connector punctuation (regex's \w holds it), no marks,
# letters, numbers, separators or controls
_CATEGORIES = frozenset({"So", "Sm", "Sc", "Sk", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"})


def is_symbol(char: str) -> bool:
    """Whether ``char`` is a symbol outside ASCII as the module's docstring says."""
    return (not char.isascii() and unicodedata.category(char) in _CATEGORIES and not char.isalnum()
            and not char.isspace() and char.lower() == char == char.upper() == char.casefold())
