"""Long diffs on pages: the first lines in the page, the rest on demand, no wider than the page.

A page shows at most ``PAGE_LINES`` lines of a diff (``{% diff_view %}``); a "Show the
remaining lines" link loads the rest from ``rubrics:diff_more``, ``CHUNK_LINES`` at a time,
with htmx. A 1 MB diff (the bundle's limit, about 25,000 lines) no longer makes a page of
megabytes.

How the rest stays as private as the page it belongs to. The diff component knows only the
text it is given: the labelling page hands annotators plain values, never a patch, so no
view could re-check "may this user see this patch" without knowing every page. Instead, the
component keeps the text, named by its SHA-256, in ``VAR_DIR/diff-cache/`` and gives the
link a token the server signs (``TimestampSigner``, valid ``TOKEN_MAX_AGE``) holding that
hash and the id of the user the page was rendered for. The view serves lines of that text
only to that user, only while the token is fresh, and only what the hash names. So anyone
who loads the rest of a diff was shown its beginning by a page their role let them open,
minutes before: the view is exactly as role-checked as each page that shows a diff
(leads', reviewers', an annotator's own assignments), and an annotator's link names no
patch, bug or key, only a hash and their own id. A link given to another user is refused.

The cache holds only diffs past ``PAGE_LINES`` lines; a file unused for ``CACHE_DAYS`` is
removed when another is written. A link whose file is gone asks to reload the page.
"""

import hashlib
import os
import time
from pathlib import Path

from django.conf import settings
from django.core import signing

PAGE_LINES = 400  # the lines of a diff a page shows
CHUNK_LINES = 2000  # the lines each "Show more" loads
TOKEN_MAX_AGE = 24 * 3600  # seconds
CACHE_DAYS = 2
CACHE_DIR = "diff-cache"
_SALT = "rubrics.long_diffs"


class DiffGone(Exception):
    """The token is valid but its text is no longer kept: reload the page."""


class DiffExpired(Exception):
    """The token is older than ``TOKEN_MAX_AGE``: reload the page."""


def _cache_dir() -> Path:
    return Path(settings.VAR_DIR) / CACHE_DIR


def diff_keep(text: str) -> str:
    """Keep ``text`` for the on-demand view; its SHA-256 names it."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    folder = _cache_dir()
    path = folder / f"{digest}.diff"
    if path.exists():
        os.utime(path)  # in use: keep it
        return digest
    folder.mkdir(parents=True, exist_ok=True)
    _forget_old(folder)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8", errors="surrogatepass")
    os.replace(partial, path)
    return digest


def _forget_old(folder: Path) -> None:
    limit = time.time() - CACHE_DAYS * 24 * 3600
    for old in folder.iterdir():
        try:
            if old.stat().st_mtime < limit:
                old.unlink()
        except OSError:  # another process removed it first
            continue


def diff_token(digest: str, user_id: int) -> str:
    return signing.TimestampSigner(salt=_SALT).sign_object({"h": digest, "u": user_id})


def diff_for_token(token: str, user_id: int) -> str:
    """The text a token names, if it was signed for ``user_id`` and is fresh.

    Raises ``signing.BadSignature`` for a forged or foreign token (and ``PermissionError``
    for another user's), :class:`DiffExpired`, or :class:`DiffGone`.
    """
    signer = signing.TimestampSigner(salt=_SALT)
    try:
        payload = signer.unsign_object(token, max_age=TOKEN_MAX_AGE)
    except signing.SignatureExpired as exc:
        raise DiffExpired from exc
    if not isinstance(payload, dict) or payload.get("u") != user_id:
        raise PermissionError("this link was made for another user")
    digest = str(payload.get("h", ""))
    if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise signing.BadSignature("not a diff")
    try:
        return (_cache_dir() / f"{digest}.diff").read_text(encoding="utf-8", errors="surrogatepass")
    except FileNotFoundError as exc:
        raise DiffGone from exc
