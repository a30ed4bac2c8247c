"""The lead's adjudication queue: the patches whose labels give no consensus under the rule
in force, every label and note side by side with the label counts, the majority and the
diff, the consensus the lead records, and the rule of the campaign (or dataset) shown, which
a lead may change. For leads only.

The queue is shown a window of ``PER_PAGE`` patches at a time, waiting ones or adjudicated
ones (``?show=adjudicated``), the next window being the patches after the last one shown
(``?after=<patch id>``, ``?before=`` for the previous): adjudicating a window's patches
skips none of the next. ``static/js/adjudicate.js`` adds keyboard shortcuts.
"""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from judging.annotations.selectors import dataset_campaigns
from judging.consensus import selectors, services
from judging.consensus.forms import AdjudicationForm, ConsensusRuleForm
from judging.consensus.rules import ConsensusRule
from judging.consensus.selectors import AdjudicationError, AdjudicationItem
from judging.models import Campaign, DisagreementTheme, Label
from rubrics.models import Dataset, Patch
from rubrics.selectors import dataset_get
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.ids import id_parse, is_id
from sejury_web.roles import Role, role_required

RECORDED = "Recorded the consensus of {patch}: {label}."
NO_PATCH = "{dataset} has no patch {patch}"
PER_PAGE = 10
SHOW_ADJUDICATED = "adjudicated"
# The keys of the queue's shortcuts (static/js/adjudicate.js), as the page documents them.
SHORTCUTS = [
    ("n / →", "next patch (at the last one, the next page)"),
    ("p / ←", "previous patch (at the first one, the previous page)"),
    ("v / i", "choose VALID or INVALID"),
    ("1–5", "tick or untick a theme, in the order listed"),
    ("d", "show or hide the diff"),
    ("s", "record the consensus (then on to the next patch)"),
    ("Esc", "leave the note"),
]
RULE_SET = "The consensus rule of {scope} is now: {rule}."
RULE_KEPT = "The consensus rule of {scope} was already: {rule}."


def _campaign(dataset: Dataset, value: Any) -> Campaign | None:
    if value in (None, ""):
        return None
    try:
        return selectors.dataset_campaign(dataset=dataset, campaign_id=id_parse(value))
    except (ValueError, Campaign.DoesNotExist):
        raise Http404(f"{dataset} has no campaign {value}") from None


def _queue_url(
    dataset: Dataset, campaign: Campaign | None, place: dict[str, Any] | None = None
) -> str:
    """The queue's URL, of ``campaign`` if given, at ``place`` (``_place``) if given."""
    url = reverse("judging:adjudication_queue", args=[dataset.slug])
    query = {"campaign": campaign.pk} if campaign else {}
    query |= {name: value for name, value in (place or {}).items() if value}
    return f"{url}?{urlencode(query)}" if query else url


def _cursor(value: Any) -> int | None:
    return int(value) if is_id(value) else None


def _place(data: Any) -> dict[str, Any]:
    """Which list (``show``) and window (``after``, ``before``) of the queue ``data`` asks for."""
    return {
        "show": SHOW_ADJUDICATED if data.get("show") == SHOW_ADJUDICATED else "",
        "after": _cursor(data.get("after")),
        "before": _cursor(data.get("before")),
    }


def _shown(first: int | None, last: int | None) -> dict[str, int | None]:
    """The first and last patch of the page a card is on, which its form sends back: the
    answer to htmx then says where the page's patches now are in the list."""
    return {"shown_first": first, "shown_last": last}


def _item_context(dataset: Dataset, campaign: Campaign | None) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "campaign": campaign,
        "themes": DisagreementTheme.choices,
        "labels": [Label.VALID, Label.INVALID],
    }


def _card(
    item: AdjudicationItem, diff: str, form: AdjudicationForm | None = None
) -> dict[str, Any]:
    """One patch's card: what its form shows (the posted values after a refusal)."""
    if form is not None and form.errors:
        return {
            "item": item,
            "diff": diff,
            "label": form["label"].value() or "",
            "themes": form["themes"].value() or [],
            "note": form["note"].value() or "",
            "errors": form.errors,
            "general": form.non_field_errors(),
        }
    done = item.adjudication
    return {
        "item": item,
        "diff": diff,
        "label": done.label if done else "",
        "themes": done.themes if done else [],
        "note": done.note if done else "",
        "errors": {},
        "general": [],
    }


def _queue_context(
    dataset: Dataset,
    campaign: Campaign | None,
    place: dict[str, Any],
    *,
    refused: tuple[int, AdjudicationForm] | None = None,
    rule_form: ConsensusRuleForm | None = None,
) -> dict[str, Any]:
    """The queue page at ``place`` (``_place``); ``refused`` is a patch id and its form, shown
    with its errors, and ``rule_form`` a refused change of the rule."""
    queue = selectors.adjudication_queue_outline(dataset=dataset, campaign=campaign)
    if rule_form is None:
        initial = {"rule": queue.rule, "campaign": campaign.pk if campaign else None}
        rule_form = ConsensusRuleForm(initial=initial)
    refused_id, form = refused or (None, None)
    show_adjudicated = place["show"] == SHOW_ADJUDICATED
    window = selectors.queue_window(
        queue,
        adjudicated=show_adjudicated,
        after=place["after"],
        before=place["before"],
        size=PER_PAGE,
    )
    diffs = selectors.adjudication_diffs(patch_ids=[item.patch.pk for item in window.items])
    cards = [
        _card(item, diffs.get(item.patch.pk, ""), form if item.patch.pk == refused_id else None)
        for item in window.items
    ]
    show = {"show": place["show"]}
    return {
        "queue": queue,
        "counts": queue.counts,
        "window": window,
        "range": window,
        "shown": _shown(window.items[0].patch.pk, window.items[-1].patch.pk)
        if window.items
        else {},
        "cards": cards,
        "show_adjudicated": show_adjudicated,
        "place": place,
        "waiting_url": _queue_url(dataset, campaign),
        "adjudicated_url": _queue_url(dataset, campaign, {"show": SHOW_ADJUDICATED}),
        "previous_url": window.before
        and _queue_url(dataset, campaign, show | {"before": window.before}),
        "next_url": window.after and _queue_url(dataset, campaign, show | {"after": window.after}),
        "first_url": _queue_url(dataset, campaign, show),
        "shortcuts": SHORTCUTS,
        "campaigns": dataset_campaigns(dataset),
        "rule": queue.rule,
        "rule_form": rule_form,
        **_item_context(dataset, campaign),
    }


