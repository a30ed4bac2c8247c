"""Logging: an ordinary 400, 403 or 404 is one line in the log, not a traceback."""

import logging

QUIET_STATUSES = frozenset({400, 403, 404})


class ClientErrorsWithoutTraceback(logging.Filter):
    """Drop the traceback Django attaches to "Bad Request", "Forbidden (Permission denied)"
    and "Not Found" records of ``django.request``: the user's mistake (or a role check doing
    its job), not the server's. The line itself stays, with its path."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) in QUIET_STATUSES:
            record.exc_info = None
            record.exc_text = None
        return True
