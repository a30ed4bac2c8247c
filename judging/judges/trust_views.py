"""*Test this judge* and *Mark trusted* (leads): the card on a judge's page
(``_test_card.html``, its reads in ``trust``), a test started on a dataset, the card's
progress while it runs (htmx polls it), and a tested version trusted through the gate
(``services.judge_version_status_set``, which refuses one no test has measured)."""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from judging.models import JudgeVersion
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.roles import Role, role_required

from .forms import JudgeTestStartForm
from .selectors import JudgeNotFound, judge_get, judge_version_of
from .services import judge_version_status_set
from .testing import JudgeTestError, judge_test_start
from .trust import testable_dataset

CARD = "judging/judges/_test_card.html"


def _version(name: str, number: int) -> JudgeVersion:
    try:
        return judge_version_of(judge_get(name), number)
    except JudgeNotFound as error:
        raise Http404(str(error)) from None


def _card(
    request: AuthenticatedHtmxRequest, version: JudgeVersion, error: str = ""
) -> HttpResponse:
    # 200 even with an error: htmx swaps no 4xx answer, and the card says the error itself.
    # To htmx, the page's other tags of the version's status too (out of band): a poll that
    # sees the test measured changes them from untested to tested with the card.
    context = {"version": version, "test_error": error, "oob": bool(request.htmx)}
    return render(request, CARD, context)


def _answer(
    request: AuthenticatedHtmxRequest, version: JudgeVersion, error: str = ""
) -> HttpResponse:
    """The card again (htmx), or the judge's page with a message."""
    if request.htmx:
        return _card(request, version, error)
    if error:
        messages.error(request, error)
    return redirect("judging:judge_detail", judge_name=version.judge.name)


@require_GET
@role_required(Role.LEAD)
def judge_test_card(
    request: AuthenticatedHtmxRequest, judge_name: str, number: int
) -> HttpResponse:
    """The card alone: what htmx polls while a test runs."""
    return _card(request, _version(judge_name, number))


@require_POST
@role_required(Role.LEAD)
def judge_test_begin(
    request: AuthenticatedHtmxRequest, judge_name: str, number: int
) -> HttpResponse:
    """Start testing the version on the chosen dataset."""
    version = _version(judge_name, number)
    form = JudgeTestStartForm(request.POST)
    dataset = testable_dataset(form.cleaned_data["dataset"]) if form.is_valid() else None
    if dataset is None:
        return _answer(request, version, "Choose a dataset to test the judge on.")
    try:
        judge_test_start(version=version, dataset=dataset, actor=request.user)
    except JudgeTestError as error:
        return _answer(request, version, str(error))
    return _answer(request, _version(judge_name, number))  # as the test left it


@require_POST
@role_required(Role.LEAD)
def judge_trust(request: AuthenticatedHtmxRequest, judge_name: str, number: int) -> HttpResponse:
    """Mark the version trusted: refused (with why) unless a test measured it."""
    version = _version(judge_name, number)
    try:
        judge_version_status_set(
            version=version, status=JudgeVersion.Status.TRUSTED, actor=request.user
        )
    except ValueError as error:
        return _answer(request, version, str(error))
    messages.success(
        request, f"{version.label} is trusted: a team’s {version.judge.name} is it now."
    )
    if request.htmx:  # the page's header and history say the status too
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("judging:judge_detail", args=[version.judge.name])
        return response
    return redirect("judging:judge_detail", judge_name=version.judge.name)
