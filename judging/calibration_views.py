"""The lead's consensus and calibration pages: the adjudication queue, and picking a team.

Both are for leads only: they show every annotator's label side by side, and judges' scores.
"""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from rubrics.models import Dataset, Patch
from rubrics.selectors import dataset_get
from sejury_web.htmx import HtmxHttpRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required

from . import adjudication, calibration_data
from .adjudication import AdjudicationError, AdjudicationItem
from .calibration_data import CalibrationError
from .calibration_forms import AdjudicationForm, CalibrationChooseForm, CalibrationPickForm
from .models import Calibration, Campaign, DisagreementTheme, Label

BODY_TARGET = "calibration-body"
RECORDED = "Recorded the consensus of {patch}: {label}."
CHOSEN = "Calibration stored: team {team}."


def _campaign(dataset: Dataset, value: Any) -> Campaign | None:
    if value in (None, ""):
        return None
    try:
        return adjudication.dataset_campaign(dataset=dataset, campaign_id=int(value))
    except (ValueError, Campaign.DoesNotExist):
        raise Http404(f"{dataset} has no campaign {value}") from None


def _queue_url(dataset: Dataset, campaign: Campaign | None) -> str:
    url = reverse("judging:adjudication_queue", args=[dataset.slug])
    return f"{url}?{urlencode({'campaign': campaign.pk})}" if campaign else url


def _item_context(dataset: Dataset, campaign: Campaign | None) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "campaign": campaign,
        "themes": DisagreementTheme.choices,
        "labels": [Label.VALID, Label.INVALID],
    }


def _card(item: AdjudicationItem, form: AdjudicationForm | None = None) -> dict[str, Any]:
    """One patch's card: what its form shows (the posted values after a refusal)."""
    if form is not None and form.errors:
        return {
            "item": item,
            "label": form["label"].value() or "",
            "themes": form["themes"].value() or [],
            "note": form["note"].value() or "",
            "errors": form.errors,
            "general": form.non_field_errors(),
        }
    done = item.adjudication
    return {
        "item": item,
        "label": done.label if done else "",
        "themes": done.themes if done else [],
        "note": done.note if done else "",
        "errors": {},
        "general": [],
    }


def _queue_context(
    dataset: Dataset,
    campaign: Campaign | None,
    *,
    refused: tuple[int, AdjudicationForm] | None = None,
) -> dict[str, Any]:
    """The queue page; ``refused`` is a patch id and its form, shown with its errors."""
    queue = adjudication.adjudication_queue(dataset=dataset, campaign=campaign)
    refused_id, form = refused or (None, None)

    def cards(items: list[AdjudicationItem]) -> list[dict[str, Any]]:
        return [_card(item, form if item.patch.pk == refused_id else None) for item in items]

    return {
        "queue": queue,
        "counts": queue.counts,
        "waiting": cards(queue.waiting),
        "adjudicated": cards(queue.adjudicated),
        "campaigns": dataset.campaigns.all(),
        **_item_context(dataset, campaign),
    }


@require_GET
@role_required(Role.LEAD)
def adjudication_index(request: HtmxHttpRequest) -> HttpResponse:
    datasets = adjudication.adjudication_datasets()
    return render(request, "judging/adjudication_index.html", {"datasets": datasets})


