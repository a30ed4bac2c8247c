"""Users: accounts and their roles, made and changed (services, each with its audit event),
and read for the Users page (the page of users, one user)."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import Prefetch, Q, QuerySet
from django.db.models.functions import Lower

from .audit import audit_record
from .roles import Role, roles_sync

UNKNOWN_ROLE = "unknown role {role!r}"

USERS_PER_PAGE = 50

# Audit actions (sejury_web.audit).
USER_CREATE = "user.create"
USER_ROLES = "user.roles"
USER_PASSWORD = "user.password"  # noqa: S105 (an audit action, not a password)


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
    *,
    username: str,
    password: str | None,
    roles: Iterable[str],
    email: str = "",
    actor: User | None,
) -> User:
    """Create a user with ``roles``; ``password=None`` leaves no usable password.

    ``actor`` is the lead who created the user (None for an import or a script).
    """
    user = User(username=username, email=email)
    if password is None:
        user.set_unusable_password()
    else:
        user.set_password(password)
    user.save()
    groups = _groups(roles)
    user.groups.set(groups)
    detail = {"roles": sorted(group.name for group in groups)}
    audit_record(actor=actor, action=USER_CREATE, target=user, detail=detail)
    return user


@transaction.atomic
def user_set_roles(*, user: User, roles: Iterable[str], actor: User | None) -> None:
    """Give ``user`` exactly ``roles`` (other groups are kept)."""
    before = sorted(user.groups.filter(name__in=Role.values).values_list("name", flat=True))
    keep = user.groups.exclude(name__in=Role.values)
    groups = _groups(roles)
    user.groups.set([*keep, *groups])
    after = sorted(group.name for group in groups)
    if after != before:
        detail = {"before": before, "after": after}
        audit_record(actor=actor, action=USER_ROLES, target=user, detail=detail)


@transaction.atomic
def user_password_set(*, user: User, password: str, actor: User | None) -> None:
    """Set ``user``'s password (a lead's, e.g. for an annotator first named by an import);
    the audit event says who set it, never the password."""
    user.set_password(password)
    user.save(update_fields=["password"])
    audit_record(actor=actor, action=USER_PASSWORD, target=user, detail={})


def users_found(*, query: str = "", role: str = "") -> QuerySet[User]:
    """Users by name, each with their roles: searched by name or e-mail (``query``), and
    filtered by ``role`` (or ``"none"``: users without one)."""
    users = User.objects.order_by("username").prefetch_related(
        Prefetch("groups", queryset=Group.objects.filter(name__in=Role.values))
    )
    if query:
        users = users.filter(Q(username__icontains=query) | Q(email__icontains=query))
    if role in Role.values:
        users = users.filter(groups__name=role)
    elif role == "none":
        users = users.exclude(groups__name__in=Role.values)
    return users


def users_found_count(*, query: str = "", role: str = "") -> int:
    """How many users ``users_found`` finds."""
    return users_found(query=query, role=role).count()


def users_page(*, query: str = "", role: str = "", page: int | str | None = 1) -> Page:
    """A page of the users ``users_found`` finds."""
    return Paginator(users_found(query=query, role=role), USERS_PER_PAGE).get_page(page)


@dataclass(frozen=True)
class RoleChange:
    """What ``users_role_change`` did: the users whose roles changed, those who already were
    as asked, and whether the lead's own lead role was kept (never removed)."""

    role: str
    give: bool
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    kept_own_lead: bool = False

    @property
    def message(self) -> str:
        """The sentence for the page: *Gave annotator to 12 users; 3 already had it.*"""
        role = Role(self.role).label.lower()
        done = f"{len(self.changed)} user{'s' if len(self.changed) != 1 else ''}"
        if not self.changed:
            done = "no user"
        sentence = f"Gave {role} to {done}" if self.give else f"Removed {role} from {done}"
        if self.unchanged:
            had = "already had it" if self.give else "did not have it"
            sentence += f"; {len(self.unchanged)} {had}"
        if self.kept_own_lead:
            sentence += "; you keep your own lead role"
        return sentence + "."


