"""What the home page shows of rubrics (``sejury_web.home``): a reviewer's rubrics awaiting
review, awaiting their confirmation, sent back to them, and flagged by the judge's
disagreements; a lead's flagged rubrics and imports in progress (bundle uploads, draft
batches). Each item costs a fixed number of queries, whatever the number of rubrics.

``RubricsConfig.ready()`` registers the sections.
"""

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet
from django.urls import reverse

from rubrics.bundle.uploads import upload_progress
from rubrics.models import BundleUpload, DraftBatch, Rubric
from rubrics.review.disagreements import open_counts
from rubrics.review.selectors import (
    QUEUE_EMPTY_CONFIRM,
    QUEUE_EMPTY_DISAGREED,
    QUEUE_EMPTY_REVIEW,
    QUEUE_EMPTY_SENT_BACK,
    rubrics_awaiting_confirmation_by,
    rubrics_awaiting_review,
    rubrics_sent_back_to,
)
from sejury_web.home import HOME_ROWS, HomeItem, HomeRow, HomeSection, home_section_register
from sejury_web.roles import Role, user_has_role


def _rubric_text(rubric: Rubric) -> str:
    return f"{rubric.bug.dataset.name} › {rubric.bug.key} ({rubric.get_variant_display()})"


def _rubric_rows(queryset: QuerySet[Rubric]) -> tuple[list[HomeRow], int]:
    """The first rows, in the queue's order, and how many there are: two queries."""
    rubrics = queryset.select_related("bug__dataset").order_by(
        "bug__dataset__name", "bug__sort_key", "variant"
    )
    rows = [HomeRow(_rubric_text(r), r.get_absolute_url()) for r in rubrics[:HOME_ROWS]]
    return rows, queryset.count()


def _queue_item(
    key: str, title: str, queryset: QuerySet[Rubric], anchor: str, empty: str
) -> HomeItem:
    rows, count = _rubric_rows(queryset)
    url = f"{reverse('rubrics:review_queue')}#queue-{anchor}"
    return HomeItem(key, title, count, url, "Review queue", empty, tuple(rows))


def flagged_rubrics_item(*, url: str, link_text: str) -> HomeItem:
    """Rubrics whose judge disagreed with the humans' consensus on patches no reviewer has
    answered, the most disagreements first; ``url`` is where the role acts on them all."""
    counts = open_counts()
    first = sorted(counts, key=lambda pk: (-counts[pk], pk))[:HOME_ROWS]
    rubrics = {r.pk: r for r in Rubric.objects.filter(pk__in=first).select_related("bug__dataset")}
    rows = [
        HomeRow(
            _rubric_text(rubrics[pk]),
            rubrics[pk].get_absolute_url(),
            detail=f"{counts[pk]} disagreement{'s' if counts[pk] != 1 else ''} to answer",
        )
        for pk in first
        if pk in rubrics
    ]
    return HomeItem(
        "flagged",
        "Rubrics flagged by the judge's disagreements with humans",
        len(counts),
        url,
        link_text,
        QUEUE_EMPTY_DISAGREED,
        tuple(rows),
        note="The rubric judge's verdict contradicts the humans' consensus: revise the "
        "rubric or uphold it.",
    )


def reviewer_items(user: User) -> list[HomeItem]:
    """A reviewer's, in the review queue's order: what awaits their confirmation, what was
    sent back to them, what the judge's disagreements flagged, and what awaits review."""
    return [
        _queue_item(
            "confirm",
            "Rubrics awaiting your confirmation",
            rubrics_awaiting_confirmation_by(user),
            "confirm",
            QUEUE_EMPTY_CONFIRM,
        ),
        _queue_item(
            "sent-back",
            "Rubrics sent back to you",
            rubrics_sent_back_to(user),
            "sent-back",
            QUEUE_EMPTY_SENT_BACK,
        ),
        flagged_rubrics_item(
            url=f"{reverse('rubrics:review_queue')}#queue-disagreed", link_text="Review queue"
        ),
        _queue_item(
            "review",
            "Rubrics awaiting review",
            rubrics_awaiting_review(),
            "review",
            QUEUE_EMPTY_REVIEW,
        ),
    ]


def _uploads_item() -> HomeItem:
    running = BundleUpload.objects.filter(
        status__in=[BundleUpload.Status.QUEUED, BundleUpload.Status.RUNNING]
    )
    shown = list(running.order_by("-created_at", "-id")[:HOME_ROWS])
    rows = []
    for upload in shown:
        progress = upload_progress(upload)  # a file beside the upload, no query
        rows.append(
            HomeRow(
                f"{upload.dataset_name} ({upload.filename or 'bundle'})",
                upload.get_absolute_url(),
                detail=upload.get_status_display(),
                percent=progress.percent,
            )
        )
    return HomeItem(
        "uploads",
        "Bundle imports in progress",
        running.count(),
        reverse("rubrics:bundle_upload"),
        "Import",
        "No bundle import is in progress.",
        tuple(rows),
    )


def _draft_batches_item() -> HomeItem:
    drafting = Q(rubrics__status=Rubric.Status.DRAFTING)
    batches = (
        DraftBatch.objects.annotate(
            total=Count("rubrics"), drafting=Count("rubrics", filter=drafting)
        )
        .filter(drafting__gt=0)
        .select_related("dataset")
        .order_by("-created_at", "-id")
    )
    shown = list(batches[:HOME_ROWS])
    rows = [
        HomeRow(
            f"{batch.dataset.name}: {batch.get_variant_display()} drafts",
            reverse("rubrics:draft_batch", args=[batch.dataset.slug, batch.pk]),
            detail=f"{batch.total - batch.drafting} of {batch.total} written",
            percent=round(100 * (batch.total - batch.drafting) / batch.total),
        )
        for batch in shown
    ]
    return HomeItem(
        "drafts",
        "Rubric drafts in progress",
        batches.count(),
        reverse("rubrics:dataset_list"),
        "Datasets",
        "No rubric draft batch is in progress.",
        tuple(rows),
    )


def lead_items(user: User) -> list[HomeItem]:
    """A lead's: flagged rubrics (the review queue is the reviewers': a lead opens each
    rubric from its dataset) and imports in progress."""
    if user_has_role(user, Role.REVIEWER):
        url, link_text = f"{reverse('rubrics:review_queue')}#queue-disagreed", "Review queue"
    else:
        url, link_text = reverse("rubrics:dataset_list"), "Datasets"
    flagged = flagged_rubrics_item(url=url, link_text=link_text)
    return [flagged, _uploads_item(), _draft_batches_item()]


def home_sections_register() -> None:
    home_section_register(HomeSection(Role.REVIEWER, "rubrics", reviewer_items, order=10))
    home_section_register(HomeSection(Role.LEAD, "rubrics", lead_items, order=50))
