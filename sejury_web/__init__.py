"""SE-Jury web: trustworthy LLM judges of code patches, with humans in the loop."""

from .celery import app as celery_app

__all__ = ("celery_app",)
