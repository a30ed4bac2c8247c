"""Pages of datasets, bugs and patches, the bundle import and export, and the rubric report
(a dataset's edit statistics, paper 004 §5.1, and its JSON)."""

from typing import Any

from django.contrib.messages import success
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import UploadedFile
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from rubrics import selectors
from rubrics.analytics import dataset_rubric_report, report_dict
from rubrics.bundle.base import BundleImportError, import_counts_text, summary_text
from rubrics.bundle.services import bundle_export
from rubrics.bundle.uploads import (
    UNKNOWN_UPLOAD,
    bundle_submit,
    bundle_upload_get,
    upload_errors,
    upload_progress,
    worker_bytes,
)
from rubrics.forms import BundleUploadForm
from rubrics.long_diffs import DiffExpired, DiffGone, diff_for_token
from rubrics.models import BundleUpload, Dataset, Rubric
from rubrics.review.forms import DraftRequestForm
from rubrics.swebench.forms import SwebenchUploadForm
from rubrics.swebench.services import NamedFile, SwebenchImportError, swebench_import
from rubrics.templatetags.diffs import diff_chunk
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.roles import Role, role_required, user_has_role

UNKNOWN_VARIANT = "unknown rubric variant {variant!r}: use one of {choices}"


BROWSE_ROLES = (Role.LEAD, Role.REVIEWER)


@require_GET
@role_required(*BROWSE_ROLES)
def dataset_list(request: AuthenticatedHtmxRequest) -> HttpResponse:
    return render(request, "rubrics/dataset_list.html", {"datasets": selectors.dataset_list()})


