"""User services: accounts and their roles."""

from collections.abc import Iterable

from django.contrib.auth.models import Group, User
from django.db import transaction

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


def annotators_ensure(*, usernames: Iterable[str]) -> dict[str, User]:
    """The users named ``usernames``, created (without usable password) if missing.

    Every one of them ends up in the annotator role.
    """
    names = set(usernames)
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    for name in sorted(names - users.keys()):
        user = User(username=name)
        user.set_unusable_password()
        users[name] = user
    User.objects.bulk_create([u for u in users.values() if u.pk is None])
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    (annotator,) = _groups([Role.ANNOTATOR])
    annotator.user_set.add(*users.values())
    return users
