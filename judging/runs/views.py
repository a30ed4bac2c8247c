"""Pages of judging runs, for leads: the list, a new run, a run's progress and verdicts, one
verdict with the prompts and answers behind it, two runs compared, re-judging stale rubric
verdicts; and, from the rubric editor, the streamlined review's judge preview (paper 004 §8).

A running run's page polls its progress partial every second; each poll sends the unfinished
rows the table shows (their hidden ``live`` inputs) and gets back, out of band, those that
changed since: the rows of the page being read fill in as patches finish, without sending the
table again. The poll that sees the run end stops the polling (status 286) and fires
``run-ended``, on which the verdict table and the stale-verdicts card reload themselves once.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HTMX_STOP_POLLING, trigger_client_event

from judging.annotations.services import CampaignError
from judging.consensus.verdicts import verdict_humans
from judging.models import Context, JudgingRun, PatchJudgment
from judging.runs import selectors as run_selectors
from judging.runs import services
from judging.runs import verdicts as verdict_selectors
from judging.runs.agreement import run_agreement
from judging.runs.batch import run_batch_checked_at, run_rounds
from judging.runs.forecast import run_bill
from judging.runs.forms import CONTEXT_HELP, CompareForm, RunForm
from judging.runs.preview import (
    NO_DRAFT,
    PreviewError,
    rubric_preview_candidates,
    rubric_preview_get,
    rubric_preview_start,
)
from judging.runs.rejections import PROMPT_VERSION as REJECTION_PROMPT_VERSION
from judging.runs.rejections import rejection_of, rejection_progress
from judging.runs.routing import DEFAULT_SECONDS_PER_LABEL, RoutingError, route, routing_plan
from judging.runs.routing_forms import RouteForm
from judging.runs.services import RunError, RunNotReady
from judging.runs.stale import can_go_stale, rejudge_summary, stale_count
from judging.runs.uncertainty import SIGNALS
from judging.runs.verdicts import CompareError, TableQuery
from judging.runs.webhooks import webhook_state
from judging.strategies import parse_team
from judging.strategies.reducers import REDUCERS
from rubrics.selectors import rubric_get
from sejury_web.audit import audit_history
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.ids import is_id
from sejury_web.llm import OFFLINE_MARKER, Provider
from sejury_web.llm.models_table import family_for
from sejury_web.llm.usage import model_profile
from sejury_web.roles import Role, role_required

TABLE_TARGET = "run-table"
REJUDGE_TARGET = "run-rejudge"
REJECTIONS_TARGET = "run-rejections"
WEBHOOK_TARGET = "run-webhook"
BATCH_TARGET = "run-batch"
BILL_TARGET = "run-bill"
AGREEMENT_TARGET = "run-agreement"
RUN_ENDED_EVENT = "run-ended"
OFFLINE_NOTE = f"{OFFLINE_MARKER}: scores are not judgements of correctness"
TEAM_NOT_TICKED = "The link's team is not ticked: {error}."
CANCELLED = "Cancelled run {run}: no new model call starts; finished verdicts stay."
RESUMED = "Resumed run {run}: its pending patches are queued again."
BATCH_LEFT = (
    "Run {run} goes on with ordinary calls: its batch jobs are cancelled, what they answered "
    "is kept, and its pending patches are queued again."
)
RETRIED = "Queued run {run}'s failed and pending patches again."
REJUDGING = (
    "Re-judging the members that read the rubric on {count} patch{plural} of run {run} with "
    "today's golden rubric; the other members' results are kept."
)
NO_VERDICT = "run {run} has no verdict {judgment}"
GO_BACK = "back"  # the pre-flight's "Go back": the form again, nothing started
FORECAST = "forecast"  # "Forecast the cost": the pre-flight and the forecast, nothing started
LEFT_OUT = "Left out {count} patch{plural} that lacked what the run needs, as the pre-flight said."
SORTING = (
    "Sorting why run {run} rejected {count} test-passing patch{plural}: a worker gives each "
    "justification a theme; the counts fill in below."
)


def _run(run_id: int) -> JudgingRun:
    try:
        return run_selectors.run_get(run_id=run_id)
    except run_selectors.RunNotFound as error:
        raise Http404(str(error)) from None


def _offline_note(run: JudgingRun) -> str:
    return OFFLINE_NOTE if run.provider == Provider.OFFLINE else ""


@require_GET
@role_required(Role.LEAD)
def run_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    page = run_selectors.runs_page(page=request.GET.get("page", 1))
    return render(request, "judging/runs/run_list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def run_new(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """The new-run form. The service decides whether the run starts; when some patches lack
    what the run needs, the page shows its refusal with the pre-flight, and starts the run
    once the lead agrees to judge the others (the number they agreed to, should the form
    have changed since)."""
    initial: dict[str, Any] = {"dataset": request.GET.get("dataset")}
    if request.GET.get("team"):  # e.g. the team a calibration picked
        try:
            initial["strategies"] = parse_team(request.GET["team"])
        except ValueError as error:  # e.g. an untested judge named without its version
            messages.warning(request, TEAM_NOT_TICKED.format(error=error))
    form = RunForm(request.POST or None, initial=initial)
    not_ready = None
    forecast = None
    if request.method == "POST" and form.is_valid() and FORECAST in request.POST:
        data = form.cleaned_data
        try:
            plan, forecast = services.run_plan(**_run_settings(data))
        except RunError as error:  # RunNotReady too: no patch is ready
            form.add_error(_error_field(error), str(error))
        else:
            if plan.preflight.missing:
                not_ready = RunNotReady(plan.preflight)
    elif request.method == "POST" and form.is_valid() and GO_BACK not in request.POST:
        data = form.cleaned_data
        agreed = data["only_ready"]  # the ready patches the lead agreed to judge, if asked
        try:
            run = services.run_create(
                **_run_settings(data),
                name=data["name"],
                actor=request.user,
                only_ready=agreed is not None,
                expected_ready=agreed,
                batch=data["batch"],
                webhook_origin=request.build_absolute_uri("/").rstrip("/"),
            )
        except RunNotReady as error:
            if error.preflight.ready:
                not_ready = error  # the pre-flight card asks, beside what the ready ones cost
                forecast = services.run_plan(**_run_settings(data))[1]
            else:
                form.add_error(None, str(error))
        except RunError as error:
            form.add_error(_error_field(error), str(error))
        else:
            left_out = run_selectors.run_left_out(run)
            if left_out:
                plural = "" if left_out.count == 1 else "es"
                messages.info(request, LEFT_OUT.format(count=left_out.count, plural=plural))
            return redirect(run)
    status = 400 if form.errors else 200
    context = {
        "form": form,
        "not_ready": not_ready,
        "preflight": not_ready.preflight if not_ready else None,
        "forecast": forecast,
    }
    return render(request, "judging/runs/run_new.html", context, status=status)


def _error_field(error: RunError) -> str | None:
    """The form field a refusal is about, if one: the reasoning setting's own."""
    return "reasoning" if isinstance(error, services.ReasoningRefused) else None


