"""Who calls the API: a bearer token (``Authorization: Bearer TOKEN``), or, for reading only,
the browser's login session (so that a signed-in user can open the JSON and the docs).

A POST needs a token: a session never writes through the API (the API takes no CSRF token).
Failed tokens are counted per client address (past the ceiling, further failed tokens from
it get 429; a valid token is never refused for them), and each token's requests per window
(``api.throttle``); either limit answers 429 with ``Retry-After``.
"""

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest
from ninja.errors import AuthenticationError, HttpError
from ninja.security import HttpBearer

from api.throttle import auth_failure_record, auth_failures_over, token_over_rate
from api.tokens import token_check
from sejury_web.roles import user_has_role

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
NO_TOKEN = "send a token: Authorization: Bearer TOKEN (make one on the API tokens page)"  # noqa: S105 - a message
SESSION_READ_ONLY = (
    "a POST to the API needs a token (Authorization: Bearer TOKEN); a login session may only read"
)
BAD_TOKEN = "this token is unknown or revoked"  # noqa: S105 - a message
TOO_MANY_FAILURES = "too many failed tokens from this address; wait before trying again"
TOO_MANY_REQUESTS = "this token made too many requests; wait before the next one"
NOT_FOR_YOUR_ROLE = "the API's {what} is for: {roles} (as on the pages)"


class RateLimited(HttpError):
    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(429, message)
        self.retry_after = max(1, retry_after)


class ApiAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        header = request.headers.get(self.header, "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != self.openapi_scheme:
                raise AuthenticationError(message=NO_TOKEN)
            return self.authenticate(request, token.strip())
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            if request.method in SAFE_METHODS:
                return user
            raise AuthenticationError(message=SESSION_READ_ONLY)
        raise AuthenticationError(message=NO_TOKEN)

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        record = token_check(token)
        if record is None:
            # Past the ceiling only further bad tokens are refused: a valid token always
            # authenticates, whoever else sent bad ones from its address.
            wait = auth_failures_over(request)
            if wait is not None:
                raise RateLimited(TOO_MANY_FAILURES, wait)
            auth_failure_record(request)
            raise AuthenticationError(message=BAD_TOKEN)
        wait = token_over_rate(record.pk)
        if wait is not None:
            raise RateLimited(TOO_MANY_REQUESTS, wait)
        request.user = record.user
        return record.user


def caller(request: HttpRequest) -> User:
    """The user the request acts for (after authentication)."""
    user = request.auth  # type: ignore[attr-defined]
    assert isinstance(user, User)
    return user


def require_role(request: HttpRequest, what: str, *roles: str) -> User:
    """The caller, when they hold one of ``roles``; else 403, as the pages answer."""
    user = caller(request)
    if not user_has_role(user, *roles):
        raise HttpError(403, NOT_FOR_YOUR_ROLE.format(what=what, roles=", ".join(roles)))
    return user
