"""URLs of *Test this judge* and *Mark trusted* (a judge's page, leads)."""

from django.urls import URLPattern, path

from judging.judges import trust_views

urlpatterns: list[URLPattern] = [
    path(
        "judges/<slug:judge_name>/<id:number>/test/",
        trust_views.judge_test_card,
        name="judge_test_card",
    ),
    path(
        "judges/<slug:judge_name>/<id:number>/test/start/",
        trust_views.judge_test_begin,
        name="judge_test_start",
    ),
    path(
        "judges/<slug:judge_name>/<id:number>/trust/",
        trust_views.judge_trust,
        name="judge_trust",
    ),
]
