"""The lead's quality-ladder pages (REFINE): build a dataset's ladders, test judge
configurations on them, read the ranking, the per-level chart and the worst-ordered bugs.

For leads only, like the runs whose scores they show."""

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from judging.reports.charts import CurvePoint, Series, curve_chart
from judging.runs.selectors import run_progress
from judging.runs.services import RunError
from rubrics.ladders.operators import LEVELS
from rubrics.ladders.services import LadderError, ladders_build
from rubrics.models import Dataset
from rubrics.selectors import dataset_get
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required
from sejury_web.svg import ACCENT, SERIES

from .forms import LevelsForm, RefineForm
from .scores import TIER
from .selectors import (
    Ranked,
    ladder_datasets,
    ladder_get,
    ladder_level_counts,
    ladder_runs,
    ladder_skips,
    refine_ranking,
    source_datasets,
)
from .services import refine_start

RESULTS_TARGET = "refine-results"
CHARTED = len(SERIES)  # lines on the chart: the best-ranked configurations
LEVEL_HELP = {
    0: "the bug's reference fix, unchanged",
    1: "the same fix with a comment added and, where it can, a new local renamed",
    2: "the fix with its later changes reverted",
    3: "one added line mutated (a condition inverted, a constant changed), or the core "
    "change reverted",
    4: "every change reverted: only a comment added where the fix was",
}
BUILT = "Ladders of {source}: {bugs} bugs, {added} new patches ({kept} already built)."


@dataclass(frozen=True)
class Row:
    rank: int
    ranked: Ranked
    colour: str | None  # its line on the chart, if charted

    @property
    def level_means(self) -> list[float | None]:
        means = self.ranked.ordering.level_means
        return [means[level].value if level in means else None for level in LEVELS]


@require_GET
@role_required(Role.LEAD)
def refine_index(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """The datasets ladders can be built from, and the ladders built."""
    ladders = {ladder.derived_from_id: ladder for ladder in ladder_datasets()}
    sources = [(dataset, ladders.get(dataset.pk)) for dataset in source_datasets()]
    return render(
        request,
        "judging/refine/index.html",
        {"sources": sources, "levels_form": LevelsForm(), "levels": LEVELS, "help": LEVEL_HELP},
    )


@require_POST
@role_required(Role.LEAD)
def refine_build(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    source = dataset_get(slug=slug)
    form = LevelsForm(request.POST)
    if not form.is_valid():
        messages.error(
            request, "; ".join(str(e) for errors in form.errors.values() for e in errors)
        )
        return redirect("judging:refine_index")
    try:
        build = ladders_build(dataset=source, actor=request.user, levels=form.chosen())
    except LadderError as error:
        messages.error(request, str(error))
        return redirect("judging:refine_index")
    messages.success(
        request,
        BUILT.format(
            source=source.name,
            bugs=build.bugs,
            added=build.patches_added,
            kept=build.patches_kept,
        ),
    )
    return redirect("judging:refine_detail", slug=build.ladder.slug)


def _levels(request: AuthenticatedHtmxRequest) -> tuple[LevelsForm, list[int]]:
    if "levels" not in request.GET:
        return LevelsForm(), list(LEVELS)
    form = LevelsForm(request.GET)
    return form, form.chosen() if form.is_valid() else list(LEVELS)


def _chart(rows: list[Row], levels: list[int]) -> SafeString | None:
    charted = [row for row in rows if row.colour is not None]
    if not charted:
        return None
    last = max(LEVELS)
    series = [  # the best drawn last, on top; only its band, or the bands would hide the lines
        Series(
            name=row.ranked.evaluator.label
            + (" (member)" if row.ranked.evaluator.member_of else ""),
            points=[
                CurvePoint(
                    level / last,
                    row.ranked.ordering.level_means[level].value,
                    _ci(row.ranked, level) if row is charted[0] else None,
                )
                for level in levels
            ],
            colour=row.colour or ACCENT,
            dashed=bool(row.ranked.evaluator.member_of),
        )
        for row in reversed(charted)
    ]
    best = charted[0].ranked.evaluator.label
    return curve_chart(
        series,
        lo=0,
        hi=100,
        x_label="L0 fix · L1 rewrite · L2 partial · L3 wrong · L4 no fix",
        y_label="Mean score",
        title="Mean score per ladder level",
        desc=(
            f"Mean score of each level for the {len(charted)} best-ranked configurations; a "
            f"judge that keeps the expected order falls level by level. Best: {best}."
        ),
        chart_id="refine-levels",
        x_ticks=[(level / last, f"L{level}") for level in levels],
        legend=False,
    )


def _ci(ranked: Ranked, level: int) -> tuple[float, float] | None:
    estimate = ranked.ordering.level_means[level]
    if estimate.lo is None or estimate.hi is None:
        return None
    return (estimate.lo, estimate.hi)


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def refine_detail(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    """A ladder dataset: its levels, the configurations tested on it ranked, the chart."""
    ladder = ladder_get(slug=slug)
    if request.htmx and request.htmx.target == RESULTS_TARGET:
        return render(request, "judging/refine/_results.html", _results_context(request, ladder))
    return render(
        request, "judging/refine/detail.html", _detail_context(request, ladder, RefineForm())
    )


def _results_context(request: AuthenticatedHtmxRequest, ladder: Dataset) -> dict[str, object]:
    """The results card: the configurations tested on the ladder ranked, and the chart."""
    _, levels = _levels(request)
    runs = ladder_runs(ladder)
    ranking = refine_ranking(ladder, runs=runs, levels=levels)
    rows = [
        Row(rank, ranked, SERIES[rank - 1] if rank <= CHARTED else None)
        for rank, ranked in enumerate(ranking, start=1)
    ]
    active = [run for run in runs if run.is_active]
    return {
        "ladder": ladder,
        "rows": rows,
        "levels": levels,
        "chart": _chart(rows, levels),
        "active": [(run, run_progress(run)) for run in active],
        "offline_marker": OFFLINE_MARKER,
        "any_offline": any(row.ranked.evaluator.offline for row in rows),
        "results_target": RESULTS_TARGET,
    }


def _detail_context(
    request: AuthenticatedHtmxRequest, ladder: Dataset, form: RefineForm
) -> dict[str, object]:
    """The whole page: the ladder's levels and forms, and the results card."""
    levels_form, _ = _levels(request)
    return {
        **_results_context(request, ladder),
        "all_levels": LEVELS,
        "help": LEVEL_HELP,
        "tiers": TIER,
        "counts": ladder_level_counts(ladder),
        "skips": ladder_skips(ladder),
        "levels_form": levels_form,
        "form": form,
    }


@require_POST
@role_required(Role.LEAD)
def refine_test(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    """Start (or reuse) a run per configuration on the ladder dataset."""
    ladder = ladder_get(slug=slug)
    form = RefineForm(request.POST)
    if form.is_valid():
        try:
            started = refine_start(
                ladder=ladder,
                configurations=form.cleaned_data["configs"],
                provider=form.cleaned_data["provider"],
                model=form.cleaned_data["model"],
                actor=request.user,
            )
        except RunError as error:
            form.add_error("configs", str(error))
        else:
            new = sum(1 for _, created in started if created)
            messages.success(
                request,
                f"{new} run{'s' if new != 1 else ''} started, {len(started) - new} reused: the "
                "ranking fills in as they finish.",
            )
            return redirect("judging:refine_detail", slug=ladder.slug)
    context = _detail_context(request, ladder, form)
    return render(request, "judging/refine/detail.html", context, status=400)
