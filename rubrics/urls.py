from django.urls import path

from . import draft_views, report_views, views

app_name = "rubrics"

urlpatterns = [
    path("datasets/", views.dataset_list, name="dataset_list"),
    path("datasets/import/", views.bundle_upload, name="bundle_upload"),
    path("datasets/<slug:slug>/", views.dataset_detail, name="dataset_detail"),
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
        "datasets/<slug:slug>/rubrics/drafts/<int:batch_id>/",
        draft_views.draft_batch,
        name="draft_batch",
    ),
    path(
        "datasets/<slug:slug>/bugs/<str:bug_key>/rubric/<str:variant>/draft/",
        draft_views.rubric_draft_bug,
        name="rubric_draft_bug",
    ),
]
