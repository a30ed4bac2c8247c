from django.urls import path

from . import views

app_name = "judging"

urlpatterns = [
    path("labels/mine/", views.my_labels, name="my_labels"),
]
