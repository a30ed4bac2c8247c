"""URLs of the adjudication and calibration pages (included by judging/urls.py)."""

from django.urls import URLPattern, path

from . import calibration_views

urlpatterns: list[URLPattern] = [
    path("adjudication/", calibration_views.adjudication_index, name="adjudication_index"),
    path(
        "adjudication/<slug:slug>/",
        calibration_views.adjudication_queue,
        name="adjudication_queue",
    ),
    path(
        "adjudication/<slug:slug>/patches/<int:patch_id>/",
        calibration_views.adjudication_save,
        name="adjudication_save",
    ),
    path("calibration/", calibration_views.calibration, name="calibration"),
    path("calibration/choose/", calibration_views.calibration_choose, name="calibration_choose"),
    path(
        "calibration/<int:calibration_id>/",
        calibration_views.calibration_detail,
        name="calibration_detail",
    ),
]
