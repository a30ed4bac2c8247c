"""URLs of the report pages (included by judging/urls.py)."""

from django.urls import URLPattern, path

from . import report_views

urlpatterns: list[URLPattern] = [
    path("reports/", report_views.report_index, name="report_index"),
    path("reports/<slug:slug>/", report_views.report, name="report"),
]