@require_GET
@role_required(Role.LEAD)
def adjudication_queue(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    dataset = dataset_get(slug=slug)
    campaign = _campaign(dataset, request.GET.get("campaign"))
    context = _queue_context(dataset, campaign)
    return render(request, "judging/adjudication_queue.html", context)


@require_POST
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def adjudication_save(request: HtmxHttpRequest, slug: str, patch_id: int) -> HttpResponse:
    """Record a patch's consensus; htmx gets the patch's card back (and the counts)."""
    dataset = dataset_get(slug=slug)
    patches = Patch.objects.select_related("bug__dataset", "dataset")
    patch = get_object_or_404(patches, dataset=dataset, pk=patch_id)
    form = AdjudicationForm(request.POST)
    campaign = _campaign(dataset, request.POST.get("campaign"))
    if form.is_valid():
        data = form.cleaned_data
        try:
            adjudication.adjudication_record(
                patch=patch,
                label=data["label"],
                themes=data["themes"],
                note=data["note"],
                acting_user=request.user,  # type: ignore[arg-type]
            )
        except AdjudicationError as error:
            form.add_error(error.field, str(error))
    if not request.htmx:
        if not form.errors:
            label = form.cleaned_data["label"]
            messages.success(request, RECORDED.format(patch=patch.key, label=label))
            return redirect(f"{_queue_url(dataset, campaign)}#adjudication-{patch.pk}")
        context = _queue_context(dataset, campaign, refused=(patch.pk, form))
        return render(request, "judging/adjudication_queue.html", context, status=400)
    context = {
        "card": _card(adjudication.adjudication_item(patch=patch), form),
        "saved": not form.errors,
        "counts": adjudication.adjudication_counts(dataset=dataset, campaign=campaign),
        "oob": True,
        **_item_context(dataset, campaign),
    }
    # htmx swaps only 2xx answers: a refused adjudication is still the card to show.
    return render(request, "judging/_adjudication_item.html", context)


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def calibration(request: HtmxHttpRequest) -> HttpResponse:
    """Pick a campaign and a run; see every candidate team ranked, the best pre-selected."""
    form = CalibrationPickForm(request.GET or None)
    outcome, error, run, campaign = None, "", None, None
    if form.is_bound and form.is_valid():
        campaign = form.cleaned_data["campaign"]
        run = form.chosen_run()
        if campaign is not None and run is not None:
            try:
                outcome = calibration_data.calibration_evaluate(campaign=campaign, run=run)
            except CalibrationError as exc:
                error = str(exc)
    context = {
        "form": form,
        "campaign": campaign,
        "run": run,
        "outcome": outcome,
        "error": error,
        "offline_marker": OFFLINE_MARKER,
        "calibrations": (
            calibration_data.dataset_calibrations(campaign.dataset) if campaign else []
        ),
    }
    if request.htmx and request.htmx.target == BODY_TARGET:
        return render(request, "judging/_calibration_body.html", context)
    return render(request, "judging/calibration.html", context, status=400 if form.errors else 200)


@require_POST
@role_required(Role.LEAD)
def calibration_choose(request: HtmxHttpRequest) -> HttpResponse:
    """Store the picked team as the dataset's calibration."""
    form = CalibrationChooseForm(request.POST)
    if not form.is_valid():
        problems = [str(error) for errors in form.errors.values() for error in errors]
        messages.error(request, "; ".join(problems))
        return redirect("judging:calibration")
    data = form.cleaned_data
    back = reverse("judging:calibration")
    back += "?" + urlencode({"campaign": data["campaign"].pk, "run": data["run"].pk})
    try:
        chosen = calibration_data.calibration_create(
            campaign=data["campaign"],
            run=data["run"],
            team=data["team"],
            chosen_by=request.user,  # type: ignore[arg-type]
        )
    except CalibrationError as error:
        messages.error(request, str(error))
        return redirect(back)
    messages.success(request, CHOSEN.format(team=", ".join(chosen.team)))
    return redirect("judging:calibration_detail", calibration_id=chosen.pk)


def run_with_team_url(chosen: Calibration) -> str:
    """The new-run form for the calibrated team on the calibration's dataset."""
    query = urlencode({"dataset": chosen.campaign.dataset.slug, "team": ",".join(chosen.team)})
    return f"{reverse('judging:run_new')}?{query}"


@require_GET
@role_required(Role.LEAD)
def calibration_detail(request: HtmxHttpRequest, calibration_id: int) -> HttpResponse:
    try:
        chosen = calibration_data.calibration_get(calibration_id=calibration_id)
    except Calibration.DoesNotExist:
        raise Http404(f"no calibration {calibration_id}") from None
    context = {
        "calibration": chosen,
        "run_url": run_with_team_url(chosen),
        "calibrations": calibration_data.dataset_calibrations(chosen.campaign.dataset),
        "offline_marker": OFFLINE_MARKER,
    }
    return render(request, "judging/calibration_detail.html", context)