def _run_settings(data: dict[str, Any]) -> dict[str, Any]:
    """What the form says of a new run, as ``run_plan`` and ``run_create`` take it."""
    return {
        "dataset": data["dataset"],
        "strategies": data["strategies"],
        "context": data["context"],
        "patches": data["patches"],
        "provider": data["provider"],
        "model": data["model"],
        "reasoning": data["reasoning"],
        "threshold": data["threshold"],
        "reducer": data["reducer"],
        "scale_lo": data["scale_lo"],
        "scale_hi": data["scale_hi"],
        "webhook_url": data["webhook_url"],
    }


def _run_context(run: JudgingRun) -> dict[str, Any]:
    return {
        "run": run,
        "team": verdict_selectors.run_team(run),
        "offline_note": _offline_note(run),
        # Where the model runs, its cost and measured speed (two queries; none for offline).
        "model_profile": (
            None if run.provider == Provider.OFFLINE else model_profile(run.provider, run.model)
        ),
        "model_family": (
            None if run.provider == Provider.OFFLINE else family_for(run.provider, run.model)
        ),
        "context_help": CONTEXT_HELP.get(Context(run.context), ""),
        "reducer": REDUCERS.get(run.reducer),  # None for a reducer removed since the run
        "history": audit_history(run),
    }


def _rejudge_context(run: JudgingRun) -> dict[str, Any]:
    """The stale-verdicts card: how many are stale, and what re-judging changed."""
    return {
        "run": run,
        "can_go_stale": can_go_stale(run),
        "stale_count": stale_count(run),
        "rejudge": rejudge_summary(run),
    }


