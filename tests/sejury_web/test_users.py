import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission, User
from django.core.management.sql import emit_post_migrate_signal
from django.db.models.signals import post_migrate
from django.test import Client
from django.urls import reverse

from sejury_web.audit import audit_events, audit_record
from sejury_web.models import AuditEvent
from sejury_web.roles import ROLE_PERMISSIONS, Role, user_roles
from sejury_web.users import (
    USER_PASSWORD,
    USER_ROLES,
    user_create,
    user_set_roles,
    users_role_change,
)
from tests.helpers import logs_in

pytestmark = pytest.mark.django_db


def test_migrate_creates_the_role_groups_with_their_permissions() -> None:
    groups = {g.name: g for g in Group.objects.prefetch_related("permissions__content_type")}
    assert set(groups) >= set(Role.values)
    lead_perms = {
        f"{p.content_type.app_label}.{p.codename}" for p in groups[Role.LEAD].permissions.all()
    }
    assert {
        "rubrics.import_bundle",
        "rubrics.change_patch",
        "judging.view_annotation",
        "auth.add_user",
    } <= lead_perms
    reviewer_perms = {p.codename for p in groups[Role.REVIEWER].permissions.all()}
    assert reviewer_perms == {spec.split(".")[1] for spec in ROLE_PERMISSIONS[Role.REVIEWER]}
    annotator_perms = {p.codename for p in groups[Role.ANNOTATOR].permissions.all()}
    assert "view_patch" not in annotator_perms
    assert "add_annotation" in annotator_perms


def test_the_groups_are_synced_once_per_migrate_after_every_app_s_permissions() -> None:
    """post_migrate comes once per app: the groups wait for the last one, by when every app's
    permissions exist (Django creates each app's on its own signal): one deleted here is
    created again on the judging app's signal and is in the lead's group."""
    Group.objects.all().delete()
    configs = [app for app in apps.get_app_configs() if app.models_module is not None]
    for app in configs[:-1]:
        post_migrate.send(sender=app, app_config=app, verbosity=0, interactive=False)
    assert not Group.objects.exists()
    Permission.objects.filter(
        content_type__app_label="judging", codename="view_annotation"
    ).delete()
    emit_post_migrate_signal(0, False, "default")
    lead = Group.objects.get(name=Role.LEAD)
    assert lead.permissions.filter(
        content_type__app_label="judging", codename="view_annotation"
    ).exists()
    assert set(Group.objects.values_list("name", flat=True)) >= set(Role.values)


def test_superusers_hold_every_role() -> None:
    admin = User.objects.create_superuser("admin", password="x")
    assert user_roles(admin) == frozenset(Role.values)


def test_lead_creates_a_user_with_roles(lead_client: Client) -> None:
    response = lead_client.post(
        reverse("user_list"),
        {
            "username": "newbie",
            "email": "newbie@example.org",
            "password1": "a-long-enough-pass-42",
            "password2": "a-long-enough-pass-42",
            "roles": [Role.REVIEWER, Role.ANNOTATOR],
        },
    )
    assert response.status_code == 302
    user = User.objects.get(username="newbie")
    assert user.check_password("a-long-enough-pass-42")
    assert user_roles(user) == {Role.REVIEWER, Role.ANNOTATOR}
    # The new user can log in and browse as a reviewer.
    client = Client()
    assert logs_in(client, "newbie", "a-long-enough-pass-42")
    assert client.get(reverse("rubrics:dataset_list")).status_code == 200


def test_user_form_errors_are_shown_and_nothing_created(lead_client: Client) -> None:
    response = lead_client.post(
        reverse("user_list"),
        {"username": "x", "password1": "short", "password2": "other", "roles": []},
    )
    assert response.status_code == 400
    assert not User.objects.filter(username="x").exists()
    assert response.context["form"].errors.keys() >= {"password2", "roles"}


