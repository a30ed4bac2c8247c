from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("users/", views.user_list, name="user_list"),
    path("users/<int:user_id>/roles/", views.user_roles_update, name="user_roles_update"),
    path("", include("rubrics.urls")),
    path("", include("judging.urls")),
    path("admin/", admin.site.urls),
]
