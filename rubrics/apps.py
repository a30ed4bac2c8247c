from django.apps import AppConfig


class RubricsConfig(AppConfig):
    name = "rubrics"
    verbose_name = "Datasets, bugs, patches and rubrics"

    def ready(self) -> None:
        from . import bundle

        bundle.register_core_kinds()
