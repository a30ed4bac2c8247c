"""The request and answer schemas of ``/api/v1/`` (django-ninja): their names and fields are
those of the OpenAPI document's ``components``, which pipelines may have generated code from."""

from typing import Annotated, Literal

from ninja import Field, Schema

# Text a client sends holds anything but a NUL, which nothing could store (``sejury_web.nul``):
# a pattern, so that the document says it (``api.endpoints`` words the refusal).
NO_NUL = "^[^\\x00]*$"
Text = Annotated[str, Field(pattern=NO_NUL)]


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
    grantable: list[str] = Field(
        default_factory=list,
        description="Existing users without any role whom the labels name as annotators, each"
        " with one error: `grant_annotator_role=true` gives them the annotator role",
    )


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
    last_progress_at: str | None = Field(
        default=None, description="When the import last moved (its progress, else its start)"
    )


class RunIn(Schema):
    dataset: Text
    team: Text | list[Text]
    context: Text
    provider: Text = ""
    model: Text = ""
    reasoning: Text = Field(
        "",
        max_length=16,
        description="How hard a reasoning model thinks: an effort word its family takes "
        "(`minimal`, `low`, `medium`, `high` …) or, for Gemini, a thinking budget in tokens "
        "(`2048`); empty for the model's default. A setting the model does not take is "
        "refused with 422, saying what it takes.",
    )
    threshold: float = 50.0
    reducer: Text = Field(
        "mean",
        description="How the members' scores become the team's: `mean` (the default), `median`, "
        "`majority` (of the members' verdicts; a tie is INVALID) or `min`.",
    )
    patches: list[Text] | None = None
    only_ready: bool = False
    name: Text = ""
    webhook: Text = Field(
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


RunStatus = Literal["queued", "running", "finished", "cancelled"]


class RunOut(Schema):
    id: int
    name: str
    dataset: str
    status: RunStatus
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
    last_progress_at: str | None = Field(
        default=None,
        description="When the run last moved (a result stored, a patch finished), else its "
        "start: a running run whose last progress is minutes old has no worker",
    )
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


class DimensionRatingOut(Schema):
    """A written judge's rating of one dimension of a patch, on the dimension's scale."""

    rating: int | None = Field(description="The rating, on the dimension's own scale")
    reason: str = Field(description="The judge's reason for it")


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
    dimensions: dict[str, dict[str, DimensionRatingOut]] | None = Field(
        None,
        description="Each written member of the `dimensions` kind that answered (`name@N`): "
        "each dimension's rating and reason, by dimension name; only when one answered",
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


# -- the agreement report (judging.reports.export.report_dict) ------------------------------


class FigureOut(Schema):
    """A number of the report: its value (null when undefined), bootstrap interval, the
    patches it rests on, and whether they are too few to trust it."""

    value: float | None
    ci_lo: float | None
    ci_hi: float | None
    n: int
    small_sample: bool


class ReportDataset(Schema):
    name: str
    slug: str


class ReportCampaign(Schema):
    id: int
    name: str


class ReportIntervals(Schema):
    method: str
    level: float
    resamples: int
    seed: int
    small_sample_below: int


class ReportConsensus(Schema):
    rule: str
    description: str
    adjudicated_always_wins: bool
    unanimous_only: bool


class ReportCalibration(Schema):
    id: int
    campaign: str
    team: list[str]
    patches_left_out: int


class ReportRun(Schema):
    id: int
    name: str
    team: list[str]
    context: str
    provider: str
    model: str
    status: RunStatus
    offline: bool = Field(description="The offline heuristic's run: not an LLM")
    note: str = Field(description="The offline heuristic's label when `offline`, else empty")
    chosen_by_default: bool
    calibration: ReportCalibration | None


class AnnotatorRow(Schema):
    annotator: str
    labels: int
    unsure: int
    kappa_vs_consensus: FigureOut
    weight: float | None


class HumanColumn(Schema):
    bugs: FigureOut
    patches: FigureOut
    unanimous: FigureOut
    alpha: FigureOut
    fleiss: FigureOut
    ac1: FigureOut
    weighted_kappa: FigureOut
    consensus_valid: FigureOut
    consensus_invalid: FigureOut
    awaiting: FigureOut
    unanimous_count: int
    fleiss_labels_per_patch: int | None
    labels: dict[str, float | None]
    annotators: list[AnnotatorRow]


class AnnotatorPair(Schema):
    a: str
    b: str
    kappa: FigureOut


class PairsOut(Schema):
    pairs: list[AnnotatorPair]
    mean: FigureOut
    median: float | None
    mean_ac1: FigureOut


class ReportHumans(Schema):
    annotators: list[str]
    columns: dict[str, HumanColumn]
    pairs: PairsOut
    pairwise_mean_kappa: dict[str, FigureOut]


class BenchmarkOut(Schema):
    n: int
    accuracy: FigureOut
    kappa: FigureOut
    ac1: FigureOut
    mcc: FigureOut
    precision: FigureOut
    recall: FigureOut
    f1: FigureOut
    npv: FigureOut
    confusion: dict[str, int] = Field(description="tp, fp, fn, tn (VALID is positive)")
    prevalence_valid: FigureOut
    baselines: dict[str, dict[str, float | None]] = Field(
        description="Each baseline's expected metrics, by name"
    )


class ReliabilityBinOut(Schema):
    score_lo: float
    score_hi: float
    patches: int
    mean_score: float | None
    valid_share: FigureOut


class JudgeOut(Schema):
    run: int
    patches_with_consensus: int
    calibration_patches_left_out: int
    without_verdict: dict[str, int]
    benchmarks: dict[str, BenchmarkOut]
    reliability_b_full: list[ReliabilityBinOut]
    reliability_scores_off_scale: int


class RoutingAtRandom(Schema):
    accuracy: float | None
    kappa: float | None


class RoutingPointOut(Schema):
    share: float
    routed: int
    accuracy: FigureOut
    kappa: FigureOut
    random: RoutingAtRandom


class RoutingOut(Schema):
    run: int
    order: str
    patches: int
    kappa_target: float
    share_reaching_target: float | None
    share_reaching_target_at_random: float | None
    points: list[RoutingPointOut]


class ValidityFrom(Schema):
    consensus: int
    run: int
    unknown: int


class ValidAtKRow(Schema):
    source: str
    k: int
    bugs: int
    candidates: int
    passing: int
    tests_unknown: int
    pass_at_k: FigureOut
    valid_at_k: FigureOut
    validity_from: ValidityFrom


class ValidAtKOut(Schema):
    validity: str
    run: int | None
    interval: str
    rows: list[ValidAtKRow]


class CorrectedFigure(FigureOut):
    clipped_to: str | None = Field(
        description='"0" or "1" when the corrected share fell outside [0, 1] and was clipped'
    )


class CorrectedValidRateRow(Schema):
    source: str
    n_judged: int = Field(description="Test-passing candidates of the source with a verdict")
    judged: FigureOut = Field(description="The share of them the run calls VALID")
    corrected: CorrectedFigure = Field(description="Rogan–Gladen, clipped to [0, 1]")
    sensitivity: FigureOut
    specificity: FigureOut
    youden_j: FigureOut = Field(description="sensitivity + specificity − 1")
    n_labelled: int = Field(description="Labelled patches sensitivity and specificity rest on")
    warnings: list[str]


class CorrectedValidRateOut(Schema):
    run: int | None
    judged: str
    corrected: str
    sensitivity_specificity: str
    interval: str
    youden_j_warning_below: float
    rows: list[CorrectedValidRateRow]


class ThemeSource(Schema):
    rejected: int
    sorted: int


class ThemeCell(Schema):
    patches: int
    share: float | None


class ThemeRow(Schema):
    theme: str
    label: str
    patches: int
    share: float | None
    by_source: dict[str, ThemeCell]


class ThemeExample(Schema):
    patch: str
    bug: str
    source: str
    judgment: int
    member: str
    rationale: str
    offline: bool


class RejectionThemesOut(Schema):
    run: int
    patches: str
    justification: str
    offline: bool = Field(description="Some rows were sorted by the offline heuristic")
    offline_sorted: int = Field(description="The rows the offline heuristic sorted")
    note: str = Field(description="The offline heuristic's label when `offline`, else empty")
    prompt_version: str
    prompt_versions_used: list[str]
    rejected: int
    sorted: int
    failed: int
    pending: int
    not_sorted: int
    share_of: str
    sources: dict[str, ThemeSource]
    themes: list[ThemeRow]
    examples: dict[str, list[ThemeExample]]


class JudgeAnnotator(Schema):
    annotator: str
    kappa: FigureOut


class HumanJudgeOut(Schema):
    run: int
    patches: int
    judge_annotator: list[JudgeAnnotator]
    judge_mean: FigureOut
    judge_mean_ac1: FigureOut
    judge_median: float | None
    annotator_pairs: PairsOut


class BreakdownRow(Schema):
    group: str
    patches: int
    unanimous: FigureOut
    weighted_kappa: FigureOut
    valid_rate: FigureOut
    runs: dict[str, BenchmarkOut] = Field(description="Each run's benchmark, by run id")


class BreakdownOut(Schema):
    groups: list[str]
    rows: list[BreakdownRow]


class DimensionJudgeOut(Schema):
    run: int
    member: str = Field(description="The written judge's version, name@N")
    patches: int
    against: str
    weighted_kappa_linear: FigureOut
    weighted_kappa_quadratic: FigureOut
    spearman_rho: FigureOut


class DimensionSourceJudgeOut(Schema):
    run: int
    member: str
    patches: int
    weighted_kappa_quadratic: FigureOut
    spearman_rho: FigureOut


class DimensionSourceOut(Schema):
    source: str
    patches: int
    alpha_ordinal: FigureOut
    judges: list[DimensionSourceJudgeOut]


class DimensionOut(Schema):
    """A dimension a campaign asked annotators to rate: their ordinal agreement, and each
    written judge rating it against their median rating."""

    name: str
    scale: list[int] = Field(description="[low, high]")
    ratings: int
    raters: int
    patches: int
    alpha_ordinal: FigureOut
    annotator_pairs: int
    pairs_mean_weighted_kappa_linear: FigureOut
    pairs_mean_weighted_kappa_quadratic: FigureOut
    judges: list[DimensionJudgeOut]
    by_source: list[DimensionSourceOut] = Field(description="The dimension per patch source")


class AgreementReportOut(Schema):
    """The agreement report, as the report page's JSON download: a key per section."""

    dataset: ReportDataset
    campaign: ReportCampaign | None
    patches_in_scope: int
    intervals: ReportIntervals
    consensus: ReportConsensus
    baselines: dict[str, str]
    runs: list[ReportRun]
    humans: ReportHumans
    judges: list[JudgeOut]
    routing: list[RoutingOut]
    valid_at_k: ValidAtKOut
    corrected_valid_rate: CorrectedValidRateOut = Field(
        description="Per patch source, the run's VALID share corrected for its errors"
    )
    rejection_themes: RejectionThemesOut | None = Field(
        description="Why the run rejected test-passing patches; null until someone asks"
    )
    human_judge: list[HumanJudgeOut]
    dimensions: list[DimensionOut] = Field(
        description="Per dimension annotators rated: ordinal agreement (empty without one)"
    )
    breakdowns: dict[str, BreakdownOut]
