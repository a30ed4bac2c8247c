"""URLs of judging runs and their verdicts (leads), and the rubric editor's judge preview."""

from django.urls import URLPattern, path

from judging.runs import views

urlpatterns: list[URLPattern] = [
    path("runs/", views.run_list, name="run_list"),
    path("runs/new/", views.run_new, name="run_new"),
    path("runs/compare/", views.run_compare, name="run_compare"),
    path("runs/<id:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<id:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<id:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<id:run_id>/resume/", views.run_resume, name="run_resume"),
    path("runs/<id:run_id>/batch/leave/", views.run_batch_leave, name="run_batch_leave"),
    path("runs/<id:run_id>/route/", views.run_route, name="run_route"),
    path("runs/<id:run_id>/rejudge-stale/", views.run_rejudge_stale, name="run_rejudge_stale"),
    path(
        "runs/<id:run_id>/rejection-themes/",
        views.run_rejection_themes,
        name="run_rejection_themes",
    ),
    path(
        "runs/<id:run_id>/verdicts/<id:judgment_id>/",
        views.verdict_detail,
        name="verdict_detail",
    ),
    path("rubrics/<id:rubric_id>/judge-preview/", views.rubric_preview, name="rubric_preview"),
]
