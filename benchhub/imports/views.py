"""HTML pages of the imports app: upload a tool's output, see what was stored."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from benchhub.imports import selectors
from benchhub.imports.forms import ToolUploadForm
from benchhub.imports.services import (
    ToolOutputError,
    ToolOutputReading,
    tool_output_import,
    tool_output_read,
)
from benchhub.lib.api import CATALOG_RETRY_AFTER_SECONDS, database_trouble
from benchhub.lib.methods import page_methods
from benchhub.results.selectors import submission_is_public
from benchhub.results.services import (
    CatalogIncomplete,
    InvalidDocument,
    SubmissionConflict,
    SubmissionGone,
)

logger = logging.getLogger(__name__)


@page_methods("GET", "POST")
@login_required
def tool_upload(request: HttpRequest) -> HttpResponse:
    """The form; "Preview" shows what would be stored, "Store" stores it.

    With htmx the Preview button swaps in only the form and its preview
    (the fragment); without JavaScript the same answer comes as a page.
    """
    form = ToolUploadForm(request.POST or None, request.FILES or None)
    reading: ToolOutputReading | None = None
    status, retry_after = 200, None
    if request.method == "POST" and form.is_valid():
        arguments = form.service_arguments()
        try:
            if request.POST.get("action") == "preview":
                reading = tool_output_read(submitter=request.user, **arguments)
                form.add_document_errors(reading.errors)
            else:
                outcome = tool_output_import(submitter=request.user, **arguments)
                if outcome.created:
                    messages.success(request, "Stored: pending until a moderator approves it.")
                else:
                    messages.info(request, "You uploaded this before; nothing new was stored.")
                return redirect("imports:detail", uuid=outcome.submission.uuid)
        except ToolOutputError as exc:
            form.add_service_error(exc)
        except InvalidDocument as exc:
            form.add_document_errors(exc.errors)
        except SubmissionGone:
            form.add_error(None, "You uploaded this before and it was deleted; nothing stored.")
        except SubmissionConflict:
            form.add_error(None, "This upload's id is taken by another submission; nothing stored.")
        except CatalogIncomplete as exc:
            # The server's fault, as the API's 503 says; the form stays filled in.
            form.add_error(None, f"Nothing was stored: {exc}.")
            status, retry_after = 503, CATALOG_RETRY_AFTER_SECONDS
        except DatabaseError as exc:
            # A concurrent change broke the upload's transaction (a deadlock, a
            # row it refers to deleted): the remedy is to store it again, from
            # the form as it was sent; handler500's page would lose the pasted
            # output. Other database errors (the database away) go there still.
            trouble = database_trouble(exc)
            if trouble is None or trouble.code != "concurrent_change":
                raise
            logger.warning("import form: %s: %s", trouble.reason, exc)
            form.add_error(
                None,
                f"Nothing was stored: {trouble.reason}. What you entered is kept below; "
                "press Store again.",
            )
            status, retry_after = 503, trouble.retry_after
    template = "imports/upload_form.html" if request.htmx else "imports/upload.html"
    response = render(request, template, {"form": form, "reading": reading}, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


@page_methods("GET")
def tool_upload_detail(request: HttpRequest, uuid: str) -> HttpResponse:
    """What an upload stored, for whoever may see it (its submitter while pending)."""
    submission = selectors.imported_submission_get(user=request.user, uuid=uuid)
    if submission is None:
        raise Http404("No such upload that you may see")
    return render(
        request,
        "imports/detail.html",
        {"submission": submission, "private_page": not submission_is_public(submission)},
    )
