"""Starting rubric drafts and following their progress."""

from django.contrib.messages import error as message_error
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from sejury_web.htmx import HtmxHttpRequest
from sejury_web.roles import Role, role_required

from . import selectors
from .forms import DraftRequestForm
from .models import DraftBatch, Rubric
from .services import RubricActionError, rubric_draft_request

DRAFT_ROLES = (Role.LEAD, Role.REVIEWER)


@require_POST
@role_required(*DRAFT_ROLES)
def rubric_draft_dataset(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Draft the rubrics of a whole dataset, or of the bugs the form names."""
    dataset = selectors.dataset_get(slug=slug)
    form = DraftRequestForm(request.POST, dataset=dataset)
    if not form.is_valid():
        for problems in form.errors.values():
            for problem in problems:
                message_error(request, str(problem))
        return redirect(dataset)
    batch = rubric_draft_request(
        bugs=form.cleaned_data["bugs"],
        variant=form.cleaned_data["variant"],
        acting_user=request.user,  # type: ignore[arg-type]
    )
    return redirect("rubrics:draft_batch", slug=dataset.slug, batch_id=batch.pk)


@require_POST
@role_required(*DRAFT_ROLES)
def rubric_draft_bug(
    request: HtmxHttpRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """Draft (or retry the failed draft of) one bug's rubric."""
    bug = selectors.bug_get(dataset=selectors.dataset_get(slug=slug), key=bug_key)
    if variant not in Rubric.Variant.values:
        raise Http404("no such rubric variant")
    try:
        batch = rubric_draft_request(
            bugs=[bug],
            variant=variant,
            acting_user=request.user,  # type: ignore[arg-type]
        )
    except RubricActionError as problem:
        message_error(request, str(problem))
        return redirect(bug)
    return redirect("rubrics:draft_batch", slug=slug, batch_id=batch.pk)


@require_GET
@role_required(*DRAFT_ROLES)
@vary_on_headers("HX-Request")
def draft_batch(request: HtmxHttpRequest, slug: str, batch_id: int) -> HttpResponse:
    """The live progress of a draft request; htmx polls the progress partial."""
    batch = get_object_or_404(
        DraftBatch.objects.select_related("dataset", "requested_by"),
        pk=batch_id,
        dataset__slug=slug,
    )
    context = {"batch": batch, "progress": selectors.draft_batch_progress(batch)}
    if request.htmx:
        return render(request, "rubrics/_draft_progress.html", context)
    return render(request, "rubrics/draft_batch.html", context)
