from django.urls import path

from rubrics import views
from rubrics import views as report_views
from rubrics.review import views as draft_views
from rubrics.review import views as review_views

app_name = "rubrics"

RUBRIC = "datasets/<slug:slug>/bugs/<str:bug_key>/rubric/<str:variant>/"

urlpatterns = [
    path("datasets/", views.dataset_list, name="dataset_list"),
    path("datasets/import/", views.bundle_upload, name="bundle_upload"),
    path("datasets/import/swebench/", views.swebench_upload, name="swebench_upload"),
    path(
        "datasets/import/<id:upload_id>/", views.bundle_upload_status, name="bundle_upload_status"
    ),
    path("datasets/<slug:slug>/", views.dataset_detail, name="dataset_detail"),
    path("diffs/more/", views.diff_more, name="diff_more"),
    path("datasets/<slug:slug>/export.jsonl", views.dataset_export, name="dataset_export"),
    path("datasets/<slug:slug>/bugs/<str:bug_key>/", views.bug_detail, name="bug_detail"),
    path("datasets/<slug:slug>/patches/<str:patch_key>/", views.patch_detail, name="patch_detail"),
    path("datasets/<slug:slug>/rubric-report/", report_views.rubric_report, name="rubric_report"),
    path(
        "datasets/<slug:slug>/rubrics/draft/",
        draft_views.rubric_draft_dataset,
        name="rubric_draft_dataset",
    ),
    path(
        "datasets/<slug:slug>/rubrics/drafts/<id:batch_id>/",
        draft_views.draft_batch,
        name="draft_batch",
    ),
    path(
        "datasets/<slug:slug>/bugs/<str:bug_key>/rubric/<str:variant>/draft/",
        draft_views.rubric_draft_bug,
        name="rubric_draft_bug",
    ),
    path(RUBRIC, review_views.rubric_edit, name="rubric_edit"),
    path(f"{RUBRIC}editor/", review_views.rubric_editor, name="rubric_editor"),
    path(f"{RUBRIC}preview/", review_views.rubric_preview, name="rubric_preview"),
    path(f"{RUBRIC}save/", review_views.rubric_save, name="rubric_save"),
    path(f"{RUBRIC}submit/", review_views.rubric_act, {"action": "submit"}, name="rubric_submit"),
    path(
        f"{RUBRIC}confirm/", review_views.rubric_act, {"action": "confirm"}, name="rubric_confirm"
    ),
    path(
        f"{RUBRIC}send-back/",
        review_views.rubric_act,
        {"action": "send_back"},
        name="rubric_send_back",
    ),
    path(f"{RUBRIC}suggest/", review_views.rubric_suggest, name="rubric_suggest"),
    path(f"{RUBRIC}uphold/", review_views.rubric_uphold_view, name="rubric_uphold"),
    path("rubrics/queue/", review_views.review_queue, name="review_queue"),
]
