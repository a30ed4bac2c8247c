"""What the OpenAPI document says beyond the operations' type hints: the answers every
operation may give whoever wrote it, so that a client generated from the document knows
every status it can meet, and one body for each.

- Every operation: 401 (no token, or an unknown or revoked one) and 429 with ``Retry-After``
  (the token's rate, or too many failed tokens); every operation that takes a parameter or
  a body: 422 when one is invalid (a path or query parameter of the wrong type included),
  and 404 when its path names nothing (or no such path matches).
- A body: 400 when it cannot be read as its ``Content-Type`` says (not JSON, a broken
  multipart), 413 when it is over its limit (Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` for
  JSON, ``SEJURY_BUNDLE_MAX_BYTES`` for a bundle).
- A POST: the ``Idempotency-Key`` header, and 409: with ``Retry-After`` while a request
  with the same key is still being answered, without when the key named another request.

Each is an ``Error`` unless the operation declares its own schema for the status (the runs'
``NotReady``, the bundle's ``BundleErrors``), which ``api.errors.error_body`` then fills
whoever refuses the request.
"""

from typing import Any

from api.idempotency import HEADER, KEY_MAX

ERROR_REF = {"$ref": "#/components/schemas/Error"}
RETRY_AFTER = {
    "description": "Seconds to wait before trying again",
    "schema": {"type": "integer", "minimum": 1},
}
DESCRIPTIONS = {
    "400": "The body cannot be read as its Content-Type says (not JSON, a broken multipart)",
    "401": "No token, or a token that is unknown or revoked",
    "404": "The path names nothing",
    "409": "A request with this Idempotency-Key is still being answered (retry after "
    "Retry-After seconds), or the key was used for a different request (use a new key)",
    "413": "The body is over the size limit",
    "422": "The request is invalid: `errors` says which field and why",
    "429": "Too many requests from this token, or too many failed tokens from this address: "
    "retry after Retry-After seconds",
}
IDEMPOTENCY_KEY = {
    "in": "header",
    "name": HEADER,
    "required": False,
    "description": "Any text that names this request: a retry with the same key (and the "
    "same request) is answered as the first was, and nothing is done twice",
    "schema": {"type": "string", "maxLength": KEY_MAX},
}


def _error(responses: dict[str, Any], status: str, *, retry_after: bool | None = None) -> None:
    """Declare ``status`` as an ``Error`` unless the operation did; with ``Retry-After``
    (required when ``retry_after`` is True, possible when False)."""
    response = responses.setdefault(
        status,
        {
            "description": DESCRIPTIONS[status],
            "content": {"application/json": {"schema": ERROR_REF}},
        },
    )
    if retry_after is not None:
        header = RETRY_AFTER | {"required": retry_after}
        response.setdefault("headers", {})["Retry-After"] = header


def _operation(method: str, operation: dict[str, Any]) -> None:
    # ninja keys the declared statuses by number; JSON by text, as here.
    responses = {str(status): value for status, value in operation.get("responses", {}).items()}
    operation["responses"] = responses
    parameters = operation.get("parameters", [])
    body = operation.get("requestBody", {}).get("content", {})
    _error(responses, "401")
    _error(responses, "429", retry_after=True)
    if parameters or body:
        _error(responses, "422")
    if any(parameter["in"] == "path" for parameter in parameters):
        _error(responses, "404")
    if body:
        _error(responses, "400")
        _error(responses, "413")
    if method == "post":
        if not any(parameter.get("name") == HEADER for parameter in parameters):
            operation["parameters"] = [*parameters, IDEMPOTENCY_KEY]
        _error(responses, "409", retry_after=False)
        _error(responses, "422")
    operation["responses"] = dict(sorted(responses.items()))  # by status, as readers look


def document_errors(document: dict[str, Any]) -> dict[str, Any]:
    """The document with every operation's errors declared (changed in place)."""
    for operations in document.get("paths", {}).values():
        for method, operation in operations.items():
            _operation(method, operation)
    return document
