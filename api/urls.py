"""``/api/``: the tokens page and the docs page (namespace ``api``), and the JSON API itself
under ``/api/v1/`` (namespace ``api-v1``; it authenticates by token, so
``LoginRequiredMiddleware`` lets its requests through to it)."""

from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.urls import URLPattern, URLResolver, include, path

from api import views
from api.endpoints import api

pages = [
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/<id:token_id>/revoke/", views.token_revoke_view, name="token_revoke"),
    path("v1/docs", views.docs, name="docs"),
]


def _token_authenticated(patterns: list[Any]) -> list[Any]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            _token_authenticated(pattern.url_patterns)
        elif isinstance(pattern, URLPattern):
            pattern.callback = login_not_required(pattern.callback)
    return patterns


api_patterns, api_app_name, api_namespace = api.urls
urlpatterns: list[Any] = [
    path("", include((pages, "api"))),
    path(
        "v1/", include((_token_authenticated(api_patterns), api_app_name), namespace=api_namespace)
    ),
]
