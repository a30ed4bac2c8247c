from django.urls import path

from . import views

app_name = "rubrics"

urlpatterns = [
    path("datasets/", views.dataset_list, name="dataset_list"),
    path("datasets/import/", views.bundle_upload, name="bundle_upload"),
    path("datasets/<slug:slug>/", views.dataset_detail, name="dataset_detail"),
    path("datasets/<slug:slug>/export.jsonl", views.dataset_export, name="dataset_export"),
    path("datasets/<slug:slug>/bugs/<str:bug_key>/", views.bug_detail, name="bug_detail"),
    path("datasets/<slug:slug>/patches/<str:patch_key>/", views.patch_detail, name="patch_detail"),
]
