from typing import Any

from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.models import User
from django.contrib.messages import success
from django.core.paginator import Page
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from . import users
from .forms import BulkRolesForm, RolesForm, UserCreateForm
from .home import home_parts
from .htmx import AuthenticatedHtmxRequest
from .roles import Role, role_required, user_roles
from .users import (
    user_create,
    user_get,
    user_set_roles,
    users_found,
    users_found_count,
    users_page,
)

NO_USER = "there is no user {user}"
FOUND_CHANGED = (
    "The search now finds {now} user{s}, not the {then} shown: look at them again before "
    "changing them all."
)


@require_GET
def home(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """What needs the user: each of their roles' part (``sejury_web.home``)."""
    parts = home_parts(user=request.user)
    if not parts:
        return render(request, "sejury_web/no_role.html", status=403)
    return render(request, "sejury_web/home.html", {"parts": parts})


def _user_rows(request: HttpRequest) -> Page:
    """A page of the users, searched by name or e-mail (``q``) and filtered by role."""
    return users_page(
        query=request.GET.get("q", "").strip(),
        role=request.GET.get("role", ""),
        page=request.GET.get("page"),
    )


def _user(user_id: int) -> User:
    try:
        return user_get(user_id=user_id)
    except User.DoesNotExist:
        raise Http404(NO_USER.format(user=user_id)) from None


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def user_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    form = UserCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = user_create(
            actor=request.user,
            username=form.cleaned_data["username"],
            email=form.cleaned_data.get("email", ""),
            password=form.cleaned_data["password1"],
            roles=form.cleaned_data["roles"],
        )
        success(request, f"Created {user.username} ({', '.join(form.cleaned_data['roles'])}).")
        return redirect("user_list")
    return _user_list_page(request, form, status=400 if form.errors else 200)


def _user_list_context(request: AuthenticatedHtmxRequest, **extra: Any) -> dict[str, Any]:
    return {
        "page": _user_rows(request),
        "roles": Role.choices,
        "query": request.GET.get("q", "").strip(),
        "role": request.GET.get("role", ""),
        "search": request.GET.urlencode(),
        "bulk_form": BulkRolesForm(),
        **extra,
    }


def _user_list_page(
    request: AuthenticatedHtmxRequest, form: UserCreateForm, *, status: int, **extra: Any
) -> HttpResponse:
    context = _user_list_context(request, form=form, **extra)
    return render(request, "sejury_web/user_list.html", context, status=status)


@require_POST
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def user_password_set(request: AuthenticatedHtmxRequest, user_id: int) -> HttpResponse:
    """A lead sets a user's password, e.g. for an annotator first named by an import.

    htmx gets the user's row back, errors included, with status 200: htmx 2 swaps no 4xx
    answer, so a 400 would leave the lead looking at the form as it was. Without htmx, a
    refused password shows the users page with the row's errors (400).
    """
    user = _user(user_id)
    form = SetPasswordForm(user, request.POST)
    if form.is_valid():
        password = form.cleaned_data["new_password1"]
        users.user_password_set(user=user, password=password, actor=request.user)
        success(request, f"Password set for {user.username}.")
    if request.htmx:
        context = {"u": user, "roles": Role.choices, "password_form": form}
        return render(request, "sejury_web/_user_row.html", context)
    if form.is_valid():
        return redirect("user_list")
    return _user_list_page(request, UserCreateForm(), password_form=form, status=400)


@require_POST
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def user_roles_update(request: AuthenticatedHtmxRequest, user_id: int) -> HttpResponse:
    user = _user(user_id)
    form = RolesForm(request.POST)
    if form.is_valid():
        if user == request.user and Role.LEAD not in form.cleaned_data["roles"]:
            form.add_error("roles", "You cannot remove your own lead role.")
        else:
            user_set_roles(user=user, roles=form.cleaned_data["roles"], actor=request.user)
    user = _user(user_id)  # again: its roles as they are now
    context = {"u": user, "roles": Role.choices, "roles_form": form, "roles_form_user": user.pk}
    if request.htmx:
        return render(request, "sejury_web/_user_row.html", context)
    return redirect("user_list")


@require_POST
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def user_roles_bulk(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """A lead gives a role to, or removes it from, many users at once: those ticked, or every
    user the page's search (``q``, ``role`` in the query string) finds, on every page.

    Without htmx, done is said on the Users page it came from (a redirect), refused is that
    page with the form's errors (400). htmx gets the list back (its result or its errors,
    status 200: htmx 2 swaps no 4xx answer).
    """
    form = BulkRolesForm(request.POST)
    result = None
    if form.is_valid():
        chosen = form.cleaned_data["users"]
        if form.cleaned_data["scope"] == BulkRolesForm.FOUND:
            found = {
                "query": request.GET.get("q", "").strip(),
                "role": request.GET.get("role", ""),
            }
            chosen = users_found(**found)
            now, then = users_found_count(**found), form.cleaned_data["found"]
            if then is not None and now != then:
                s = "" if now == 1 else "s"
                form.add_error(None, FOUND_CHANGED.format(now=now, then=then, s=s))
    if form.is_valid():
        result = users.users_role_change(
            users=chosen,
            role=form.cleaned_data["role"],
            give=form.cleaned_data["change"] == BulkRolesForm.GIVE,
            actor=request.user,
        )
        if not request.htmx:
            success(request, result.message)
            search = request.GET.urlencode()
            return redirect(reverse("user_list") + (f"?{search}" if search else ""))
    context = _user_list_context(request, bulk_form=form if result is None else BulkRolesForm())
    if request.htmx:
        context["bulk_result"] = result
        return render(request, "sejury_web/_user_table.html", context)
    # The pager's links lead back to the Users page, not to this POST-only address.
    page, base = context["page"], reverse("user_list")
    query = request.GET.copy()
    if page.has_previous():
        query["page"] = str(page.previous_page_number())
        context["previous_query"] = f"{base}?{query.urlencode()}"
    if page.has_next():
        query["page"] = str(page.next_page_number())
        context["next_query"] = f"{base}?{query.urlencode()}"
    context["form"] = UserCreateForm()
    return render(request, "sejury_web/user_list.html", context, status=400)


# -- error pages ----------------------------------------------------------------------------
# In the product's layout, with the reason the server knows and a way back. An ordinary 400,
# 403 or 404 is logged as one line, without a traceback (``sejury_web.logs``).

GENERIC_BAD_REQUEST = "The server cannot read this request."
GENERIC_FORBIDDEN = "You don't have a role that opens this page."
GENERIC_NOT_FOUND = "There is nothing at this address."


def _reason(exception: Exception | None, generic: str) -> str:
    """The exception's message when it is one of ours (a sentence), else ``generic``."""
    message = exception.args[0] if exception is not None and exception.args else ""
    return message if isinstance(message, str) and " " in message.strip() else generic


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    context = {"reason": _reason(exception, GENERIC_BAD_REQUEST), "path": request.path}
    return render(request, "400.html", context, status=400)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    context = {"reason": _reason(exception, GENERIC_FORBIDDEN), "roles": user_roles(request.user)}
    return render(request, "403.html", context, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    context = {"reason": _reason(exception, GENERIC_NOT_FOUND), "path": request.path}
    return render(request, "404.html", context, status=404)
