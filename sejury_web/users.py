"""User services: accounts and their roles."""

from collections.abc import Iterable

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models.functions import Lower

from .roles import Role, roles_sync

UNKNOWN_ROLE = "unknown role {role!r}"


def _groups(roles: Iterable[str]) -> list[Group]:
    roles = set(roles)
    for role in roles:
        if role not in Role.values:
            raise ValueError(UNKNOWN_ROLE.format(role=role))
    groups = list(Group.objects.filter(name__in=roles))
    if len(groups) != len(roles):  # a database migrated before the groups existed
        roles_sync()
        groups = list(Group.objects.filter(name__in=roles))
    return groups


@transaction.atomic
def user_create(
    *, username: str, password: str | None, roles: Iterable[str], email: str = ""
) -> User:
    """Create a user with ``roles``; ``password=None`` leaves no usable password."""
    user = User(username=username, email=email)
    if password is None:
        user.set_unusable_password()
    else:
        user.set_password(password)
    user.save()
    user.groups.set(_groups(roles))
    return user


@transaction.atomic
def user_set_roles(*, user: User, roles: Iterable[str]) -> None:
    """Give ``user`` exactly ``roles`` (other groups are kept)."""
    keep = user.groups.exclude(name__in=Role.values)
    user.groups.set([*keep, *_groups(roles)])


def users_by_folded_name(names: set[str]) -> dict[str, User]:
    """Existing users whose name matches one of ``names`` ignoring case, by lower-cased name."""
    folded = {name.lower() for name in names}
    found = User.objects.annotate(folded=Lower("username")).filter(folded__in=folded)
    return {user.username.lower(): user for user in found}


def non_annotator_usernames() -> dict[str, str]:
    """Users who exist but hold no annotator role (nor are superusers), by lower-cased name."""
    users = User.objects.filter(is_superuser=False).exclude(groups__name=Role.ANNOTATOR)
    return {name.lower(): name for name in users.values_list("username", flat=True)}


def annotators_ensure(*, usernames: Iterable[str]) -> dict[str, User]:
    """The users named ``usernames`` (ignoring case), created without a usable password if
    missing, all in the annotator role; keyed by the names as given."""
    names = set(usernames)
    existing = users_by_folded_name(names)
    missing: dict[str, User] = {}
    for name in sorted(names):
        if name.lower() not in existing and name.lower() not in missing:
            missing[name.lower()] = User(username=name)
            missing[name.lower()].set_unusable_password()
    User.objects.bulk_create(missing.values())
    users = users_by_folded_name(names)
    (annotator,) = _groups([Role.ANNOTATOR])
    annotator.user_set.add(*users.values())
    return {name: users[name.lower()] for name in names}