@transaction.atomic
def users_role_change(
    *, users: Iterable[User], role: str, give: bool, actor: User | None
) -> RoleChange:
    """Give ``role`` to each of ``users``, or take it from them (``give=False``), at once.

    All or nothing, in one transaction; each user whose roles change gets the audit event
    ``user_set_roles`` records (``user.roles``, before and after). A lead never removes their
    own lead role (as on one user's row): they are left as they are, and the result says so.
    """
    (group,) = _groups([role])
    ids = [user.pk for user in users]
    found = (
        User.objects.filter(pk__in=ids)
        .order_by("username")
        .select_for_update(of=("self",))
        .prefetch_related(Prefetch("groups", queryset=Group.objects.filter(name__in=Role.values)))
    )
    changed: list[User] = []
    unchanged: list[str] = []
    kept_own_lead = False
    for user in found:
        before = sorted(g.name for g in user.groups.all())
        if (role in before) == give:
            unchanged.append(user.username)
            continue
        if not give and role == Role.LEAD and actor is not None and user.pk == actor.pk:
            kept_own_lead = True
            continue
        after = sorted({*before, role}) if give else [name for name in before if name != role]
        changed.append(user)
        detail = {"before": before, "after": after}
        audit_record(actor=actor, action=USER_ROLES, target=user, detail=detail)
    if give:
        group.user_set.add(*changed)
    else:
        group.user_set.remove(*changed)
    return RoleChange(
        role=role,
        give=give,
        changed=tuple(user.username for user in changed),
        unchanged=tuple(unchanged),
        kept_own_lead=kept_own_lead,
    )


def user_get(*, user_id: int) -> User:
    """One user with their groups (``User.DoesNotExist`` otherwise)."""
    return User.objects.prefetch_related("groups").get(pk=user_id)


def users_by_folded_name(names: set[str]) -> dict[str, User]:
    """Existing users whose name matches one of ``names`` ignoring case, by lower-cased name."""
    folded = {name.lower() for name in names}
    found = User.objects.annotate(folded=Lower("username")).filter(folded__in=folded)
    return {user.username.lower(): user for user in found}


@dataclass(frozen=True)
class NonAnnotator:
    """An existing user without the annotator role: their name, and the roles they hold
    (lead, reviewer; none at all for a user only an import or a script made)."""

    username: str
    roles: tuple[str, ...]


def non_annotators() -> dict[str, NonAnnotator]:
    """Users who exist but hold no annotator role (nor are superusers), by lower-cased name."""
    rows = (
        User.objects.filter(is_superuser=False)
        .exclude(groups__name=Role.ANNOTATOR)
        .values_list("username", "groups__name")
    )
    roles: dict[str, set[str]] = {}
    for username, group in rows:
        held = roles.setdefault(username, set())
        if group in Role.values:
            held.add(group)
    return {name.lower(): NonAnnotator(name, tuple(sorted(held))) for name, held in roles.items()}


@transaction.atomic
def annotator_role_grant(
    *, usernames: Iterable[str], actor: User | None, detail: dict[str, Any]
) -> list[str]:
    """Give the annotator role to those of the existing users ``usernames`` (ignoring case)
    who hold no role at all, each change audited as the Users page's (``detail`` says why);
    never to a lead or a reviewer, who see what annotators must not. Returns whom it gave."""
    users = User.objects.filter(
        pk__in=[u.pk for u in users_by_folded_name(set(usernames)).values()]
    )
    users = users.prefetch_related(
        Prefetch("groups", queryset=Group.objects.filter(name__in=Role.values))
    ).order_by("username")
    (annotator,) = _groups([Role.ANNOTATOR])
    granted = []
    for user in users:
        if user.groups.all():  # a role already (a lead, a reviewer, or an annotator)
            continue
        user.groups.add(annotator)
        audit_record(
            actor=actor,
            action=USER_ROLES,
            target=user,
            detail={"before": [], "after": [Role.ANNOTATOR.value], **detail},
        )
        granted.append(user.username)
    return granted


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
