"""The lead's adjudication, its writes: a patch's consensus recorded (the ``Adjudication`` row
is its own history), and the consensus rule of a campaign or a dataset changed (in the audit
trail). The queue they act on is read by ``judging.consensus.selectors``."""

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction

from judging.consensus.rules import UNKNOWN_RULE, ConsensusRule
from judging.consensus.selectors import AdjudicationError, campaign_check
from judging.models import Adjudication, Annotation, Campaign, DisagreementTheme, Label
from rubrics.models import Dataset, Patch
from sejury_web.audit import audit_record

NOT_DECISIVE = "the consensus label must be VALID or INVALID, not {label!r}"
UNKNOWN_THEME = "unknown disagreement theme {theme!r}; the themes are {known}"
THEMES_REQUIRED = "the annotators disagreed: tag the disagreement with at least one theme"
OTHER_NEEDS_NOTE = "the theme “Other” needs a note that says what the disagreement was"

# Audit actions (sejury_web.audit): a lead changed the consensus rule of a campaign or dataset.
CAMPAIGN_CONSENSUS_RULE = "campaign.consensus_rule"
DATASET_CONSENSUS_RULE = "dataset.consensus_rule"


def _themes(themes: Iterable[str]) -> list[str]:
    """Known theme values, each once, in the order of ``DisagreementTheme``."""
    given = set(themes)
    unknown = sorted(given - set(DisagreementTheme.values))
    if unknown:
        known = ", ".join(DisagreementTheme.values)
        raise AdjudicationError(UNKNOWN_THEME.format(theme=unknown[0], known=known), field="themes")
    return [value for value in DisagreementTheme.values if value in given]


def adjudication_errors(
    *, patch: Patch, label: str | None, themes: Iterable[str], note: str
) -> list[AdjudicationError]:
    """Every reason ``adjudication_record`` would refuse these values, one per field (the
    form shows them all at once: a missing label and a missing theme together)."""
    errors = []
    if label not in (Label.VALID, Label.INVALID):
        errors.append(AdjudicationError(NOT_DECISIVE.format(label=label), field="label"))
    try:
        chosen = _themes(themes)
    except AdjudicationError as error:
        return [*errors, error]
    labels = set(Annotation.objects.filter(patch=patch).values_list("label", flat=True))
    if len(labels - {Label.UNSURE}) > 1 and not chosen:
        errors.append(AdjudicationError(THEMES_REQUIRED, field="themes"))
    if DisagreementTheme.OTHER in chosen and not note.strip():
        errors.append(AdjudicationError(OTHER_NEEDS_NOTE, field="note"))
    return errors


def adjudication_record(
    *, patch: Patch, label: str, themes: Iterable[str], note: str, actor: User
) -> Adjudication:
    """Record (or change) the lead's consensus on ``patch``.

    Themes are required when the annotators' decisive labels disagree, and "other" needs a
    note; a patch that merely lacks labels may be decided without a theme.
    """
    errors = adjudication_errors(patch=patch, label=label, themes=themes, note=note)
    if errors:
        raise errors[0]
    chosen = _themes(themes)
    note = note.strip()
    with transaction.atomic():
        adjudication, _ = Adjudication.objects.update_or_create(
            patch=patch,
            defaults={"label": label, "themes": chosen, "note": note, "decided_by": actor},
        )
    return adjudication


def consensus_rule_set(
    *, dataset: Dataset, campaign: Campaign | None = None, rule: str, actor: User | None
) -> bool:
    """Set the consensus rule of ``campaign`` (when given) or else of ``dataset``; False when
    it was that rule already (no event). Which patches wait for a lead changes with it;
    adjudications stay, and stay the consensus of their patches.
    """
    if rule not in ConsensusRule.values:
        known = ", ".join(ConsensusRule.values)
        raise AdjudicationError(UNKNOWN_RULE.format(rule=rule, known=known), field="rule")
    campaign_check(dataset=dataset, campaign=campaign)
    holder: Dataset | Campaign = dataset if campaign is None else campaign
    action = DATASET_CONSENSUS_RULE if campaign is None else CAMPAIGN_CONSENSUS_RULE
    with transaction.atomic():
        # Locked: of two leads changing it at once, the second sees the first's rule as "from".
        before = type(holder).objects.select_for_update().get(pk=holder.pk).consensus_rule
        holder.consensus_rule = before
        if before == rule:
            return False
        type(holder).objects.filter(pk=holder.pk).update(consensus_rule=rule)
        holder.consensus_rule = rule
        audit_record(actor=actor, action=action, target=holder, detail={"from": before, "to": rule})
    return True
