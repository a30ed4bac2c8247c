"""The Judges pages (leads): the written judges with their versions and statuses, a new judge
(from a starter template or blank), a judge's page (history, a diff of two versions, the
form that writes its next version), and a version's preview on a real patch.

A version is never changed: the form always writes a new one (``judge_define``), with its
author and a required note. The *Test this judge* card (``_test_card.html``) and its
buttons belong to the trust gate."""

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judging.models import Context, JudgeVersion, WrittenJudge
from rubrics.models import Dataset
from rubrics.review.textdiff import line_diff
from rubrics.selectors import dataset_list
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.roles import Role, role_required

from .forms import JudgeForm, PreviewForm, judge_initial
from .selectors import (
    JudgeNotFound,
    judge_get,
    judge_version_of,
    judge_versions,
    judges_overview,
    preview_bug_problem,
    preview_bugs,
    preview_patch,
    preview_patches,
    starter_definition,
    starter_titles,
    version_preview,
    version_text,
)
from .services import JudgeDefinitionError, judge_define

SAVED = "Saved {label}: a new version, untested until it is tested."
UNCHANGED = "Nothing changed: {label} stays the newest version."
CREATED = "Created {label}, untested: preview it, then test it before a team names it bare."


def _judge(name: str) -> WrittenJudge:
    try:
        return judge_get(name)
    except JudgeNotFound as error:
        raise Http404(str(error)) from None


@require_GET
@role_required(Role.LEAD)
def judge_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Every written judge with its newest version and newest trusted one; the starters."""
    return render(
        request,
        "judging/judges/judge_list.html",
        {"rows": judges_overview(), "starters": starter_titles()},
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def judge_new(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """A new judge: blank, or a copy of a starter template (``?starter=minimalism``) that the
    lead names and edits. Its first version is untested."""
    starter_name = request.GET.get("starter", "")
    starter = starter_definition(starter_name)
    initial: dict[str, Any] = {}
    if starter is not None:
        initial = {**judge_initial(starter), "name": f"{starter['name']}-copy"}
        initial["note"] = f"Copied from the starter template “{starter['title']}”."
    form = JudgeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            version, _ = judge_define(data=form.definition(), actor=request.user, new=True)
        except JudgeDefinitionError as error:
            form.refused(error)
        else:
            messages.success(request, CREATED.format(label=version.label))
            return redirect("judging:judge_detail", judge_name=version.judge.name)
    context = {"form": form, "starter": starter}
    return render(
        request, "judging/judges/judge_new.html", context, status=400 if form.errors else 200
    )


def _diff_pair(
    versions: list[JudgeVersion], query: Any
) -> tuple[JudgeVersion, JudgeVersion] | None:
    """The two versions the page diffs: ``?a=``/``?b=`` when both are versions of the judge,
    else the one before the newest and the newest (None for a judge of one version)."""
    by_number = {str(version.number): version for version in versions}
    a, b = by_number.get(query.get("a", "")), by_number.get(query.get("b", ""))
    if a is not None and b is not None:
        return a, b
    return (versions[1], versions[0]) if len(versions) > 1 else None


def _detail(
    request: AuthenticatedHtmxRequest, judge: WrittenJudge, form: JudgeForm | None = None
) -> HttpResponse:
    versions = judge_versions(judge)
    newest = versions[0] if versions else None
    if form is None:
        initial = judge_initial(
            {
                "title": newest.title,
                "template": newest.template,
                "kind": newest.kind,
                "dimensions": newest.dimensions,
                "overall": newest.overall,
            }
            if newest
            else {}
        )
        form = JudgeForm(initial=initial, with_name=False)
    pair = _diff_pair(versions, request.GET)
    trusted = next((v for v in versions if v.status == JudgeVersion.Status.TRUSTED), None)
    context = {
        "judge": judge,
        "versions": versions,
        "newest": newest,
        "trusted": trusted,
        "form": form,
        "diff": line_diff(version_text(pair[0]), version_text(pair[1])) if pair else None,
        "diff_pair": pair,
    }
    status = 400 if form.errors else 200
    return render(request, "judging/judges/judge_detail.html", context, status=status)


@require_GET
@role_required(Role.LEAD)
def judge_detail(request: AuthenticatedHtmxRequest, judge_name: str) -> HttpResponse:
    """A judge's versions, a diff of two of them, its test card, and the edit form."""
    return _detail(request, _judge(judge_name))


@require_POST
@role_required(Role.LEAD)
def judge_edit(request: AuthenticatedHtmxRequest, judge_name: str) -> HttpResponse:
    """The judge's next version from the edit form (the same content: no new version)."""
    judge = _judge(judge_name)
    form = JudgeForm(request.POST, with_name=False)
    if form.is_valid():
        try:
            version, created = judge_define(data=form.definition(judge.name), actor=request.user)
        except JudgeDefinitionError as error:
            form.refused(error)
        else:
            message = SAVED if created else UNCHANGED
            messages.success(request, message.format(label=version.label))
            return redirect("judging:judge_detail", judge_name=judge.name)
    return _detail(request, judge, form)


@require_GET
@role_required(Role.LEAD)
def judge_preview(request: AuthenticatedHtmxRequest, judge_name: str, number: int) -> HttpResponse:
    """Version ``number``'s prompt on a real patch of a chosen dataset, exactly as the model
    would receive it (the system message, then the user message), and its answer schema."""
    judge = _judge(judge_name)
    try:
        version = judge_version_of(judge, number)
    except JudgeNotFound as error:
        raise Http404(str(error)) from None
    form = PreviewForm(request.GET)
    form.is_valid()
    chosen = form.cleaned_data
    datasets = list(dataset_list())
    dataset: Dataset | None = next(
        (d for d in datasets if d.slug == chosen.get("dataset")), None
    ) or next((d for d in datasets if d.patch_count), None)  # type: ignore[attr-defined]
    bug_key = chosen.get("bug", "")
    # A key typed for the dataset the pickers showed must be one of its bugs; keys left from
    # another dataset (the lead changed the dataset) give way to the chosen one's first patch.
    problem = ""
    if dataset and bug_key and chosen.get("shown") in ("", dataset.slug):
        problem = preview_bug_problem(dataset, bug_key)
    patch = (
        preview_patch(dataset, bug_key, chosen.get("patch", ""))
        if dataset and not problem
        else None
    )
    context = chosen.get("context") or Context.GOLDEN
    return render(
        request,
        "judging/judges/judge_preview.html",
        {
            "judge": judge,
            "version": version,
            "datasets": datasets,
            "dataset": dataset,
            "bugs": preview_bugs(dataset) if dataset else [],
            "bug_key": bug_key if problem else (patch.bug.key if patch else ""),
            "bug_problem": problem,
            "patches": preview_patches(patch.bug) if patch else [],
            "patch": patch,
            "context": context,
            "contexts": form.fields["context"].choices,  # type: ignore[attr-defined]
            "preview": version_preview(version, patch, context) if patch else None,
            "detail_url": reverse("judging:judge_detail", args=[judge.name]),
        },
    )
