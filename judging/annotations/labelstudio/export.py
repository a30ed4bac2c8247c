"""Patches out as Label Studio tasks, with the labelling config that shows them.

:func:`tasks_export` gives a campaign's patches (or a whole dataset's) as the JSON list of
tasks Label Studio imports (``[{"data": {…}, "predictions": [...]}]``), and
:func:`labelling_config` the labelling config (XML) that shows them: the bug's title and
description, the developer's fix, the golden rubric (where the campaign shows it), the
candidate diff, a required single choice ``VALID`` / ``INVALID`` / ``UNSURE`` and a note.
A task's ``data`` holds what the labelling page shows an annotator and our ids
(``sejury_dataset``, ``sejury_patch_id``, ``sejury_campaign``), never a verdict, a label or
the patch's source. Only when asked for a run's verdicts does a task carry one, as a Label
Studio *prediction* (``model_version`` names the run, its team and model, and says so when
the offline heuristic wrote it: it is not an LLM); its ``score`` is how sure the run is (the
score's margin from the threshold as a share of the scale), so Label Studio's "lowest
score first" shows the least certain verdicts first.
"""

import json
from collections.abc import Iterable
from typing import Any
from xml.sax.saxutils import quoteattr

from judging.annotations.selectors import campaign_patch_ids
from judging.models import Campaign, JudgingRun, Label, PatchJudgment, StrategyResult
from judging.runs.uncertainty import margin
from rubrics.models import Dataset, Patch
from rubrics.selectors import golden_rubric
from sejury_web.llm import OFFLINE_MARKER, Provider

from .names import CAMPAIGN_FIELD, CHOICES_NAME, DATASET_FIELD, DIFF_NAME, NOTE_NAME, PATCH_FIELD

# Diffs in monospace, their indentation kept. Label Studio's labelling page forces its own
# font on everything in it (``.lsf-datamanager * {font-family: … !important}``), so the
# ``style`` of a ``<View>`` never reaches the text: a ``<Style>`` rule on a class does, with
# ``!important``, coming after Label Studio's own stylesheet.
CODE_CLASS = "sejury-code"
CODE_STYLE = (
    f".{CODE_CLASS}, .{CODE_CLASS} * "
    "{ font-family: monospace !important; white-space: pre-wrap !important; }"
)


def labelling_config(*, with_rubric: bool = True) -> str:
    """The labelling config that shows exported tasks and asks for one label and a note."""
    rubric = (
        '  <Header value="Golden rubric" size="5"/>\n  <Text name="rubric" value="$rubric"/>\n'
        if with_rubric
        else ""
    )
    choices = "\n".join(
        f"    <Choice value={quoteattr(value)} hotkey={quoteattr(key)}/>"
        for value, key in ((Label.VALID, "v"), (Label.INVALID, "i"), (Label.UNSURE, "u"))
    )
    return (
        "<View>\n"
        f"  <Style>{CODE_STYLE}</Style>\n"
        '  <Header value="$title"/>\n'
        '  <Text name="description" value="$description"/>\n'
        '  <Header value="Developer\'s fix" size="5"/>\n'
        f'  <View className="{CODE_CLASS}">\n'
        '    <Text name="reference_patch" value="$reference_patch"/>\n'
        "  </View>\n"
        f"{rubric}"
        '  <Header value="Candidate patch" size="5"/>\n'
        f'  <View className="{CODE_CLASS}">\n'
        f'    <Text name="{DIFF_NAME}" value="$diff"/>\n'
        "  </View>\n"
        f'  <Choices name="{CHOICES_NAME}" toName="{DIFF_NAME}" choice="single-radio"'
        ' showInline="true" required="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        f'  <TextArea name="{NOTE_NAME}" toName="{DIFF_NAME}" placeholder="Note (optional)"'
        ' rows="3" maxSubmissions="1" editable="true"/>\n'
        "</View>\n"
    )


def config_with_rubric(campaign: Campaign | None) -> bool:
    """Whether the tasks show the golden rubric: as the campaign's annotators see it."""
    return campaign is None or campaign.show_rubric


def _model_version(run: JudgingRun, offline: bool) -> str:
    source = OFFLINE_MARKER if offline else f"{run.provider} {run.model}"
    return f"SE-Jury run {run.pk}: {'+'.join(run.strategies)} ({source})"


def _predictions(run: JudgingRun, patch_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The run's finished verdicts of ``patch_ids`` as Label Studio predictions, by patch.
    Read in no order (the tasks are in key order already; the models' default order joined
    the run, patch and dataset to sort every verdict and member result)."""
    judgments = (
        PatchJudgment.objects.filter(
            run=run, patch_id__in=list(patch_ids), status=PatchJudgment.Status.DONE
        )
        .exclude(verdict="")
        .order_by()
    )
    offline_ids = set(
        StrategyResult.objects.filter(judgment__in=judgments, is_offline=True)
        .order_by()
        .values_list("judgment_id", flat=True)
    )
    run_offline = run.provider == Provider.OFFLINE
    predictions = {}
    for judgment in judgments.only("id", "patch_id", "verdict", "score"):
        offline = run_offline or judgment.pk in offline_ids
        predictions[judgment.patch_id] = {
            "model_version": _model_version(run, offline),
            "score": None if judgment.score is None else round(margin(judgment.score, run), 4),
            "result": [
                {
                    "id": f"run{run.pk}-{judgment.pk}",
                    "from_name": CHOICES_NAME,
                    "to_name": DIFF_NAME,
                    "type": "choices",
                    "value": {"choices": [judgment.verdict]},
                }
            ],
        }
    return predictions


def tasks_export(
    *, dataset: Dataset, campaign: Campaign | None = None, run: JudgingRun | None = None
) -> list[dict[str, Any]]:
    """The patches of ``campaign`` (or all of ``dataset``'s) as Label Studio tasks, in key
    order; with ``run``, each with the run's verdict as a prediction (a lead's export only:
    annotators never see verdicts)."""
    patches = Patch.objects.filter(dataset=dataset).select_related("bug").order_by("sort_key")
    if campaign is not None:
        patches = patches.filter(pk__in=campaign_patch_ids(campaign))
    with_rubric = config_with_rubric(campaign)
    rubrics: dict[int, str] = {}
    predictions = _predictions(run, [p.pk for p in patches]) if run is not None else {}
    tasks = []
    for patch in patches:
        bug = patch.bug
        if with_rubric and bug.pk not in rubrics:
            golden = golden_rubric(bug_id=bug.pk)
            rubrics[bug.pk] = golden.text if golden else "(no golden rubric yet)"
        data: dict[str, Any] = {
            "title": f"{bug.key}: {bug.title}" if bug.title else bug.key,
            "description": bug.description,
            "reference_patch": bug.reference_patch,
            "diff": patch.diff,
        }
        if with_rubric:
            data["rubric"] = rubrics[bug.pk]
        data |= {
            DATASET_FIELD: dataset.slug,
            PATCH_FIELD: patch.pk,
            CAMPAIGN_FIELD: campaign.pk if campaign is not None else None,
        }
        task: dict[str, Any] = {"data": data}
        if run is not None:
            task["predictions"] = [predictions[patch.pk]] if patch.pk in predictions else []
        tasks.append(task)
    return tasks


def tasks_json(**scope: Any) -> str:
    return json.dumps(tasks_export(**scope), ensure_ascii=False, indent=1) + "\n"


def export_filename(dataset: Dataset, campaign: Campaign | None, what: str) -> str:
    scope = f"campaign-{campaign.pk}" if campaign is not None else dataset.slug
    return f"labelstudio-{scope}-{what}"
