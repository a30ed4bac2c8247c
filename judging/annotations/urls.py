"""URLs of annotation: ``campaigns/`` and ``labelstudio/`` for leads; ``annotate/`` and
``labels/mine/`` for annotators."""

from django.urls import URLPattern, path

from judging.annotations import views

urlpatterns: list[URLPattern] = [
    path("labels/mine/", views.my_labels, name="my_labels"),
    path("campaigns/", views.campaign_list, name="campaign_list"),
    path("campaigns/new/", views.campaign_new, name="campaign_new"),
    path("campaigns/<id:campaign_id>/", views.campaign_detail, name="campaign_detail"),
    path("campaigns/<id:campaign_id>/close/", views.campaign_close, name="campaign_close"),
    path(
        "campaigns/<id:campaign_id>/reopen/",
        views.campaign_reopen,
        name="campaign_reopen",
    ),
    path(
        "campaigns/<id:campaign_id>/labelstudio/",
        views.campaign_labelstudio,
        name="campaign_labelstudio",
    ),
    path(
        "campaigns/<id:campaign_id>/labelstudio/tasks.json",
        views.campaign_labelstudio_tasks,
        name="campaign_labelstudio_tasks",
    ),
    path(
        "campaigns/<id:campaign_id>/labelstudio/config.xml",
        views.campaign_labelstudio_config,
        name="campaign_labelstudio_config",
    ),
    path("labelstudio/<slug:slug>/", views.dataset_labelstudio, name="dataset_labelstudio"),
    path(
        "labelstudio/<slug:slug>/tasks.json",
        views.dataset_labelstudio_tasks,
        name="dataset_labelstudio_tasks",
    ),
    path(
        "labelstudio/<slug:slug>/config.xml",
        views.dataset_labelstudio_config,
        name="dataset_labelstudio_config",
    ),
    path("annotate/", views.annotate_campaigns, name="annotate_campaigns"),
    path("annotate/<id:campaign_id>/", views.annotate_queue, name="annotate_queue"),
    path("annotate/<id:campaign_id>/undo/", views.annotate_undo, name="annotate_undo"),
    path(
        "annotate/<id:campaign_id>/<id:position>/",
        views.annotate,
        name="annotate",
    ),
]
