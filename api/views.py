"""Pages of the API: a user's tokens (the roles the API serves, ``BROWSERS``: create, see,
revoke their own; an annotator-only user gets the 403 page, since every operation refuses
them),
and the docs page, rendered on the server from the OpenAPI document (no script, so the
Content-Security-Policy holds)."""

from typing import Any

from django.contrib.messages import success
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from api.endpoints import api
from api.endpoints.common import BROWSERS
from api.forms import TokenForm
from api.models import ApiToken
from api.tokens import token_create, token_of, token_revoke, tokens_of
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.roles import role_required

METHODS = ("get", "post", "put", "patch", "delete")
UNKNOWN_TOKEN_ID = "you have no API token {token}"  # noqa: S105 (a message, not a token)


@require_http_methods(["GET", "POST"])
@role_required(*BROWSERS)
def token_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_token = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            made = token_create(
                actor=request.user, user=request.user, name=form.cleaned_data["name"]
            )
            new_token = made
            form = TokenForm()
        else:
            status = 400
    context = {"form": form, "tokens": tokens_of(request.user), "new_token": new_token}
    # The token is shown on this answer only: never stored, never redirected with.
    response = render(request, "api/tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def token_revoke_view(request: AuthenticatedHtmxRequest, token_id: int) -> HttpResponse:
    try:
        token = token_of(user=request.user, token_id=token_id)
    except ApiToken.DoesNotExist:
        raise Http404(UNKNOWN_TOKEN_ID.format(token=token_id)) from None
    token_revoke(actor=request.user, token=token)
    success(request, f"Revoked the token {token.prefix}… ({token.name}).")
    return redirect("api:tokens")


def _schema_name(schema: dict[str, Any]) -> str:
    ref = schema.get("$ref", "")
    if ref:
        return str(ref).rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_schema_name(schema.get('items', {}))}"
    if "anyOf" in schema:
        return " or ".join(_schema_name(s) for s in schema["anyOf"])
    return str(schema.get("type", schema.get("format", "object")))


def _answer_schema(answer: dict[str, Any]) -> str:
    contents: list[dict[str, Any]] = list(answer.get("content", {}).values())
    return _schema_name(contents[0].get("schema", {})) if contents else ""


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    operations = []
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            operation = item.get(method)
            if not operation:
                continue
            parameters = [
                {
                    "name": p["name"],
                    "where": p["in"],
                    "required": p.get("required", False),
                    "type": _schema_name(p.get("schema", {})),
                    "description": p.get("description", ""),
                }
                for p in operation.get("parameters", [])
            ]
            body = operation.get("requestBody", {}).get("content", {})
            operations.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "anchor": operation.get("operationId", f"{method}-{path}"),
                    "summary": _summary(operation),
                    "description": operation.get("description", ""),
                    "parameters": parameters,
                    "body": [
                        (kind, _schema_name(spec.get("schema", {}))) for kind, spec in body.items()
                    ],
                    "responses": [
                        (code, answer.get("description", ""), _answer_schema(answer))
                        for code, answer in operation.get("responses", {}).items()
                    ],
                }
            )
    return operations


def _schemas(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        required = set(schema.get("required", []))
        fields = [
            {"name": field, "type": _schema_name(spec), "required": field in required}
            for field, spec in schema.get("properties", {}).items()
        ]
        found.append({"name": name, "fields": fields})
    return found


def _summary(operation: dict[str, Any]) -> str:
    """The operation's first sentence (ninja's own summary is its function's name)."""
    description = " ".join(str(operation.get("description", "")).split())
    first = description.split(". ", 1)[0].rstrip(".").replace("``", "")
    return first or str(operation.get("summary", ""))


@require_GET
def docs(request: HttpRequest) -> HttpResponse:
    document = api.get_openapi_schema()
    return render(
        request,
        "api/docs.html",
        {
            "info": document.get("info", {}),
            "operations": _operations(document),
            "schemas": _schemas(document),
        },
    )
