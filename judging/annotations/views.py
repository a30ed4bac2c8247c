"""Pages of annotation campaigns.

Leads (``campaign_*``): the list, a new campaign, a campaign's progress and coverage (with
the labels), closing and reopening. Annotators (``annotate*``): their campaigns, their queue
in one campaign, the labelling page, one patch at a time, and their own labels.

The annotator's pages are blind by construction: every object they show is reached through
the requesting annotator's own assignments (anything else is a 404), and their context
holds the bug, the patch, the golden rubric and the annotator's own label, nothing more.
Labelling is a plain form POST followed by a redirect, whose page confirms the label once with
an undo (``annotate_undo``); ``static/js/annotate.js`` only adds keyboard shortcuts and
measures the time the page was visible.

Label Studio (``*_labelstudio*``, leads only): a campaign's or a dataset's patches as Label
Studio tasks (optionally with a run's verdicts as predictions) and the labelling config to
match, and a Label Studio export of them imported back as labels
(``judging.annotations.labelstudio``: ``export`` and ``import_``).
"""

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judging.annotations import selectors, services
from judging.annotations.forms import (
    CampaignForm,
    LabelForm,
    LabelStudioExportForm,
    LabelStudioImportForm,
)
from judging.annotations.labelstudio.export import (
    config_with_rubric,
    export_filename,
    labelling_config,
    tasks_json,
)
from judging.annotations.labelstudio.import_ import (
    LabelStudioImportError,
    labelstudio_import,
    users_mapping,
)
from judging.annotations.services import CampaignError
from judging.dimensions import dimensions_of
from judging.models import Assignment, Campaign, Label
from rubrics.models import Dataset
from rubrics.selectors import dataset_get
from sejury_web.audit import audit_history
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.ids import id_parse, is_id
from sejury_web.roles import Role, role_required

PATCHES_PER_PAGE = 50
NOT_YOURS = "you have no patch {position} in campaign {campaign}"
CREATED = "Created campaign {name!r}: {patches} patches, {assignments} labels to give."
CLOSED = "Closed campaign {name!r}: its labels are final."
REOPENED = "Reopened campaign {name!r}: annotators may label and change their labels again."
# The label buttons of the labelling page and their keys (static/js/annotate.js).
# The label just given, which the next page offers to undo (``annotate_undo``), by campaign.
UNDO_SESSION_KEY = "annotate-undo"
UNDONE = "Undid your label {label}: {back}."
SHORTCUTS = [(Label.VALID.value, "v"), (Label.INVALID.value, "i"), (Label.UNSURE.value, "u")]


def _campaign(campaign_id: int) -> Campaign:
    try:
        return selectors.campaign_get(campaign_id=campaign_id)
    except selectors.CampaignNotFound as error:
        raise Http404(str(error)) from None


# Leads