def test_lead_changes_roles_with_htmx_and_gets_the_row(lead_client: Client, reviewer: User) -> None:
    response = lead_client.post(
        reverse("user_roles_update", args=[reviewer.pk]),
        {"roles": [Role.ANNOTATOR]},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith(f'<tr id="user-{reviewer.pk}">')
    reviewer = User.objects.get(pk=reviewer.pk)
    assert user_roles(reviewer) == {Role.ANNOTATOR}


def test_a_lead_cannot_remove_their_own_lead_role(lead_client: Client, lead: User) -> None:
    lead_client.post(reverse("user_roles_update", args=[lead.pk]), {"roles": [Role.REVIEWER]})
    assert user_roles(User.objects.get(pk=lead.pk)) == {Role.LEAD}


def test_set_roles_keeps_groups_that_are_not_roles() -> None:
    other = Group.objects.create(name="beta-testers")
    user = user_create(actor=None, username="u", password=None, roles=[Role.LEAD])
    user.groups.add(other)
    user_set_roles(actor=None, user=user, roles=[Role.REVIEWER])
    assert set(user.groups.values_list("name", flat=True)) == {"beta-testers", Role.REVIEWER}
    assert not user.has_usable_password()


def test_non_leads_cannot_change_roles(reviewer_client: Client, annotator: User) -> None:
    response = reviewer_client.post(
        reverse("user_roles_update", args=[annotator.pk]), {"roles": [Role.LEAD]}
    )
    assert response.status_code == 403
    assert user_roles(User.objects.get(pk=annotator.pk)) == {Role.ANNOTATOR}


def test_login_page_works_for_a_real_password(lead: User) -> None:
    client = Client()
    response = client.post(
        reverse("login"), {"username": "lead", "password": "correct horse battery staple"}
    )
    assert response.status_code == 302
    assert client.get(reverse("rubrics:dataset_list")).status_code == 200


def test_lead_sets_a_password_for_an_imported_annotator(lead: User, lead_client: Client) -> None:
    user = user_create(actor=None, username="rater-01", password=None, roles=[Role.ANNOTATOR])
    url = reverse("user_password_set", args=[user.pk])
    bad = lead_client.post(
        url, {"new_password1": "x", "new_password2": "y"}, headers={"HX-Request": "true"}
    )
    # 200, not 400: htmx 2 swaps no 4xx answer, and the lead must see why it was refused.
    assert bad.status_code == 200
    assert "didn’t match" in bad.content.decode() or "didn't match" in bad.content.decode()
    assert "HX-Request" in bad["Vary"]
    password = "a-long-enough-pass-42"
    good = lead_client.post(
        url, {"new_password1": password, "new_password2": password}, headers={"HX-Request": "true"}
    )
    assert good.status_code == 200
    assert logs_in(Client(), "rater-01", password)
    event = audit_events(user).first()  # who set it, never the password
    assert event is not None
    assert (event.action, event.actor, event.detail) == (USER_PASSWORD, lead, {})


def test_only_leads_set_passwords(reviewer_client: Client, annotator: User) -> None:
    url = reverse("user_password_set", args=[annotator.pk])
    assert (
        reviewer_client.post(
            url, {"new_password1": "p" * 20, "new_password2": "p" * 20}
        ).status_code
        == 403
    )


def test_there_is_no_public_password_reset_page(client: Client) -> None:
    assert client.get("/accounts/password_reset/").status_code == 404
    assert client.get("/accounts/password_change/").status_code == 302


def test_without_htmx_a_refused_password_shows_the_users_page_with_its_errors(
    lead_client: Client,
) -> None:
    user = user_create(actor=None, username="rater-02", password=None, roles=[Role.ANNOTATOR])
    other = user_create(actor=None, username="rater-03", password=None, roles=[Role.ANNOTATOR])
    url = reverse("user_password_set", args=[user.pk])
    bad = lead_client.post(url, {"new_password1": "x", "new_password2": "y"})
    assert bad.status_code == 400
    html = bad.content.decode()
    assert html.count('role="alert"') == 1  # on rater-02's row only
    row = html[html.index(f'id="user-{user.pk}"') : html.index(f'id="user-{other.pk}"')]
    assert 'role="alert"' in row
    good = lead_client.post(
        url, {"new_password1": "a-long-pass-77", "new_password2": "a-long-pass-77"}
    )
    assert good.status_code == 302


# -- the page at the size of a team (issue 16 item 14) ----------------------------------------


@pytest.fixture
def many_users(lead: User) -> list[User]:
    """60 annotators (rater-00 … rater-59) and the lead."""
    return [
        user_create(actor=None, username=f"rater-{n:02d}", password=None, roles=[Role.ANNOTATOR])
        for n in range(60)
    ]


def rows(html: str) -> list[str]:
    return [part.split('"', 1)[0] for part in html.split('<tr id="user-')[1:]]


def test_the_users_page_is_paged_in_fixed_queries(
    lead_client: Client, many_users: list[User], django_assert_max_num_queries: object
) -> None:
    first = lead_client.get(reverse("user_list"))
    assert len(rows(first.content.decode())) == 50
    assert "Page 1 of 2" in first.content.decode()
    assert "61 users" in first.content.decode()
    second = lead_client.get(reverse("user_list"), {"page": 2})
    assert len(rows(second.content.decode())) == 11
    shown = set(rows(first.content.decode())) | set(rows(second.content.decode()))
    assert shown == {str(u.pk) for u in User.objects.all()}
    with django_assert_max_num_queries(12):  # type: ignore[operator]
        lead_client.get(reverse("user_list"))


def test_the_users_page_searches_names_and_filters_roles(
    lead_client: Client, lead: User, many_users: list[User]
) -> None:
    found = lead_client.get(reverse("user_list"), {"q": "RATER-1"}).content.decode()
    assert set(rows(found)) == {str(u.pk) for u in many_users if u.username.startswith("rater-1")}
    leads = lead_client.get(reverse("user_list"), {"role": Role.LEAD}).content.decode()
    assert rows(leads) == [str(lead.pk)]
    nobody = lead_client.get(reverse("user_list"), {"q": "zz"}).content.decode()
    assert "No user matches." in nobody


def test_setting_a_password_is_behind_a_button_on_each_row(
    lead_client: Client, many_users: list[User]
) -> None:
    html = lead_client.get(reverse("user_list")).content.decode()
    # One closed "Set password…" box per row: no password box shows until it is opened.
    assert html.count('<details class="password-box">') == 50
    assert html.count("<summary>Set password…</summary>") == 50


# -- a role for many users at once (issue 28 item 3) -------------------------------------------


def test_a_lead_gives_a_role_to_the_users_ticked_each_audited(
    lead_client: Client, lead: User, reviewer: User, many_users: list[User]
) -> None:
    ticked = [*many_users[:3], reviewer]
    response = lead_client.post(
        reverse("user_roles_bulk"),
        {"change": "give", "role": Role.REVIEWER, "scope": "ticked", "users": ticked_ids(ticked)},
        follow=True,
    )
    assert response.redirect_chain == [(reverse("user_list"), 302)]
    assert "Gave reviewer to 3 users; 1 already had it." in response.content.decode()
    for user in many_users[:3]:
        assert user_roles(User.objects.get(pk=user.pk)) == {Role.ANNOTATOR, Role.REVIEWER}
        (event,) = audit_events(user).filter(action=USER_ROLES)
        assert event.actor == lead
        assert event.detail == {
            "before": [Role.ANNOTATOR],
            "after": [Role.ANNOTATOR, Role.REVIEWER],
        }
    assert not audit_events(reviewer).filter(action=USER_ROLES).exists()  # nothing changed
    assert user_roles(User.objects.get(pk=many_users[3].pk)) == {Role.ANNOTATOR}


def test_every_user_a_search_finds_on_every_page_with_htmx(
    lead_client: Client, lead: User, many_users: list[User]
) -> None:
    url = reverse("user_roles_bulk") + "?q=rater&page=2"
    response = lead_client.post(
        url,
        {"change": "remove", "role": Role.ANNOTATOR, "scope": "found", "found": "60"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="users-list">')
    assert "Removed annotator from 60 users." in html
    assert not User.objects.filter(groups__name=Role.ANNOTATOR).exists()
    assert AuditEvent.objects.filter(action=USER_ROLES).count() == 60
    assert user_roles(User.objects.get(pk=lead.pk)) == {Role.LEAD}


def test_a_search_that_finds_others_now_is_not_changed_blind(
    lead_client: Client, many_users: list[User]
) -> None:
    user_create(actor=None, username="rater-new", password=None, roles=[Role.ANNOTATOR])
    response = lead_client.post(
        reverse("user_roles_bulk") + "?q=rater",
        {"change": "give", "role": Role.LEAD, "scope": "found", "found": "60"},
    )
    assert response.status_code == 400
    assert "The search now finds 61 users, not the 60 shown" in response.content.decode()
    assert not AuditEvent.objects.filter(action=USER_ROLES).exists()
    # The error page's pager and search lead back to the Users page, not to the POST-only
    # address it was rendered at.
    assert 'href="/users/?q=rater&amp;page=2"' in response.content.decode()
    assert '<form method="get" action="/users/" class="search"' in response.content.decode()


def test_nothing_ticked_is_refused(lead_client: Client, many_users: list[User]) -> None:
    response = lead_client.post(
        reverse("user_roles_bulk"), {"change": "give", "role": Role.LEAD, "scope": "ticked"}
    )
    assert response.status_code == 400
    assert "Tick at least one user" in response.content.decode()
    assert User.objects.filter(groups__name=Role.LEAD).count() == 1


def test_a_lead_removing_lead_from_many_keeps_their_own(
    lead_client: Client, lead: User, many_users: list[User]
) -> None:
    other = user_create(actor=None, username="lead-2", password=None, roles=[Role.LEAD])
    response = lead_client.post(
        reverse("user_roles_bulk"),
        {"change": "remove", "role": Role.LEAD, "scope": "ticked", "users": [lead.pk, other.pk]},
        headers={"HX-Request": "true"},
    )
    assert "Removed lead from 1 user; you keep your own lead role." in response.content.decode()
    assert user_roles(User.objects.get(pk=lead.pk)) == {Role.LEAD}
    assert user_roles(User.objects.get(pk=other.pk)) == set()


def test_a_change_for_many_is_all_or_nothing(
    lead: User, many_users: list[User], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []

    def fails_the_third(**kwargs: object) -> None:
        calls.append(kwargs)
        if len(calls) == 3:
            raise RuntimeError("the database went away")
        audit_record(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("sejury_web.users.audit_record", fails_the_third)
    with pytest.raises(RuntimeError):
        users_role_change(users=many_users[:5], role=Role.REVIEWER, give=True, actor=lead)
    assert not AuditEvent.objects.filter(action=USER_ROLES).exists()
    assert not User.objects.filter(groups__name=Role.REVIEWER).exists()


@pytest.mark.parametrize("who", ["reviewer_client", "annotator_client"])
def test_only_leads_change_roles_for_many(
    who: str, request: pytest.FixtureRequest, many_users: list[User]
) -> None:
    client: Client = request.getfixturevalue(who)
    response = client.post(
        reverse("user_roles_bulk"),
        {"change": "give", "role": Role.LEAD, "scope": "found", "found": "62"},
    )
    assert response.status_code == 403
    assert User.objects.filter(groups__name=Role.LEAD).count() == 1


def test_the_users_page_offers_the_change_for_many(
    lead_client: Client, many_users: list[User]
) -> None:
    html = lead_client.get(reverse("user_list"), {"q": "rater"}).content.decode()
    assert html.count('form="users-bulk"') == 50  # a box on each row of the page
    assert "all 60 users found, on all 2 pages" in html
    assert 'action="/users/roles/?q=rater"' in html
    # Ticking the whole page waits for static/js/users.js; the rest is a plain form.
    assert 'id="users-tick-page" aria-label="Tick every user on this page" hidden>' in html


def ticked_ids(users: list[User]) -> list[int]:
    return [user.pk for user in users]
