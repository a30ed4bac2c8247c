"""The request and answer schemas of ``/api/v1/`` (django-ninja): their names and fields are
those of the OpenAPI document's ``components``, which pipelines may have generated code from."""

from typing import Literal

from ninja import Field, Schema


class LineError(Schema):
    line: int | None = Field(description="The bundle's line, from 1; null: not of one line")
    field: str | None = Field(
        description="The field (dotted, `patches.0` in a body; `file` for a missing file "
        "part); null: the line or request as a whole"
    )
    message: str


class Error(Schema):
    """Every error's body: what went wrong and, for an invalid request, each field's error."""

    detail: str
    errors: list[LineError] | None = Field(
        None, description="Each invalid field of the request (422), when there are some"
    )


class BundleErrors(Error):
    """A bundle refused (422): every error's line and field, nothing imported."""

    errors: list[LineError]
    more: int = Field(0, description="Errors past those listed (the list is capped)")


class DatasetOut(Schema):
    name: str
    slug: str
    bugs: int
    patches: int
    url: str
    report: str


class KindCountsOut(Schema):
    created: int
    updated: int
    unchanged: int


class BundleImported(Schema):
    dataset: str
    slug: str
    dataset_created: bool
    unchanged: bool
    counts: dict[str, KindCountsOut]
    notes: list[str]
    import_id: int | None


class UploadOut(Schema):
    id: int
    status: str
    dataset: str
    size: int
    phase: str
    percent: int
    status_url: str
    errors: list[LineError]
    more_errors: int
    import_id: int | None
    counts: dict[str, KindCountsOut] | None


class RunIn(Schema):
    dataset: str
    team: str | list[str]
    context: str
    provider: str = ""
    model: str = ""
    reasoning: str = Field(
        "",
        max_length=16,
        description="How hard a reasoning model thinks: an effort word its family takes "
        "(`minimal`, `low`, `medium`, `high` …) or, for Gemini, a thinking budget in tokens "
        "(`2048`); empty for the model's default. A setting the model does not take is "
        "refused with 422, saying what it takes.",
    )
    threshold: float = 50.0
    reducer: str = Field(
        "mean",
        description="How the members' scores become the team's: `mean` (the default), `median`, "
        "`majority` (of the members' verdicts; a tie is INVALID) or `min`.",
    )
    patches: list[str] | None = None
    only_ready: bool = False
    name: str = ""
    webhook: str = Field(
        "",
        description="An http or https URL called once with a signed POST when the run ends "
        "(`run.finished`, or `run.cancelled`); see the documentation's *Webhooks* page.",
    )
    batch: bool = Field(
        False,
        description="Judge through the provider's batch API: half the price, each round of "
        "calls answered within 24 hours (see the documentation's *Batch mode* page). A server "
        "without a batch API is refused with 422 before anything is sent.",
    )


class Counts(Schema):
    total: int
    done: int
    failed: int
    pending: int
    valid: int
    invalid: int


class Spend(Schema):
    provider_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    wall_s: float | None


class WebhookOut(Schema):
    url: str
    status: str = Field(
        description="`waiting` (the run has not ended), `pending`, `retrying`, `delivered` "
        "or `failed`"
    )
    event: str | None
    delivery_id: str | None
    attempts: int
    max_attempts: int
    last_status_code: int | None
    last_error: str
    delivered_at: str | None
    next_attempt_at: str | None


class ForecastRow(Schema):
    strategy: str = Field(description="The strategy's name; `total` for the total row")
    label: str
    uses_llm: bool
    calls: int = Field(description="Calls sent to the provider (bug-level steps once per bug)")
    cached_calls: int = Field(
        description="Calls the log has answered before, with an identical request: free"
    )
    bug_calls: int = Field(description="Of the calls, those of a bug-level step (s4, s5)")
    input_tokens: int
    output_tokens: int = Field(description="Expected output tokens")
    cost_usd: float | None = Field(description="At the ordinary price; null: unknown price")
    batch_cost_usd: float | None = Field(description="At the batch price; null: unknown price")


