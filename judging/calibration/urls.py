"""URLs of the calibration pages: pick a campaign and a run, rank the teams, keep one."""

from django.urls import URLPattern, path

from judging.calibration import views

urlpatterns: list[URLPattern] = [
    path("calibration/", views.calibration, name="calibration"),
    path("calibration/choose/", views.calibration_choose, name="calibration_choose"),
    path("calibration/<id:calibration_id>/", views.calibration_detail, name="calibration_detail"),
]
