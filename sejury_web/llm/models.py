from django.db import models


class LLMCall(models.Model):
    """One call to a model, successful or not; also the cache of answers.

    A row is written once, when the call ends, in a single short statement: concurrent
    workers on SQLite never hold the write lock while a provider thinks.
    """

    class Status(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"
        PARSE_FAILURE = "parse_failure", "parse failure"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    purpose = models.CharField(max_length=64, db_index=True)
    provider = models.CharField(max_length=16)
    model = models.CharField(max_length=128)
    base_url = models.CharField(max_length=300, blank=True)
    request_hash = models.CharField(max_length=64, db_index=True)
    # temperature, max_output_tokens and the structured-output mode the server accepted
    settings = models.JSONField(default=dict)
    messages = models.JSONField(default=list)  # the prompt, as the caller wrote it
    schema = models.JSONField(default=dict)
    inputs = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices)
    raw_text = models.TextField(blank=True)  # the last answer's text, verbatim
    answer = models.JSONField(null=True, blank=True)  # parsed and valid; null on failure
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    # One entry per attempt that did not produce the answer: what went wrong, how long we waited.
    attempt_log = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    latency_s = models.FloatField(default=0.0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)

    class Meta:
        verbose_name = "LLM call"
        indexes = [models.Index(fields=["request_hash", "status"], name="llm_call_cache")]

    def __str__(self) -> str:
        return f"{self.purpose} via {self.provider}/{self.model} ({self.status})"

    @property
    def author(self) -> str:
        """How records made from this call name their author: ``llm:<provider>/<model>``."""
        return f"llm:{self.provider}/{self.model}"