class ExpectedOutput(Schema):
    tokens: float
    measured_calls: int = Field(
        description="This model's past calls of the purpose the mean is of; 0: a default"
    )


class ForecastOut(Schema):
    version: int
    provider: str
    model: str
    offline: bool = Field(description="The offline heuristic: not an LLM, $0")
    priced: bool = Field(description="The price table knows the model")
    price_note: str
    patches: int
    bugs: int
    strategies: list[ForecastRow]
    total: ForecastRow
    chars_per_token: float
    chars_per_token_measured_calls: int = Field(
        description="This model's past calls the ratio was measured on; 0: the default"
    )
    expected_output_tokens: dict[str, ExpectedOutput] = Field(
        description="Expected output tokens of one call, by purpose"
    )
    batch_wait: str
    notes: list[str] = Field(description="How the forecast was counted, and what it leaves out")
    seconds: float = Field(description="How long the forecast took")


class RunOut(Schema):
    id: int
    name: str
    dataset: str
    status: str
    team: list[str]
    context: str
    provider: str
    model: str
    reasoning: str = Field(description="The reasoning setting; empty: the model's default.")
    offline: bool
    threshold: float
    reducer: str
    batch: bool
    created_at: str
    started_at: str | None
    finished_at: str | None
    counts: Counts
    spend: Spend
    url: str
    verdicts: str
    page: str
    webhook: WebhookOut | None
    forecast: ForecastOut | None = Field(
        description="The forecast kept when the run was created; null for older runs"
    )


class PreflightOut(Schema):
    total: int
    ready: int
    missing: int
    lacks: list[str] = Field(description="What the missing patches lack, one sentence each")
    forecast: ForecastOut = Field(
        description="What a run of the ready patches would cost, before anything is sent"
    )


class NotReady(Error):
    """A run refused (422): why, with the pre-flight's counts (all 0 when the request was
    refused before one: an invalid body, unknown patches, settings the team cannot take)."""

    total: int
    ready: int
    missing: int


class RunPage(Schema):
    results: list[RunOut]
    next: str | None = Field(
        description="The next page's URL (the same filters and limit), to follow as it is; "
        "null on the last page"
    )
    next_cursor: int | None = Field(
        description="The next page's `cursor`, for a client that passes the parameters "
        "itself; null on the last page"
    )


class VerdictRecord(Schema):
    """A patch's verdict in a run: the fields of ``export_verdicts``."""

    run: int
    dataset: str
    patch: str = Field(description="The patch's key")
    bug: str = Field(description="Its bug's key")
    status: Literal["pending", "done", "failed"]
    score: float | None = Field(description="The team's score on the run's scale")
    verdict: Literal["VALID", "INVALID"] | None
    spread: float | None = Field(description="How far apart the members' scores are")
    scores: dict[str, float | None] = Field(description="Each member's score, in team order")
    rubric_verdict: Literal["VALID", "INVALID"] | None = Field(
        None, description="The rubric judge's own label: only when it is in the team"
    )
    final_label: Literal["VALID", "INVALID"] | None = Field(
        None,
        description="With `final`: the human consensus where there is one, else the verdict",
    )
    final_from: Literal["consensus", "judge"] | None = Field(
        None, description="With `final`: where `final_label` comes from"
    )
    provider: str
    model: str
    context: str
    threshold: float
    scale_lo: float
    scale_hi: float
    reducer: str
    error: str = Field(description="Why the patch failed; empty otherwise")
    offline: bool = Field(description="Judged by the offline heuristic: not an LLM")
    note: str = Field(description="The offline heuristic's label when `offline`, else empty")


class VerdictPage(Schema):
    results: list[VerdictRecord]
    next: str | None = Field(
        description="The next page's URL (the same `limit` and `final`), to follow as it is; "
        "null on the last page"
    )
    next_cursor: int | None = Field(
        description="The next page's `cursor`, for a client that passes the parameters "
        "itself; null on the last page"
    )
