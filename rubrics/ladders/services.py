"""Build a dataset's quality ladders (REFINE's hierarchy builder, paper 002 §II-A).

The ladders of a dataset live in a *derived* dataset (``Dataset.derived_from``, derivation
``"ladders"``), so every page, export and run works on them as on any dataset:

- each source bug with a reference fix gets a copy there (same key, description and
  reference fix; ``metadata["ladder"]`` names its origin and the levels skipped, with why);
- each level the operators built is a patch of that copy: key ``<bug>:L<level>``, source
  ``ladder:L<level>``, ``metadata["ladder"]`` its level and the operators applied;
- the copy gets the source bug's rubrics as they are when the ladder is built: each
  rubric's draft (revision 0) and, if later, its golden revision, so the rubric judge can
  be tested with a ``draft`` or ``golden`` context. Building again adds what is missing
  (new bugs, new levels) and brings a copied golden rubric up to date with the source's,
  as a new revision, which the stale-verdict machinery then offers to re-judge.

Building is idempotent: a patch that exists is never rewritten, so a run's verdicts stay
attached to the diff they judged.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Prefetch

from rubrics.bundle.services import dataset_slug
from rubrics.models import Bug, Dataset, Patch, Rubric, RubricRevision
from sejury_web.audit import audit_record
from sejury_web.diffs import DiffError, normalized_diff_hash, parse_diff

from .operators import LEVELS, Rung, Skipped, build_ladder

DERIVATION = "ladders"
SOURCE_PREFIX = "ladder:L"
NAME_SUFFIX = " · ladders"
BATCH = 500

NOT_A_SOURCE = "{name} is itself a derived dataset: build ladders from the dataset it came from"
NO_LEVELS = "choose at least one level"
UNKNOWN_LEVEL = "unknown level {level}: the levels are {known}"
NO_REFERENCE = "no reference fix"
UNPARSABLE = "the reference fix does not parse: {error}"
COPIED_REVISION = "Copied from {origin}, revision {number}, when the quality ladders were built."


class LadderError(ValueError):
    """The ladders cannot be built as asked; the message says why."""


@dataclass
class LadderBuild:
    """What one build did."""

    ladder: Dataset
    created: bool  # the ladder dataset is new
    bugs: int = 0  # source bugs with a ladder
    bugs_added: int = 0
    patches_added: int = 0
    patches_kept: int = 0
    rubrics_copied: int = 0
    rubrics_updated: int = 0
    levels: Counter[int] = field(default_factory=Counter)  # patches per level (all, not new)
    skipped: Counter[tuple[int, str]] = field(default_factory=Counter)  # (level, reason)
    bugs_left_out: Counter[str] = field(default_factory=Counter)  # reason → bugs

    def as_dict(self) -> dict[str, Any]:
        return {
            "ladder": self.ladder.name,
            "bugs": self.bugs,
            "bugs_added": self.bugs_added,
            "patches_added": self.patches_added,
            "patches_kept": self.patches_kept,
            "rubrics_copied": self.rubrics_copied,
            "rubrics_updated": self.rubrics_updated,
            "levels": {str(level): n for level, n in sorted(self.levels.items())},
            "skipped": [
                {"level": level, "reason": reason, "bugs": n}
                for (level, reason), n in sorted(self.skipped.items())
            ],
            "bugs_left_out": dict(self.bugs_left_out),
        }


def ladder_name(source: Dataset) -> str:
    return source.name[: 200 - len(NAME_SUFFIX)] + NAME_SUFFIX


def check_levels(levels: Iterable[int]) -> tuple[int, ...]:
    chosen = tuple(sorted(set(levels)))
    if not chosen:
        raise LadderError(NO_LEVELS)
    for level in chosen:
        if level not in LEVELS:
            raise LadderError(UNKNOWN_LEVEL.format(level=level, known=", ".join(map(str, LEVELS))))
    return chosen


def ladders_build(
    *, dataset: Dataset, actor: User | None, levels: Iterable[int] = tuple(LEVELS)
) -> LadderBuild:
    """Build (or complete) the quality ladders of ``dataset``'s bugs; all or nothing."""
    if dataset.derived_from_id is not None:
        raise LadderError(NOT_A_SOURCE.format(name=dataset.name))
    chosen = check_levels(levels)
    with transaction.atomic():
        ladder, created = _ladder_dataset(dataset)
        build = LadderBuild(ladder=ladder, created=created)
        # Both sides' rubrics are read with their bugs, not three queries a bug.
        mine = Prefetch("rubrics", queryset=Rubric.objects.select_related("golden_revision"))
        copies = {bug.key: bug for bug in ladder.bugs.prefetch_related(mine)}
        existing = set(ladder.patches.values_list("key", flat=True))
        new_patches: list[Patch] = []
        drafts = Prefetch("revisions", RubricRevision.objects.filter(number=0), to_attr="drafts")
        theirs = Rubric.objects.select_related("golden_revision").filter(current_number__gte=0)
        sources = dataset.bugs.order_by("sort_key").prefetch_related(
            Prefetch("rubrics", queryset=theirs.prefetch_related(drafts))
        )
        for bug in sources.iterator(chunk_size=BATCH):
            rungs = _rungs(bug, chosen, build)
            if rungs is None:
                continue
            build.bugs += 1
            skipped = {str(r.level): r.reason for r in rungs if isinstance(r, Skipped)}
            for r in rungs:
                if isinstance(r, Skipped):
                    build.skipped[(r.level, r.reason)] += 1
            copy = copies.get(bug.key)
            if copy is None:
                copy = copies[bug.key] = _copy_bug(bug, ladder, skipped)
                build.bugs_added += 1
            elif copy.metadata.get("ladder", {}).get("skipped") != skipped:
                copy.metadata = {**copy.metadata, "ladder": _bug_meta(bug, skipped)}
                copy.save(update_fields=["metadata", "updated_at"])
            for rung in rungs:
                if isinstance(rung, Rung):
                    build.levels[rung.level] += 1
                    key = f"{bug.key}:L{rung.level}"
                    if key in existing:
                        build.patches_kept += 1
                    else:
                        new_patches.append(_ladder_patch(rung, bug, copy, key))
            copied, updated = _copy_rubrics(bug, copy, source=dataset.name)
            build.rubrics_copied += copied
            build.rubrics_updated += updated
            if len(new_patches) >= BATCH:
                build.patches_added += len(Patch.objects.bulk_create(new_patches))
                new_patches = []
        build.patches_added += len(Patch.objects.bulk_create(new_patches))
        audit_record(
            actor=actor,
            action="ladders built",
            target=ladder,
            detail={"levels": list(chosen), **build.as_dict()},
        )
    return build


