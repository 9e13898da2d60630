"""What each gatherer hands back: a file for the bundle, or a note of what could not be had."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Item:
    """One member of the bundle: its path in the zip, one line on what it is, and its content."""

    name: str
    what: str
    data: str | bytes


@dataclass
class Missing:
    """Something the bundle should hold and does not, with the reason (the report shows both)."""

    item: str
    why: str


Found = Item | Missing
