"""URLs of the quality-ladder pages (REFINE)."""

from django.urls import URLPattern, path

from judging.refine import views

urlpatterns: list[URLPattern] = [
    path("refine/", views.refine_index, name="refine_index"),
    path("refine/build/<slug:slug>/", views.refine_build, name="refine_build"),
    path("refine/<slug:slug>/", views.refine_detail, name="refine_detail"),
    path("refine/<slug:slug>/test/", views.refine_test, name="refine_test"),
]
