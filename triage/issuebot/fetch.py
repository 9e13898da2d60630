"""Attachments: which links in an issue are files GitHub holds for it, and fetching them safely.

Only GitHub's attachment hosts are read (``github.com/user-attachments/files/...``, the older
``github.com/OWNER/REPO/files/...``, and the ``*.githubusercontent.com`` hosts GitHub stores
uploads on), only the suffixes triage reads, and within size limits. Downloads carry no token:
the token belongs to the API (``api.py``); a redirect is followed only to another attachment host.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from triage.issuebot.api import REDIRECTS, Opener, no_redirect_opener

SUFFIXES = (".zip", ".log", ".txt", ".dmp", ".gz")
ATTACHMENT_HOSTS = frozenset({"github.com", "objects.githubusercontent.com", "user-images.githubusercontent.com",
                              "private-user-images.githubusercontent.com"})
MAX_ATTACHMENTS = 20
MAX_BYTES = 25 << 20  # GitHub's own limit for an attached file
MAX_TOTAL = 100 << 20  # all of one issue's attachments
_URL = re.compile(r"https://[^\s()<>\[\]\"'`]+")
# on github.com: /user-attachments/files/<id>/<name> (now) and /<owner>/<repo>/files/<id>/<name> (before 2024)
_GITHUB_FILE = re.compile(r"/(?:user-attachments|[\w.-]+/[\w.-]+)/files/\d+/[^/]+")


class FetchError(RuntimeError):
    """An attachment could not be read; the comment says so and the triage goes on without it."""


class Fetcher(Protocol):
    """Where attachments come from: GitHub (``Downloader``), a folder (``FolderFetcher``) or a test's fake."""

    def fetch(self, url: str, limit: int) -> bytes: ...


def is_attachment(url: str) -> bool:
    """A link to a file GitHub holds for an issue, with a suffix triage reads."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        return False
    if parts.scheme != "https" or parts.hostname not in ATTACHMENT_HOSTS or port is not None or parts.username:
        return False
    if parts.hostname == "github.com" and not _GITHUB_FILE.fullmatch(parts.path):
        return False
    return urllib.parse.unquote(parts.path).lower().endswith(SUFFIXES)


def attachment_urls(text: str) -> list[str]:
    """The attachment links in a Markdown text (linked or bare), in order, once each."""
    seen: dict[str, None] = {}
    for m in _URL.finditer(text or ""):
        url = m.group(0).rstrip(".,;:!?")
        if is_attachment(url):
            seen.setdefault(url, None)
    return list(seen)


def file_name(url: str) -> str:
    """A safe local base name for an attachment: its own, with anything but ``[\\w.+-]`` replaced."""
    base = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    return re.sub(r"[^\w.+-]", "_", base).lstrip(".")[:100] or "attachment"


class Downloader:
    """Fetches attachments anonymously from GitHub's attachment hosts, following redirects only among them."""

    def __init__(self, timeout: float = 60.0, opener: Opener | None = None) -> None:
        self.timeout = timeout
        self._opener = opener or no_redirect_opener()

    def fetch(self, url: str, limit: int) -> bytes:
        for _ in range(5):
            if urllib.parse.urlsplit(url).hostname not in ATTACHMENT_HOSTS or not url.startswith("https://"):
                raise FetchError("redirected away from GitHub's attachment hosts; not followed")
            request = urllib.request.Request(url, headers={"User-Agent": "hip-triage-issue-bot"})
            try:
                with self._opener.open(request, timeout=self.timeout) as response:
                    return _read_within(response, limit)
            except urllib.error.HTTPError as err:
                location = err.headers.get("Location") if err.code in REDIRECTS + (303,) else None
                if not location:
                    raise FetchError(f"HTTP {err.code}") from None
                url = urllib.parse.urljoin(url, location)
            except (urllib.error.URLError, OSError) as err:
                raise FetchError(str(getattr(err, "reason", err))) from None
        raise FetchError("too many redirects")


def too_big(limit: int) -> FetchError:
    """The error for a file over ``limit`` bytes."""
    return FetchError(f"over the {limit >> 20} MiB limit" if limit >= 1 << 20 else f"over the {limit} bytes left")


def _read_within(response: Any, limit: int) -> bytes:
    """The body, refused as soon as it is known to be over ``limit`` bytes (by its header or as read)."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big(limit)
    data = response.read(limit + 1)
    if len(data) > limit:
        raise too_big(limit)
    return data


class FolderFetcher:
    """Attachments from a folder of files downloaded before (a dry run): each link is served the file of
    its base name in the folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def fetch(self, url: str, limit: int) -> bytes:
        path = self.folder / file_name(url)
        if not path.is_file():
            raise FetchError(f"not in {self.folder}")
        if path.stat().st_size > limit:
            raise too_big(limit)
        return path.read_bytes()


class NoFetcher:
    """A dry run given no folder: attachments are listed as not read, and nothing touches the network."""

    def fetch(self, url: str, limit: int) -> bytes:
        raise FetchError("not read in a dry run without --attachments DIR")
