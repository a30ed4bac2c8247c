"""The three roles of SE-Jury web, as Django groups with permissions.

Views check roles with :func:`role_required`; the groups also carry model permissions so
the admin site shows each role what it may touch.
"""

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any, TypeVar

from django.apps import AppConfig, apps
from django.contrib.auth.models import AnonymousUser, Group, Permission, User
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import HttpRequest

F = TypeVar("F", bound=Callable[..., Any])


class Role(models.TextChoices):
    LEAD = "lead", "Lead"
    REVIEWER = "reviewer", "Reviewer"
    ANNOTATOR = "annotator", "Annotator"


# Permissions per role as "app_label.codename"; "app_label.*" means every permission of the app.
ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    Role.LEAD: (
        "rubrics.*",
        "judging.*",
        "auth.view_user",
        "auth.add_user",
        "auth.change_user",
        "auth.view_group",
    ),
    Role.REVIEWER: (
        "rubrics.view_dataset",
        "rubrics.view_bug",
        "rubrics.view_patch",
        "rubrics.view_rubric",
        "rubrics.review_rubric",
        "rubrics.draft_rubric",
        "rubrics.view_rubricrevision",
    ),
    Role.ANNOTATOR: (
        "judging.add_annotation",
        "judging.change_annotation",
        "judging.view_annotation",
    ),
}

_CACHE_ATTR = "_sejury_roles"


def user_roles(user: User | AnonymousUser) -> frozenset[str]:
    """The roles of ``user``; a superuser holds all of them."""
    if not user.is_authenticated:
        return frozenset()
    cached = getattr(user, _CACHE_ATTR, None)
    if cached is None:
        if getattr(user, "is_superuser", False):
            cached = frozenset(Role.values)
        else:
            names = user.groups.filter(name__in=Role.values).values_list("name", flat=True)
            cached = frozenset(names)
        setattr(user, _CACHE_ATTR, cached)
    return cached


def user_has_role(user: User | AnonymousUser, *roles: str) -> bool:
    return bool(user_roles(user) & set(roles))


def role_required(*roles: str) -> Callable[[F], F]:
    """Let a view run only for users holding one of ``roles``; others get 403."""

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if not user_has_role(request.user, *roles):
                raise PermissionDenied(f"This page is for: {', '.join(roles)}.")
            return view(request, *args, **kwargs)

        return wrapped  # type: ignore[return-value]

    return decorator


def roles_context(request: HttpRequest) -> dict[str, Any]:
    roles = user_roles(request.user)
    return {
        "user_roles": roles,
        "is_lead": Role.LEAD in roles,
        "is_reviewer": Role.REVIEWER in roles,
        "is_annotator": Role.ANNOTATOR in roles,
    }


def _last_app_with_models() -> AppConfig | None:
    """The app whose ``post_migrate`` Django sends last (it skips apps without models)."""
    with_models = [app for app in apps.get_app_configs() if app.models_module is not None]
    return with_models[-1] if with_models else None


def _permissions(specs: Iterable[str]) -> list[Permission]:
    found: list[Permission] = []
    for spec in specs:
        app_label, codename = spec.split(".", 1)
        query = Permission.objects.filter(content_type__app_label=app_label)
        if codename != "*":
            query = query.filter(codename=codename)
        found.extend(query)
    return found


def roles_sync(*, app_config: AppConfig | None = None, **_: Any) -> None:
    """Create the role groups and give each its permissions (idempotent).

    As a ``post_migrate`` receiver it acts once per migrate (or test flush), on the last app's
    signal: the signal comes once per app, and the groups need every app's permissions, which
    each app's own signal creates first (Django's ``create_permissions``). Syncing on all 40
    signals made each flush of a transactional test cost 0.5 s more.
    """
    if app_config is not None and app_config is not _last_app_with_models():
        return
    for role, specs in ROLE_PERMISSIONS.items():
        group, _created = Group.objects.get_or_create(name=role)
        group.permissions.set(_permissions(specs))