@require_GET
@role_required(Role.LEAD)
def campaign_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    slug = request.GET.get("dataset", "")
    dataset = dataset_get(slug=slug) if slug else None
    rows = selectors.campaign_list(dataset=dataset)
    return render(
        request, "judging/annotations/campaign_list.html", {"rows": rows, "dataset": dataset}
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def campaign_new(request: AuthenticatedHtmxRequest) -> HttpResponse:
    form = CampaignForm(request.POST or None, initial={"dataset": request.GET.get("dataset")})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            campaign = services.campaign_create(
                dataset=data["dataset"],
                name=data["name"],
                purpose=data["purpose"],
                selection=data["selection"],
                sample_size=data["sample_size"],
                seed=data["seed"],
                filters=data["filters"],
                annotators=data["annotators"],
                overlap=data["overlap"],
                show_rubric=data["show_rubric"],
                consensus_rule=data["consensus_rule"],
                dimensions=data["dimensions"],
                actor=request.user,
            )
        except CampaignError as error:
            form.add_error(None, str(error))
        else:
            assignments = selectors.campaign_assignment_count(campaign)
            messages.success(
                request,
                CREATED.format(
                    name=campaign.name,
                    patches=assignments // campaign.overlap,
                    assignments=assignments,
                ),
            )
            return redirect(campaign)
    status = 400 if form.errors else 200
    return render(request, "judging/annotations/campaign_new.html", {"form": form}, status=status)


@require_GET
@role_required(Role.LEAD)
def campaign_detail(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    campaign = _campaign(campaign_id)
    progress = selectors.campaign_progress(campaign)
    coverage, histogram = selectors.campaign_coverage(campaign)
    page = Paginator(coverage, PATCHES_PER_PAGE).get_page(request.GET.get("page", 1))
    context = {
        "campaign": campaign,
        "progress": progress,
        "total": selectors.Progress(
            sum(row.progress.assigned for row in progress),
            sum(row.progress.done for row in progress),
        ),
        "patch_count": len(coverage),
        "coverage": [(count, histogram.get(count, 0)) for count in range(campaign.overlap + 1)],
        "page": page,
        "history": audit_history(campaign),
        "labelstudio": _labelstudio_context(campaign.dataset, campaign),
    }
    return render(request, "judging/annotations/campaign_detail.html", context)


def _status_change(
    request: AuthenticatedHtmxRequest,
    campaign_id: int,
    change: Callable[..., Campaign],
    done: str,
) -> HttpResponse:
    """Close or reopen the campaign (``change``), and say how it went on its page."""
    campaign = _campaign(campaign_id)
    try:
        change(campaign=campaign, actor=request.user)
    except CampaignError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, done.format(name=campaign.name))
    return redirect(campaign)


@require_POST
@role_required(Role.LEAD)
def campaign_close(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    return _status_change(request, campaign_id, services.campaign_close, CLOSED)


@require_POST
@role_required(Role.LEAD)
def campaign_reopen(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    return _status_change(request, campaign_id, services.campaign_reopen, REOPENED)


# Label Studio: leads only (a task may carry a judge's verdict).

LABELSTUDIO_IMPORTED = "Imported the Label Studio annotations: {summary}."
NOT_A_RUN_OF_DATASET = "no judging run {run} of this dataset"


def _labelstudio_urls(dataset: Dataset, campaign: Campaign | None) -> dict[str, str]:
    name, args = (
        ("campaign_labelstudio", [campaign.pk])
        if campaign
        else ("dataset_labelstudio", [dataset.slug])
    )
    return {
        what: reverse(f"judging:{name}{suffix}", args=args)
        for what, suffix in (("page", ""), ("tasks", "_tasks"), ("config", "_config"))
    }


def _labelstudio_context(
    dataset: Dataset,
    campaign: Campaign | None,
    import_form: LabelStudioImportForm | None = None,
) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "campaign": campaign,
        "urls": _labelstudio_urls(dataset, campaign),
        "export_form": LabelStudioExportForm(dataset=dataset),
        "import_form": import_form or LabelStudioImportForm(),
    }


def _labelstudio_page(
    request: AuthenticatedHtmxRequest, dataset: Dataset, campaign: Campaign | None
) -> HttpResponse:
    """The Label Studio card alone; a POST imports an export (then back to the campaign or
    the dataset), or shows why nothing was imported."""
    posted = request.method == "POST"
    form = LabelStudioImportForm(
        request.POST if posted else None, request.FILES if posted else None
    )
    import_error = None
    if posted and form.is_valid():
        upload, users_file = form.cleaned_data["file"], form.cleaned_data["users"]
        try:
            users = users_mapping(users_file.read()) if users_file else None
            summary = labelstudio_import(
                source=upload,
                dataset=dataset,
                campaign=campaign,
                users=users,
                actor=request.user,
                filename=upload.name or "",
                grant_annotator_role=form.cleaned_data["grant_annotator_role"],
            )
        except LabelStudioImportError as error:
            import_error = error
        else:
            messages.success(request, LABELSTUDIO_IMPORTED.format(summary=summary))
            return redirect(campaign or dataset)
    context = {
        "labelstudio": _labelstudio_context(dataset, campaign, form),
        "import_error": import_error,
    }
    status = 400 if import_error or form.errors else 200
    return render(request, "judging/annotations/labelstudio.html", context, status=status)


def _labelstudio_tasks(
    request: AuthenticatedHtmxRequest, dataset: Dataset, campaign: Campaign | None
) -> HttpResponse:
    form = LabelStudioExportForm(request.GET, dataset=dataset)
    if not form.is_valid():
        return HttpResponseBadRequest(NOT_A_RUN_OF_DATASET.format(run=request.GET.get("run", "")))
    text = tasks_json(dataset=dataset, campaign=campaign, run=form.cleaned_data["run"])
    response = HttpResponse(text, content_type="application/json; charset=utf-8")
    name = export_filename(dataset, campaign, "tasks.json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _labelstudio_config(dataset: Dataset, campaign: Campaign | None) -> HttpResponse:
    config = labelling_config(with_rubric=config_with_rubric(campaign))
    response = HttpResponse(config, content_type="application/xml; charset=utf-8")
    name = export_filename(dataset, campaign, "config.xml")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def campaign_labelstudio(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    campaign = _campaign(campaign_id)
    return _labelstudio_page(request, campaign.dataset, campaign)


@require_GET
@role_required(Role.LEAD)
def campaign_labelstudio_tasks(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    campaign = _campaign(campaign_id)
    return _labelstudio_tasks(request, campaign.dataset, campaign)


@require_GET
@role_required(Role.LEAD)
def campaign_labelstudio_config(
    request: AuthenticatedHtmxRequest, campaign_id: int
) -> HttpResponse:
    campaign = _campaign(campaign_id)
    return _labelstudio_config(campaign.dataset, campaign)


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def dataset_labelstudio(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    return _labelstudio_page(request, dataset_get(slug=slug), None)


@require_GET
@role_required(Role.LEAD)
def dataset_labelstudio_tasks(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    return _labelstudio_tasks(request, dataset_get(slug=slug), None)


@require_GET
@role_required(Role.LEAD)
def dataset_labelstudio_config(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    return _labelstudio_config(dataset_get(slug=slug), None)


# Annotators: only their own assignments, and nothing about anyone else's labels or judges.


def _own_campaign(campaign_id: int, annotator: User) -> Campaign:
    try:
        return selectors.annotator_campaign_get(campaign_id=campaign_id, annotator=annotator)
    except selectors.CampaignNotFound as error:
        raise Http404(str(error)) from None


def _annotate_url(campaign: Campaign, position: int) -> str:
    return reverse("judging:annotate", args=[campaign.pk, position])


@require_GET
@role_required(Role.ANNOTATOR)
def annotate_campaigns(request: AuthenticatedHtmxRequest) -> HttpResponse:
    rows = selectors.annotator_campaigns(annotator=request.user)
    return render(request, "judging/annotations/annotate_campaigns.html", {"rows": rows})


@require_GET
@role_required(Role.ANNOTATOR)
def annotate_queue(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    """The annotator's queue in one campaign: where they are, and their own labels."""
    user: User = request.user
    campaign = _own_campaign(campaign_id, user)
    queue = selectors.annotator_queue(campaign=campaign, annotator=user)
    context = {
        "campaign": selectors.CampaignSummary.of(campaign),
        "queue": queue,
        # Each patch's page is this page's address and its position (``annotate``'s path):
        # one reverse, not one a row (a third of a 300-patch queue's time).
        "queue_url": reverse("judging:annotate_queue", args=[campaign.pk]),
        "progress": selectors.Progress.of_queue(queue),
        "next_item": selectors.next_unlabelled(queue, after=0),
        "undo": _undo_offer(request, campaign),
    }
    return render(request, "judging/annotations/annotate_queue.html", context)


@require_POST
@role_required(Role.ANNOTATOR)
def annotate_undo(request: AuthenticatedHtmxRequest, campaign_id: int) -> HttpResponse:
    """Undo the label the annotator just gave (``revision``): back to its previous value, or
    unlabelled if it was the first; then to the patch's page, to label it again."""
    user: User = request.user
    campaign = _own_campaign(campaign_id, user)
    value = request.POST.get("revision")
    offer = (
        selectors.undo_offer(campaign=campaign, annotator=user, revision_id=id_parse(value))
        if is_id(value)
        else None
    )
    try:
        if offer is None:
            raise CampaignError(services.NOTHING_TO_UNDO)
        annotation = services.annotation_undo(
            campaign=campaign, annotator=user, revision_id=offer.revision_id
        )
    except CampaignError as error:
        messages.error(request, str(error)[:1].upper() + str(error)[1:] + ".")
        return redirect("judging:annotate_queue", campaign.pk)
    back = f"back to {annotation.label}" if annotation else "the patch is unlabelled again"
    messages.success(request, UNDONE.format(label=offer.label, back=back))
    return redirect(_annotate_url(campaign, offer.position))


def _after_label(
    request: AuthenticatedHtmxRequest, campaign: Campaign, position: int, revision: int | None
) -> HttpResponse:
    """On to the annotator's next unlabelled patch, or to their queue once all are done;
    ``revision``, the label just given, is offered there to undo (kept in the session)."""
    user: User = request.user
    if revision is not None:
        request.session[_undo_key(campaign)] = revision
    queue = selectors.annotator_queue(campaign=campaign, annotator=user)
    following = selectors.next_unlabelled(queue, after=position)
    if following is None:  # the queue page says they are done
        return HttpResponseRedirect(reverse("judging:annotate_queue", args=[campaign.pk]))
    return HttpResponseRedirect(_annotate_url(campaign, following.position))


def _undo_key(campaign: Campaign) -> str:
    return f"{UNDO_SESSION_KEY}-{campaign.pk}"


def _undo_offer(request: AuthenticatedHtmxRequest, campaign: Campaign) -> Any:
    """The label the annotator just gave, offered once, on the page that follows it, if they
    may still undo it."""
    value = request.session.pop(_undo_key(campaign), None)
    if not is_id(value):
        return None
    return selectors.undo_offer(
        campaign=campaign, annotator=request.user, revision_id=id_parse(value)
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.ANNOTATOR)
def annotate(request: AuthenticatedHtmxRequest, campaign_id: int, position: int) -> HttpResponse:
    """One patch of the annotator's queue: its bug, golden rubric and diff, and the label."""
    user: User = request.user
    campaign = _own_campaign(campaign_id, user)
    try:
        assignment = selectors.annotator_assignment(
            campaign=campaign, annotator=user, position=position
        )
    except Assignment.DoesNotExist:
        raise Http404(NOT_YOURS.format(position=position, campaign=campaign_id)) from None
    dimensions = dimensions_of(campaign.dimensions)
    form = LabelForm(request.POST if request.method == "POST" else None, dimensions=dimensions)
    if request.method == "POST" and form.is_valid():
        before = selectors.newest_revision_id(patch_id=assignment.patch_id, annotator=user)
        try:
            services.annotation_record(
                campaign=campaign,
                annotator=user,
                patch=assignment.patch,
                label=form.cleaned_data["label"],
                note=form.cleaned_data["note"],
                ratings=form.cleaned_data["ratings"],
                seconds_spent=form.cleaned_data["seconds"],
            )
        except CampaignError as error:
            form.add_error(None, str(error))
        else:
            after = selectors.newest_revision_id(patch_id=assignment.patch_id, annotator=user)
            # A label that changed nothing recorded nothing: there is nothing to undo.
            return _after_label(request, campaign, position, after if after != before else None)
    context = _annotate_context(campaign, assignment, user)
    context["form"] = form
    context["dimensions"] = selectors.dimension_rows(dimensions, context["own"])
    context["undo"] = _undo_offer(request, campaign) if request.method == "GET" else None
    return render(
        request, "judging/annotations/annotate.html", context, status=400 if form.errors else 200
    )


def _annotate_context(campaign: Campaign, assignment: Assignment, user: User) -> dict[str, Any]:
    """Plain values only: the page cannot reach anything but the annotator's own work."""
    queue = selectors.annotator_queue(campaign=campaign, annotator=user)
    position = assignment.position
    positions = [item.position for item in queue]
    own, history = selectors.own_label(patch_id=assignment.patch_id, annotator=user)
    return {
        "campaign": selectors.CampaignSummary.of(campaign),
        "case": selectors.labelling_case(campaign=campaign, assignment=assignment),
        "position": position,
        "progress": selectors.Progress.of_queue(queue),
        "previous": max((p for p in positions if p < position), default=None),
        "next": min((p for p in positions if p > position), default=None),
        "own": own,
        "history": history,
        "shortcuts": SHORTCUTS,
    }


@require_GET
@role_required(Role.ANNOTATOR)
def my_labels(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """The annotator's own labels: what they gave, never judges' verdicts or others' labels,
    each with its bug and its place in their campaigns (never its key), where it can be
    changed while its campaign is open; and their campaigns, with their own progress."""
    page = Paginator(selectors.annotations_of(annotator=request.user), 50).get_page(
        request.GET.get("page", 1)
    )
    labels: list[Any] = selectors.own_label_rows(
        annotator=request.user, annotations=list(page.object_list)
    )
    page.object_list = labels
    rows = selectors.annotator_campaigns(annotator=request.user)
    return render(request, "judging/annotations/my_labels.html", {"page": page, "rows": rows})
