from django.apps import AppConfig


class LLMConfig(AppConfig):
    name = "sejury_web.llm"
    label = "llm"
    verbose_name = "LLM calls"
