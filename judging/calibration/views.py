"""The lead's calibration pages: pick a calibration campaign and a run, rank the candidate
teams, keep one (and open a new run with it).

For leads only: they show judges' scores against the annotators' consensus.
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from judging.calibration import selectors, services
from judging.calibration.forms import CalibrationChooseForm, CalibrationPickForm
from judging.calibration.selectors import CalibrationError
from judging.models import Calibration
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required

BODY_TARGET = "calibration-body"
CHOSEN = "Calibration stored: team {team}."


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def calibration(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Pick a campaign and a run; see every candidate team ranked, the best pre-selected (or
    the team a calibration kept from them, reopened). Before a pick, the kept calibrations."""
    asked = "campaign" in request.GET or "run" in request.GET
    form = CalibrationPickForm(request.GET if asked else None)
    outcome, error, run, campaign, kept = None, "", None, None, None
    page = request.GET.get("page", 1)
    if form.is_bound and form.is_valid():
        campaign = form.cleaned_data["campaign"]
        run = form.chosen_run()
        if campaign is not None and run is not None:
            try:
                outcome = selectors.calibration_evaluate(campaign=campaign, run=run)
            except CalibrationError as exc:
                error = str(exc)
            else:
                kept = selectors.calibration_kept(campaign=campaign, run=run)
    context = {
        "form": form,
        "campaign": campaign,
        "run": run,
        "outcome": outcome,
        "kept": kept,
        # the team the radio picks: the kept one when reopened, else the best
        "picked_key": ",".join(kept.team) if kept else (outcome.best.key if outcome else ""),
        "chosen_key": ",".join(kept.team) if kept else "",
        "error": error,
        "offline_marker": OFFLINE_MARKER,
        "calibrations": (selectors.dataset_calibrations(campaign.dataset) if campaign else []),
        "kept_page": None if campaign else selectors.calibrations_page(page=page),
    }
    if request.htmx and request.htmx.target == BODY_TARGET:
        # htmx swaps only 2xx answers: a form error is shown all the same
        return render(request, "judging/calibration/_calibration_body.html", context)
    return render(
        request, "judging/calibration/calibration.html", context, status=400 if form.errors else 200
    )


@require_POST
@role_required(Role.LEAD)
def calibration_choose(request: AuthenticatedHtmxRequest) -> HttpResponse:
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
        chosen = services.calibration_create(
            campaign=data["campaign"],
            run=data["run"],
            team=data["team"],
            actor=request.user,
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
def calibration_detail(request: AuthenticatedHtmxRequest, calibration_id: int) -> HttpResponse:
    try:
        chosen = selectors.calibration_get(calibration_id=calibration_id)
    except Calibration.DoesNotExist:
        raise Http404(f"no calibration {calibration_id}") from None
    reopen = reverse("judging:calibration")
    reopen += "?" + urlencode({"campaign": chosen.campaign_id, "run": chosen.run_id})
    context = {
        "calibration": chosen,
        "run_url": run_with_team_url(chosen),
        "reopen_url": reopen,
        "chosen_key": ",".join(chosen.team),
        "offline": any(row.get("is_offline") for row in chosen.ranking),
        "calibrations": selectors.dataset_calibrations(chosen.campaign.dataset),
        "offline_marker": OFFLINE_MARKER,
    }
    return render(request, "judging/calibration/calibration_detail.html", context)