def _rejections_context(run: JudgingRun) -> dict[str, Any]:
    """The card of why passing patches were rejected: how far the sorting is, the themes."""
    return {
        "run": run,
        "rejections": rejection_progress(run),
        "rejection_prompt_version": REJECTION_PROMPT_VERSION,
        "offline_marker": OFFLINE_MARKER,
    }


def _batch_context(run: JudgingRun) -> dict[str, Any]:
    """The batch rounds card of a batch-mode run: each round's jobs, counts and wait."""
    return {"run": run, "rounds": run_rounds(run) if run.batch else []}


def _webhook_context(run: JudgingRun) -> dict[str, Any]:
    """The webhook card: where the run's end is sent, and how that call went."""
    return {"run": run, "webhook": webhook_state(run)}


def _progress_context(run: JudgingRun) -> dict[str, Any]:
    progress = run_selectors.run_progress(run)
    checked = run_batch_checked_at(run) if run.batch and run.is_active else None
    return {
        "run": run,
        "progress": progress,
        # What the page says last moved: for a batch run, a look at the provider counts.
        "moved_at": max((m for m in (progress.moved_at, checked) if m), default=None),
        "checked_at": checked,
        "can_resume": not run.is_active and progress.pending > 0,
        "can_retry": not run.is_active and progress.failed > 0,
    }


def _bill_context(run: JudgingRun) -> dict[str, Any]:
    """The bill card: what the run spent beside the forecast it kept at creation."""
    return {"run": run, "bill": run_bill(run, run_selectors.run_progress(run))}


def _table_context(request: AuthenticatedHtmxRequest, run: JudgingRun) -> dict[str, Any]:
    """The verdict table: the page of rows the query asks for (filters, sort, page)."""
    query = TableQuery.from_params(request.GET, run.strategies)
    return {"run": run, "table": verdict_selectors.run_verdicts(run=run, query=query)}


def _agreement_context(run: JudgingRun) -> dict[str, Any]:
    """The judge-against-humans card: the agreement report's figures of this run (kept while
    no label, adjudication or verdict changes: a poll is one query then)."""
    return {"run": run, "agreement": run_agreement(run)}


