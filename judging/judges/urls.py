"""URLs of the Judges pages (written judges, leads)."""

from django.urls import URLPattern, path

from judging.judges import views

urlpatterns: list[URLPattern] = [
    path("judges/", views.judge_list, name="judge_list"),
    path("judges/new/", views.judge_new, name="judge_new"),
    path("judges/<slug:judge_name>/", views.judge_detail, name="judge_detail"),
    path("judges/<slug:judge_name>/edit/", views.judge_edit, name="judge_edit"),
    path(
        "judges/<slug:judge_name>/<id:number>/preview/",
        views.judge_preview,
        name="judge_preview",
    ),
]
