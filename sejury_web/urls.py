from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    # Login, logout and password change only: no self-service reset by e-mail.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password_change/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("users/", views.user_list, name="user_list"),
    path("users/<id:user_id>/roles/", views.user_roles_update, name="user_roles_update"),
    path("users/roles/", views.user_roles_bulk, name="user_roles_bulk"),
    path("users/<id:user_id>/password/", views.user_password_set, name="user_password_set"),
    path("", include("rubrics.urls")),
    path("", include("judging.urls")),
    path("api/", include("api.urls")),
    path("admin/", admin.site.urls),
]

handler400 = "sejury_web.views.bad_request"
handler403 = "sejury_web.views.forbidden"
handler404 = "sejury_web.views.not_found"