def _ladder_dataset(source: Dataset) -> tuple[Dataset, bool]:
    ladder = Dataset.objects.filter(derived_from=source, derivation=DERIVATION).first()
    if ladder is not None:
        return ladder, False
    name = ladder_name(source)
    ladder = Dataset.objects.create(
        name=name,
        slug=dataset_slug(name),
        derived_from=source,
        derivation=DERIVATION,
        consensus_rule=source.consensus_rule,
        description=(
            f"Quality ladders of {source.name}: for each bug, its reference fix degraded level "
            "by level (REFINE), to test judge configurations without human labels."
        ),
    )
    return ladder, True


def _rungs(bug: Bug, levels: tuple[int, ...], build: LadderBuild) -> list[Rung | Skipped] | None:
    if not bug.reference_patch.strip():
        build.bugs_left_out[NO_REFERENCE] += 1
        return None
    try:
        return build_ladder(bug.reference_patch, levels=levels)
    except DiffError as error:
        build.bugs_left_out[UNPARSABLE.format(error=error)] += 1
        return None


def _bug_meta(bug: Bug, skipped: dict[str, str]) -> dict[str, Any]:
    return {"origin_bug": bug.pk, "origin_dataset": bug.dataset_id, "skipped": skipped}


def _copy_bug(bug: Bug, ladder: Dataset, skipped: dict[str, str]) -> Bug:
    return Bug.objects.create(
        dataset=ladder,
        key=bug.key,
        title=bug.title,
        description=bug.description,
        language=bug.language,
        bug_type=bug.bug_type,
        reference_patch=bug.reference_patch,
        metadata={**bug.metadata, "ladder": _bug_meta(bug, skipped)},
    )


def _ladder_patch(rung: Rung, bug: Bug, copy: Bug, key: str) -> Patch:
    return Patch(
        dataset_id=copy.dataset_id,
        bug=copy,
        key=key,
        diff=rung.diff,
        diff_hash=normalized_diff_hash(parse_diff(rung.diff)),
        source=f"{SOURCE_PREFIX}{rung.level}",
        tests_pass=None,
        metadata={
            "ladder": {
                "level": rung.level,
                "name": LEVELS[rung.level],
                "operators": list(rung.operators),
                "origin_bug": bug.pk,
            }
        },
    )


def _copy_rubrics(bug: Bug, copy: Bug, *, source: str) -> tuple[int, int]:
    """Give ``copy`` the rubrics of ``bug``: (rubrics copied, golden ones brought up to date).
    Both bugs' rubrics come prefetched by ``ladders_build`` (a new copy's are read: none), the
    source's with their draft as ``drafts``."""
    copied = updated = 0
    mine = {rubric.variant: rubric for rubric in copy.rubrics.all()}
    for rubric in bug.rubrics.all():
        drafts = rubric.drafts  # type: ignore[attr-defined]
        draft = drafts[0] if drafts else None
        if draft is None:
            continue
        golden = rubric.golden_revision
        target = mine.get(rubric.variant)
        if target is None:
            target = Rubric.objects.create(
                bug=copy, variant=rubric.variant, status=Rubric.Status.IN_REVIEW, current_number=0
            )
            _copy_revision(draft, target, 0, f"{source} / {bug.key}")
            copied += 1
            if golden is not None and golden.number > 0:
                _make_golden(target, _copy_revision(golden, target, 1, f"{source} / {bug.key}"))
            elif golden is not None:
                _make_golden(target, target.revisions.get(number=0))
        elif golden is not None:
            now = target.golden_revision
            if now is None or (now.text, now.structure) != (golden.text, golden.structure):
                number = target.current_number + 1
                _make_golden(
                    target, _copy_revision(golden, target, number, f"{source} / {bug.key}")
                )
                updated += 1
    return copied, updated


def _copy_revision(
    revision: RubricRevision, target: Rubric, number: int, origin: str
) -> RubricRevision:
    return RubricRevision.objects.create(
        rubric=target,
        number=number,
        structure=revision.structure,
        text=revision.text,
        author=revision.author,
        justification=COPIED_REVISION.format(origin=origin, number=revision.number),
        prompt_version=revision.prompt_version,
    )


def _make_golden(rubric: Rubric, revision: RubricRevision) -> None:
    rubric.golden_revision = revision
    rubric.current_number = revision.number
    rubric.status = Rubric.Status.GOLDEN
    rubric.save(update_fields=["golden_revision", "current_number", "status", "updated_at"])
