"""The JSON API for pipelines (issue 17): ``/api/v1/``, token-authenticated.

Built on django-ninja rather than Django REST framework: the operations are a handful of
functions over the existing services and selectors, and ninja derives their OpenAPI document
(``/api/v1/openapi.json``) and request validation (pydantic) from the functions' type hints,
with no serializer or viewset layer to keep in step with them. Its Swagger page is not used:
the product's Content-Security-Policy allows no inline script or style, so the docs page
(``/api/v1/docs``) is rendered on the server from the same OpenAPI document.

``api`` sits above the other apps: it may import ``judging``, ``rubrics`` and ``sejury_web``;
nothing imports ``api`` (``tests/test_layering.py``).

- ``models``: ``ApiToken`` (stored as a SHA-256 digest, with a short prefix to recognise it),
  ``ApiThrottle`` (fixed-window counters in the database, shared by every web process),
  ``IdempotentRequest`` (a POST's answer kept under its ``Idempotency-Key``).
- ``tokens``: creating, revoking and checking tokens; ``throttle``: the rate limits;
  ``idempotency``: replaying a POST's answer; ``auth``: the bearer authentication;
  ``endpoints``: the operations; ``errors``: every error under ``/api/v1/`` as JSON;
  ``views``: the tokens page and the docs page.
"""