@require_GET
@role_required(*BROWSE_ROLES)
@vary_on_headers("HX-Request")
def dataset_detail(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    if request.htmx and request.htmx.target == "bug-table":
        return render(request, "rubrics/_bug_table.html", _bugs_context(request, dataset))
    return dataset_page(request, dataset)


def _bugs_context(request: AuthenticatedHtmxRequest, dataset: Dataset) -> dict[str, Any]:
    """The dataset and the page of its bugs that the query asks for."""
    query = request.GET.get("q", "")
    page = selectors.dataset_bugs_page(
        dataset=dataset, query=query, page=request.GET.get("page", 1)
    )
    return {"dataset": dataset, "page": page, "query": query}


def dataset_page(
    request: AuthenticatedHtmxRequest,
    dataset: Dataset,
    *,
    draft_form: DraftRequestForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """A dataset's page (the bugs its query asks for), with ``draft_form`` as posted when
    drafting was refused: the choices kept, the errors said in the form."""
    context = {
        **_bugs_context(request, dataset),
        "imports": [
            (bundle_import, import_counts_text(bundle_import))
            for bundle_import in selectors.dataset_imports_recent(dataset)
        ],
        "label_count": selectors.dataset_label_count(dataset),
        "rubric_counts": selectors.dataset_rubric_counts(dataset),
        "draft_form": draft_form or DraftRequestForm(dataset=dataset),
        "draft_batches": selectors.dataset_draft_batches_recent(dataset),
    }
    return render(request, "rubrics/dataset_detail.html", context, status=status)


@require_GET
@role_required(Role.LEAD)
def dataset_export(request: AuthenticatedHtmxRequest, slug: str) -> StreamingHttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    response = StreamingHttpResponse(
        (line.encode() for line in bundle_export(dataset=dataset)),
        content_type="application/x-ndjson; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}.jsonl"'
    return response


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def bundle_upload(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Import a bundle: a small one here and now, a large one by the worker (its progress
    on the upload's page)."""
    form = BundleUploadForm(request.POST or None, request.FILES or None)
    errors = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            summary = bundle_submit(
                actor=request.user,
                file=upload,
                dataset_name=form.cleaned_data["dataset"],
                grant_annotator_role=form.cleaned_data["grant_annotator_role"],
            )
        except BundleImportError as exc:
            errors = exc
        else:
            if isinstance(summary, BundleUpload):  # the worker imports it: its page follows
                return redirect(summary)
            success(
                request,
                f"Imported {upload.name} into {summary.dataset.name}: "
                f"{summary_text(summary.counts)}.",
            )
            for note in summary.notes:
                success(request, note)
            return redirect(summary.dataset)
    status = 400 if (form.errors or errors) else 200
    return _import_page(request, tab="bundle", form=form, import_error=errors, status=status)


def _import_page(
    request: AuthenticatedHtmxRequest,
    *,
    tab: str,
    form: BundleUploadForm | None = None,
    swebench_form: SwebenchUploadForm | None = None,
    import_error: BundleImportError | None = None,
    status: int = 200,
) -> HttpResponse:
    """The Import page, one tab shown: a bundle, or SWE-bench predictions."""
    return render(
        request,
        "rubrics/bundle/bundle_upload.html",
        {
            "tab": tab,
            "form": form or BundleUploadForm(),
            "swebench_form": swebench_form or SwebenchUploadForm(),
            "import_error": import_error,
            "datasets": selectors.dataset_list(counts=False),
            "worker_bytes": worker_bytes(),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
@role_required(Role.LEAD)
def swebench_upload(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Import SWE-bench instances, predictions and results (``rubrics.swebench``), here and
    now, all or nothing; errors name the file, line and field."""
    form = SwebenchUploadForm(request.POST or None, request.FILES or None)
    errors = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data

        def named(upload: UploadedFile) -> NamedFile:
            return NamedFile(upload.name or "upload", upload)

        try:
            summary = swebench_import(
                instances=named(data["instances"]) if data["instances"] else None,
                predictions=[named(upload) for upload in data["predictions"]],
                results=[named(upload) for upload in data["results"]],
                dataset_name=data["dataset"],
                actor=request.user,
            )
        except SwebenchImportError as exc:
            errors = exc
        else:
            dataset = summary.bundle.dataset
            success(request, f"Imported SWE-bench into {dataset.name}: {summary.counts_text}.")
            for note in summary.notes:
                success(request, note)
            return redirect(dataset)
    status = 400 if (form.errors or errors) else 200
    return _import_page(
        request, tab="swebench", swebench_form=form, import_error=errors, status=status
    )


@require_GET
@role_required(Role.LEAD)
@vary_on_headers("HX-Request")
def bundle_upload_status(request: AuthenticatedHtmxRequest, upload_id: int) -> HttpResponse:
    """A large upload's import by the worker: live progress (htmx polls the partial), then
    what it imported or why nothing was."""
    try:
        upload = bundle_upload_get(upload_id=upload_id)
    except BundleUpload.DoesNotExist:
        raise Http404(UNKNOWN_UPLOAD.format(upload=upload_id)) from None
    context = {
        "upload": upload,
        "progress": upload_progress(upload),
        "import_error": upload_errors(upload),
        "counts": import_counts_text(upload.bundle_import) if upload.bundle_import else "",
    }
    if request.htmx:
        return render(request, "rubrics/bundle/_upload_progress.html", context)
    return render(request, "rubrics/bundle/upload_status.html", context)


DIFF_EXPIRED = "This view of the diff has expired: reload the page to see the rest."
DIFF_GONE = "The server no longer keeps this diff's lines: reload the page to see the rest."


@require_GET
@role_required(Role.LEAD, Role.REVIEWER, Role.ANNOTATOR)
@vary_on_headers("HX-Request")
def diff_more(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """The next lines of a long diff a page showed the beginning of (``rubrics.long_diffs``:
    the token says which diff, and that this user was shown it)."""
    try:
        start = int(request.GET.get("from", ""))
        text = diff_for_token(request.GET.get("t", ""), request.user.pk)
    except (ValueError, signing.BadSignature) as exc:
        raise Http404("no such diff") from exc
    except PermissionError as exc:
        raise PermissionDenied(str(exc)) from exc
    except (DiffExpired, DiffGone) as exc:
        gone = DIFF_EXPIRED if isinstance(exc, DiffExpired) else DIFF_GONE
        return render(request, "components/_diff_chunk.html", {"gone": gone})
    context = diff_chunk(text, start=max(start, 0), user_id=request.user.pk)
    if request.htmx:
        return render(request, "components/_diff_chunk.html", context)
    return render(request, "rubrics/diff_more.html", context)


@require_GET
@role_required(*BROWSE_ROLES)
def bug_detail(request: AuthenticatedHtmxRequest, slug: str, bug_key: str) -> HttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    bug = selectors.bug_get(dataset=dataset, key=bug_key)
    return render(
        request,
        "rubrics/bug_detail.html",
        {
            "dataset": dataset,
            "bug": bug,
            "patches": selectors.bug_patches(bug=bug),
            "rubrics": selectors.bug_rubrics(bug=bug),
        },
    )


@require_GET
@role_required(*BROWSE_ROLES)
def patch_detail(request: AuthenticatedHtmxRequest, slug: str, patch_key: str) -> HttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    patch = selectors.patch_get(dataset=dataset, key=patch_key)
    is_lead = user_has_role(request.user, Role.LEAD)
    context = {
        "dataset": dataset,
        "patch": patch,
        "bug": patch.bug,
        "duplicates": selectors.patch_duplicates(patch=patch),
        # Reviewers see each run's verdict and the consensus (as the rubric editor shows them
        # the judge's disagreements), not who labelled what, nor the runs' pages (leads').
        "verdicts": selectors.patch_verdicts(patch=patch),
        "is_lead": is_lead,
        # Labels are the leads' to see: reviewers refine rubrics without human verdicts.
        "labels": selectors.patch_labels(patch=patch) if is_lead else None,
    }
    return render(request, "rubrics/patch_detail.html", context)


# Reviewers see it too: it measures their own edits and shows no human verdicts.
@require_GET
@role_required(Role.LEAD, Role.REVIEWER)
def rubric_report(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    dataset = selectors.dataset_get(slug=slug)
    variant = request.GET.get("variant", Rubric.Variant.TEMPLATED)
    if variant not in Rubric.Variant.values:
        choices = ", ".join(Rubric.Variant.values)
        message = UNKNOWN_VARIANT.format(variant=variant, choices=choices)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
    report = dataset_rubric_report(dataset, variant=variant)
    if request.GET.get("format") == "json":
        response = JsonResponse(report_dict(report), json_dumps_params={"indent": 2})
        filename = f"{dataset.slug}-rubric-report-{variant}.json"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    return render(
        request,
        "rubrics/rubric_report.html",
        {"dataset": dataset, "report": report, "variants": Rubric.Variant.choices},
    )
