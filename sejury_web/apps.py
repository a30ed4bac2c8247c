from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SejuryWebConfig(AppConfig):
    name = "sejury_web"
    verbose_name = "SE-Jury web"

    def ready(self) -> None:
        from .roles import roles_sync

        # Without a sender filter: the groups need the permissions of every app, not only
        # this one's. roles_sync is idempotent and cheap.
        post_migrate.connect(roles_sync, dispatch_uid="sejury_web.roles_sync")
