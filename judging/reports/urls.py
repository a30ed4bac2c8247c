"""URLs of the report pages ."""

from django.urls import URLPattern, path

from judging.reports import views

urlpatterns: list[URLPattern] = [
    path("reports/", views.report_index, name="report_index"),
    path("reports/<slug:slug>/", views.report, name="report"),
]