@require_GET
@role_required(Role.LEAD)
def adjudication_index(request: AuthenticatedHtmxRequest) -> HttpResponse:
    datasets = selectors.adjudication_datasets()
    return render(request, "judging/consensus/adjudication_index.html", {"datasets": datasets})


@require_GET
@role_required(Role.LEAD)
def adjudication_queue(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    dataset = dataset_get(slug=slug, counts=False)  # the queue shows no count of bugs or patches
    campaign = _campaign(dataset, request.GET.get("campaign"))
    context = _queue_context(dataset, campaign, _place(request.GET))
    return render(request, "judging/consensus/adjudication_queue.html", context)


@require_POST
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def adjudication_save(request: AuthenticatedHtmxRequest, slug: str, patch_id: int) -> HttpResponse:
    """Record a patch's consensus; htmx gets the patch's card back (and the counts)."""
    dataset = dataset_get(slug=slug, counts=False)
    try:
        patch = selectors.adjudication_patch(dataset=dataset, patch_id=patch_id)
    except Patch.DoesNotExist:
        raise Http404(NO_PATCH.format(patch=patch_id, dataset=dataset)) from None
    form = AdjudicationForm(request.POST)
    campaign = _campaign(dataset, request.POST.get("campaign"))
    if not form.is_valid():
        # Every field's fault at once: an empty submit lacks the label and the theme.
        data = form.cleaned_data
        for error in services.adjudication_errors(
            patch=patch,
            label=data.get("label"),
            themes=data.get("themes", []),
            note=data.get("note", ""),
        ):
            if error.field not in form.errors:
                form.add_error(error.field, str(error))
    else:
        data = form.cleaned_data
        try:
            services.adjudication_record(
                patch=patch,
                label=data["label"],
                themes=data["themes"],
                note=data["note"],
                actor=request.user,
            )
        except AdjudicationError as error:
            form.add_error(error.field, str(error))
    place = _place(request.POST)
    if not request.htmx:
        if not form.errors:
            label = form.cleaned_data["label"]
            messages.success(request, RECORDED.format(patch=patch.key, label=label))
            return redirect(f"{_queue_url(dataset, campaign, place)}#adjudication-{patch.pk}")
        context = _queue_context(dataset, campaign, place, refused=(patch.pk, form))
        return render(request, "judging/consensus/adjudication_queue.html", context, status=400)
    item = selectors.adjudication_item(patch=patch, campaign=campaign)
    queue = selectors.adjudication_queue_outline(dataset=dataset, campaign=campaign)
    shown = _shown(
        _cursor(request.POST.get("shown_first")), _cursor(request.POST.get("shown_last"))
    )
    context = {
        "card": _card(item, patch.diff, form),
        "place": place,
        "shown": shown,
        "saved": not form.errors,
        "counts": queue.counts,
        "range": selectors.queue_range(
            queue,
            adjudicated=place["show"] == SHOW_ADJUDICATED,
            first=shown["shown_first"],
            last=shown["shown_last"],
        ),
        "show_adjudicated": place["show"] == SHOW_ADJUDICATED,
        "oob": True,
        **_item_context(dataset, campaign),
    }
    # htmx swaps only 2xx answers: a refused adjudication is still the card to show.
    return render(request, "judging/consensus/_adjudication_item.html", context)


@require_POST
@role_required(Role.LEAD)
def consensus_rule_set(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    """Set the rule of the scope the queue shows: its campaign's, or else its dataset's."""
    dataset = dataset_get(slug=slug, counts=False)
    form = ConsensusRuleForm(request.POST)
    campaign = _campaign(dataset, request.POST.get("campaign"))
    if form.is_valid():
        try:
            changed = services.consensus_rule_set(
                dataset=dataset,
                campaign=campaign,
                rule=form.cleaned_data["rule"],
                actor=request.user,
            )
        except AdjudicationError as error:
            form.add_error(error.field if error.field in form.fields else None, str(error))
        else:
            scope = f"campaign “{campaign}”" if campaign else f"dataset “{dataset}”"
            message = RULE_SET if changed else RULE_KEPT
            rule = ConsensusRule(form.cleaned_data["rule"]).label
            messages.success(request, message.format(scope=scope, rule=rule))
            return redirect(_queue_url(dataset, campaign))
    context = _queue_context(dataset, campaign, _place(request.POST), rule_form=form)
    return render(request, "judging/consensus/adjudication_queue.html", context, status=400)
