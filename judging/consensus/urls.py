"""URLs of the lead's adjudication queue."""

from django.urls import URLPattern, path

from judging.consensus import views

urlpatterns: list[URLPattern] = [
    path("adjudication/", views.adjudication_index, name="adjudication_index"),
    path("adjudication/<slug:slug>/", views.adjudication_queue, name="adjudication_queue"),
    path("adjudication/<slug:slug>/rule/", views.consensus_rule_set, name="consensus_rule_set"),
    path(
        "adjudication/<slug:slug>/patches/<id:patch_id>/",
        views.adjudication_save,
        name="adjudication_save",
    ),
]
