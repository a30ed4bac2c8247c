"""Helpers of the API tests: tokens, bundles, a client that sends a token."""

import json
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from api.tokens import token_create
from tests.rubrics.bundles import bug, patch
from tests.rubrics.factories import make_diff

NDJSON = "application/x-ndjson"


def token_for(user: User, name: str = "test") -> str:
    return token_create(actor=None, user=user, name=name).token


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def bundle_bytes(bugs: int = 2, patches_per_bug: int = 3) -> bytes:
    records: list[dict[str, Any]] = []
    for b in range(bugs):
        records.append(bug(f"BUG-{b}"))
        for p in range(patches_per_bug):
            diff = make_diff(new=f"x = {p + 2}")
            records.append(patch(f"BUG-{b}-p{p}", f"BUG-{b}", diff=diff))
    return "".join(json.dumps(r) + "\n" for r in records).encode()


class TokenClient:
    """The Django test client with a token on every request."""

    def __init__(self, token: str) -> None:
        self.client = Client()
        self.headers = bearer(token)

    def get(self, path: str, **kw: Any) -> Any:
        return self.client.get(path, headers=self.headers | kw.pop("headers", {}), **kw)

    def post(
        self, path: str, data: Any = None, content_type: str = "application/json", **kw: Any
    ) -> Any:
        if isinstance(data, dict | list):
            data = json.dumps(data)
        headers = self.headers | kw.pop("headers", {})
        return self.client.post(path, data or b"", content_type=content_type, headers=headers, **kw)
