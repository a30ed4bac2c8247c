from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SejuryWebConfig(AppConfig):
    name = "sejury_web"
    verbose_name = "SE-Jury web"

    def ready(self) -> None:
        from celery.signals import worker_ready
        from django.urls import register_converter

        from .durable import jobs_resume_unfinished
        from .ids import IdConverter
        from .roles import roles_sync

        # ``<id:…>``, every URL's row id: registered before any URLconf is read.
        register_converter(IdConverter, "id")

        # A starting worker finishes what a killed one left, every kind the apps registered.
        worker_ready.connect(jobs_resume_unfinished, weak=False, dispatch_uid="sejury_web.resume")

        # Without a sender filter: the groups need the permissions of every app, not only
        # this one's; roles_sync acts on the last app's signal, once all exist.
        post_migrate.connect(roles_sync, dispatch_uid="sejury_web.roles_sync")
