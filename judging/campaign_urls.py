"""URLs of the campaign pages (included by judging/urls.py): ``campaigns/`` for leads,
``annotate/`` for annotators."""

from django.urls import URLPattern, path

from . import campaign_views

urlpatterns: list[URLPattern] = [
    path("campaigns/", campaign_views.campaign_list, name="campaign_list"),
    path("campaigns/new/", campaign_views.campaign_new, name="campaign_new"),
    path("campaigns/<int:campaign_id>/", campaign_views.campaign_detail, name="campaign_detail"),
    path(
        "campaigns/<int:campaign_id>/close/", campaign_views.campaign_close, name="campaign_close"
    ),
    path(
        "campaigns/<int:campaign_id>/reopen/",
        campaign_views.campaign_reopen,
        name="campaign_reopen",
    ),
    path("annotate/", campaign_views.annotate_campaigns, name="annotate_campaigns"),
    path("annotate/<int:campaign_id>/", campaign_views.annotate_queue, name="annotate_queue"),
    path(
        "annotate/<int:campaign_id>/<int:position>/",
        campaign_views.annotate,
        name="annotate",
    ),
]
