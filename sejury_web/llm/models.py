import uuid

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


class LLMBatch(models.Model):
    """One job of a provider's batch API: requests sent together, answered within 24 hours
    at half the price (``sejury_web.llm.batch``).

    ``owner`` names who asked (``judging.run:42``): the layer knows no run. The row is written,
    with its requests, before the provider hears of it, and ``tag`` goes with the job to the
    provider (OpenAI's ``metadata``, Gemini's display name), so a worker killed at any point
    finds the job again instead of submitting it twice.
    """

    class Status(models.TextChoices):
        SUBMITTING = "submitting", "Submitting"  # written; the provider may not have it yet
        SUBMITTED = "submitted", "Submitted"  # the provider validates or answers it
        ENDED = "ended", "Ended"  # the provider is done with it; results being stored
        STORED = "stored", "Stored"  # every request's result is stored

    owner = models.CharField(max_length=64, db_index=True)
    round = models.PositiveIntegerField()
    part = models.PositiveIntegerField(default=0)  # a round over the limits has several jobs
    provider = models.CharField(max_length=16)
    model = models.CharField(max_length=128)
    base_url = models.CharField(max_length=300, blank=True)
    tag = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SUBMITTING)
    # What the provider calls the job, its input file, and its state in its own words
    # ("validating", "in_progress", "JOB_STATE_RUNNING"…).
    provider_batch_id = models.CharField(max_length=200, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    provider_status = models.CharField(max_length=40, blank=True)
    request_count = models.PositiveIntegerField(default=0)
    completed_count = models.PositiveIntegerField(default=0)  # as the provider counts them
    failed_count = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)  # why the provider failed the whole job, if it did
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    last_polled_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    stored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "LLM batch"
        ordering = ["owner", "round", "id"]
        constraints = [
            # Two drivers of one owner (a message delivered twice) cannot both send a round.
            models.UniqueConstraint(fields=["owner", "round", "part"], name="one_batch_per_part")
        ]

    def __str__(self) -> str:
        return f"{self.owner} round {self.round}: {self.provider} batch {self.pk} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status != self.Status.STORED


class LLMBatchRequest(models.Model):
    """One request of a batch, from the line sent to the ``LLMCall`` its result became.

    A request asked again (a correction after an answer that did not match the schema, a
    retry after an error line or an expired batch) is a new row in a later round, carrying
    the earlier tries' attempts, tokens and cost, so that the one ``LLMCall`` it ends in adds
    them up as a synchronous call's row does.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"  # sent; no result yet
        DONE = "done", "Done"  # its LLMCall holds the answer
        CORRECT = "correct", "Correct"  # unparsed answer: asked again with the correction
        RETRY = "retry", "Retry"  # error line, expired or cancelled: asked again
        FAILED = "failed", "Failed"  # its LLMCall holds the failure

    owner = models.CharField(max_length=64)
    batch = models.ForeignKey(
        LLMBatch, null=True, blank=True, on_delete=models.CASCADE, related_name="requests"
    )  # None: refused before any batch (too large for the provider)
    request_hash = models.CharField(max_length=64)
    request = models.JSONField()  # the LLMRequest, to write its LLMCall like complete() does
    conversation = models.JSONField()  # the messages this try sends (a correction appended)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    call = models.ForeignKey(
        LLMCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Added up over this request's tries, this one included once its result is in.
    tries = models.PositiveSmallIntegerField(default=1)
    attempts = models.PositiveSmallIntegerField(default=0)
    failures = models.PositiveSmallIntegerField(default=0)  # error lines, expiries
    attempt_log = models.JSONField(default=list, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    raw_text = models.TextField(blank=True)
    output_mode = models.CharField(max_length=16, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "LLM batch request"
        indexes = [models.Index(fields=["owner", "request_hash"], name="llm_batch_request_owner")]

    def __str__(self) -> str:
        return f"{self.owner}: {self.request_hash[:12]} try {self.tries} ({self.status})"

    @property
    def custom_id(self) -> str:
        """The line's id at the provider, by which its result comes back."""
        return f"req-{self.pk}"
