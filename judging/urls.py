from django.urls import path

from . import calibration_urls, campaign_urls, preview_views, report_urls, run_views, views

app_name = "judging"

urlpatterns = [
    path("labels/mine/", views.my_labels, name="my_labels"),
    path("runs/", run_views.run_list, name="run_list"),
    path("runs/new/", run_views.run_new, name="run_new"),
    path("runs/compare/", run_views.run_compare, name="run_compare"),
    path("runs/<int:run_id>/", run_views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/progress/", run_views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel/", run_views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/resume/", run_views.run_resume, name="run_resume"),
    path(
        "runs/<int:run_id>/verdicts/<int:judgment_id>/",
        run_views.verdict_detail,
        name="verdict_detail",
    ),
    path(
        "rubrics/<int:rubric_id>/judge-preview/",
        preview_views.rubric_preview,
        name="rubric_preview",
    ),
]
urlpatterns += campaign_urls.urlpatterns + calibration_urls.urlpatterns + report_urls.urlpatterns