# Each card of the run page an htmx request may ask for alone, by the id it swaps: its
# partial, and what that partial shows (computed for it only, never the whole page).
RUN_PARTIALS: dict[
    str, tuple[str, Callable[[AuthenticatedHtmxRequest, JudgingRun], dict[str, Any]]]
] = {
    TABLE_TARGET: ("judging/runs/_run_table.html", _table_context),
    REJUDGE_TARGET: ("judging/runs/_run_rejudge.html", lambda _, run: _rejudge_context(run)),
    REJECTIONS_TARGET: (
        "judging/runs/_run_rejections.html",
        lambda _, run: _rejections_context(run),
    ),
    WEBHOOK_TARGET: ("judging/runs/_run_webhook.html", lambda _, run: _webhook_context(run)),
    BATCH_TARGET: ("judging/runs/_run_batch.html", lambda _, run: _batch_context(run)),
    BILL_TARGET: ("judging/runs/_run_bill.html", lambda _, run: _bill_context(run)),
    AGREEMENT_TARGET: (
        "judging/runs/_run_agreement.html",
        lambda _, run: _agreement_context(run),
    ),
}


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def run_detail(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """The run page; an htmx request for one of its cards (``RUN_PARTIALS``) gets that card
    alone, and only its reads run."""
    run = _run(run_id)
    partial = RUN_PARTIALS.get(request.htmx.target or "") if request.htmx else None
    if partial is not None:
        template, card_context = partial
        return render(request, template, card_context(request, run))
    progress_context = _progress_context(run)
    context = {
        "statuses": PatchJudgment.Status.choices,
        **_run_context(run),
        **_table_context(request, run),
        **progress_context,
        **_rejudge_context(run),
        **_rejections_context(run),
        **_webhook_context(run),
        **_batch_context(run),
        "bill": run_bill(run, progress_context["progress"]),
    }
    return render(request, "judging/runs/run_detail.html", context)


def _live_rows_seen(values: list[str]) -> dict[int, int]:
    """The poll's ``live`` values, "judgment id:members ended", as a mapping; the malformed
    are left out."""
    seen: dict[int, int] = {}
    for value in values:
        pk, _, ended = value.partition(":")
        if is_id(pk) and ended.isascii() and ended.isdigit() and len(ended) < 10:
            seen[int(pk)] = int(ended)
    return seen


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def run_progress(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """The progress partial, and the table rows that changed since the page showed them;
    once the run is no longer active, the last poll (the table then reloads itself)."""
    run = _run(run_id)
    context = _progress_context(run)
    seen = _live_rows_seen(request.GET.getlist("live"))
    if seen and run.is_active:
        context["live_rows"] = verdict_selectors.verdict_rows_changed(run=run, seen=seen)
    if run.is_active or not request.htmx:
        return render(request, "judging/runs/_run_progress.html", context)
    response = render(request, "judging/runs/_run_progress.html", context, status=HTMX_STOP_POLLING)
    return trigger_client_event(response, RUN_ENDED_EVENT)


@require_POST
@role_required(Role.LEAD)
def run_cancel(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    run = _run(run_id)
    try:
        services.run_cancel(run=run, actor=request.user)
    except RunError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, CANCELLED.format(run=run.pk))
    return redirect(run)


@require_POST
@role_required(Role.LEAD)
def run_resume(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    run = _run(run_id)
    retry_failed = request.POST.get("retry_failed", "") in {"1", "true", "on"}
    try:
        services.run_resume(run=run, actor=request.user, retry_failed=retry_failed)
    except RunError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, (RETRIED if retry_failed else RESUMED).format(run=run.pk))
    return redirect(run)


@require_POST
@role_required(Role.LEAD)
def run_batch_leave(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """Judge the rest of a batch-mode run with ordinary calls, then the run page."""
    run = _run(run_id)
    try:
        services.run_batch_leave(run=run, actor=request.user)
    except RunError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, BATCH_LEFT.format(run=run.pk))
    return redirect(run)


@require_POST
@role_required(Role.LEAD)
def run_rejudge_stale(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """Judge the stale rubric verdicts again (the members that read the rubric only), then the
    run page."""
    run = _run(run_id)
    count = stale_count(run)
    try:
        services.run_rejudge_stale(run=run, actor=request.user)
    except RunError as error:
        messages.error(request, str(error))
    else:
        plural = "" if count == 1 else "es"
        messages.success(request, REJUDGING.format(count=count, plural=plural, run=run.pk))
    return redirect(run)


@require_POST
@role_required(Role.LEAD)
def run_rejection_themes(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """Sort why the run rejected patches that pass their tests (paper 004 §7), in the
    background; then the run page, at the card that follows the sorting."""
    run = _run(run_id)
    try:
        count = services.run_rejection_themes_request(run=run, actor=request.user)
    except RunError as error:
        messages.error(request, str(error))
    else:
        plural = "" if count == 1 else "es"
        messages.success(request, SORTING.format(run=run.pk, count=count, plural=plural))
    return redirect(f"{run.get_absolute_url()}#{REJECTIONS_TARGET}")


@require_GET
@role_required(Role.LEAD)
def verdict_detail(
    request: AuthenticatedHtmxRequest, run_id: int, judgment_id: int
) -> HttpResponse:
    run = _run(run_id)
    try:
        verdict = verdict_selectors.verdict_get(run=run, judgment_id=judgment_id)
    except PatchJudgment.DoesNotExist:
        raise Http404(NO_VERDICT.format(run=run.pk, judgment=judgment_id)) from None
    context = {
        "verdict": verdict,
        "judgment": verdict.judgment,
        "patch": verdict.judgment.patch,
        "rejection": rejection_of(judgment_id=verdict.judgment.pk),
        # The page is the leads': the consensus with who said what.
        "humans": verdict_humans(judgment=verdict.judgment),
        "offline_marker": OFFLINE_MARKER,
        **_run_context(run),
    }
    return render(request, "judging/runs/verdict_detail.html", context)


@require_GET
@role_required(Role.LEAD)
def run_compare(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Two runs of one dataset side by side. The dataset comes first (``?dataset=``, else
    run A's, else the newest run's), and only its runs are offered, the two newest chosen
    until the lead picks."""
    asked = "a" in request.GET or "b" in request.GET
    form = CompareForm(request.GET if asked else None)
    comparison, error = None, ""
    if form.is_valid():
        try:
            comparison = verdict_selectors.runs_compare(
                a_id=form.cleaned_data["a"],
                b_id=form.cleaned_data["b"],
                page=request.GET.get("page", 1),
            )
        except CompareError as exc:
            error = str(exc)
    datasets = verdict_selectors.compare_datasets()
    by_slug = {dataset.slug: dataset for dataset in datasets}
    dataset = by_slug.get(request.GET.get("dataset", "")) or (
        comparison.a.dataset if comparison is not None else (datasets[0] if datasets else None)
    )
    choices = verdict_selectors.compare_choices(dataset=dataset) if dataset else []
    if asked:
        chosen = (form["a"].value(), form["b"].value())
    else:  # the newest run as B, the one before it as A
        chosen = (choices[1].pk if len(choices) > 1 else None, choices[0].pk if choices else None)
    context: dict[str, Any] = {
        "form": form,
        "comparison": comparison,
        "error": error,
        "datasets": datasets,
        "dataset": dataset,
        "choices": choices,
        "chosen_a": str(chosen[0]),
        "chosen_b": str(chosen[1]),
    }
    if comparison is not None:
        context["sides"] = [
            {"name": "A", **_run_context(comparison.a)},
            {"name": "B", **_run_context(comparison.b)},
        ]
    status = 400 if (error or form.errors) else 200
    return render(request, "judging/runs/run_compare.html", context, status=status)


PREVIEW_ROLES = (Role.REVIEWER, Role.LEAD)
STARTED = "Judging the candidates with revision {number}: the comparison follows below."


@require_http_methods(["GET", "POST"])
@role_required(*PREVIEW_ROLES)
@vary_on_headers("HX-Request")
def rubric_preview(request: AuthenticatedHtmxRequest, rubric_id: int) -> HttpResponse:
    """GET: the judge-preview panel (a page without htmx). POST: start a preview, then the
    panel (htmx) or a redirect to the page."""
    rubric = rubric_get(rubric_id=rubric_id)
    url = reverse("judging:rubric_preview", kwargs={"rubric_id": rubric.pk})
    problem = ""
    if request.method == "POST":
        user: User = request.user
        try:
            rubric_preview_start(rubric=rubric, actor=user)
        except PreviewError as error:
            problem = str(error)
        if not request.htmx:
            if problem:
                messages.error(request, problem)
            else:
                messages.success(request, STARTED.format(number=rubric.current_number))
            return redirect(url)
    context = {
        "rubric": rubric,
        "bug": rubric.bug,
        "preview": rubric_preview_get(rubric=rubric),
        "candidates": rubric_preview_candidates(rubric=rubric),
        "no_draft": NO_DRAFT if rubric.current_number < 0 else "",
        "problem": problem,
        "preview_url": url,
        "offline_marker": OFFLINE_MARKER,
    }
    template = (
        "judging/runs/_rubric_preview.html" if request.htmx else "judging/runs/_preview_page.html"
    )
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def run_route(request: AuthenticatedHtmxRequest, run_id: int) -> HttpResponse:
    """Send a finished run's least certain verdicts to humans: the form, a preview of the
    patches and of the annotators' time (GET with the form's fields, or POST with
    ``preview``), and the campaign (POST)."""
    run = _run(run_id)
    data = request.POST if request.method == "POST" else request.GET
    form = RouteForm(data or None)
    plan = None
    if form.is_bound and form.is_valid():
        cleaned = form.cleaned_data
        percent = cleaned["percent"]
        try:
            plan = routing_plan(
                run=run,
                budget=cleaned["patches"],
                share=None if percent is None else percent / 100,
                signal=cleaned["signal"],
                overlap=cleaned["overlap"],
            )
        except RoutingError as error:
            form.add_error(None, str(error))
        if plan is not None and request.method == "POST" and "preview" not in request.POST:
            try:
                campaign = route(
                    plan=plan,
                    annotators=list(cleaned["annotators"]),
                    name=cleaned["name"],
                    actor=request.user,
                )
            except CampaignError as error:
                form.add_error(None, str(error))
            else:
                messages.success(
                    request,
                    f"Campaign “{campaign.name}”: {len(plan.patches)} of run {run.pk}'s least"
                    f" certain verdicts, {plan.labels} labels.",
                )
                return redirect("judging:campaign_detail", campaign_id=campaign.pk)
    status = 400 if form.errors else 200
    context = {
        "run": run,
        "form": form,
        "plan": plan,
        "signals": SIGNALS,
        "default_seconds": DEFAULT_SECONDS_PER_LABEL,
    }
    return render(request, "judging/runs/run_route.html", context, status=status)
