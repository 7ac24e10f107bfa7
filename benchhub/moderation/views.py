"""HTML pages of moderation: the queue, "My submissions", the audit log and
the dimension values with their alias rules. With htmx, the same views
answer the swapped fragment only."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from benchhub.accounts.roles import is_moderator
from benchhub.lib.methods import page_methods
from benchhub.moderation import selectors, services
from benchhub.moderation.aliases import ALIASABLE
from benchhub.moderation.forms import AliasRuleForm, AuditFilterForm, QueueFilterForm
from benchhub.moderation.models import AuditEntry
from benchhub.moderation.services import ModerationError

AUDIT_PAGE = 100
Action = AuditEntry.Action
QUEUE_ACTIONS = (Action.APPROVE, Action.REJECT, Action.FLAG, Action.REQUEST_RERUN)


def moderator_required(view):
    @login_required
    @wraps(view)
    def check(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not is_moderator(request.user):
            raise PermissionDenied("Moderators only")
        return view(request, *args, **kwargs)

    return check


def _queue_context(request: HttpRequest, query) -> dict:
    form = QueueFilterForm(query)
    filters = form.cleaned_data if form.is_valid() else {}
    state = filters.get("state") or ""
    page = filters.get("page") or 1
    items, has_next = selectors.moderation_queue(
        states=[state] if state else None,
        benchmark=filters.get("benchmark") or "",
        submitter=filters.get("submitter") or "",
        page=page,
    )
    kept = {k: v for k, v in filters.items() if v and k != "page"}
    return {
        "form": form,
        "items": items,
        "page": page,
        "previous_query": urlencode({**kept, "page": page - 1}) if page > 1 else None,
        "next_query": urlencode({**kept, "page": page + 1}) if has_next else None,
        "filter_query": urlencode(kept),
        "threshold": settings.BENCHHUB_AUTOFLAG_SCORE,
        "actions": QUEUE_ACTIONS,
    }


@page_methods("GET")
@moderator_required
def queue(request: HttpRequest) -> HttpResponse:
    template = "moderation/queue_items.html" if request.htmx else "moderation/queue.html"
    return render(request, template, _queue_context(request, request.GET))


@page_methods("POST")
@moderator_required
def queue_act(request: HttpRequest) -> HttpResponse:
    """One button per item ("approve <uuid>") or for the selection ("approve"
    with the ticked boxes); the reason is the item's own or the selection's."""
    action, _, one = request.POST.get("do", "").partition(" ")
    if action == Action.DISMISS and one:
        return _dismiss(request, one)
    if action not in QUEUE_ACTIONS:
        messages.error(request, "Choose an action: approve, reject, flag or request a re-run.")
        return _after_act(request)
    uuids = [one] if one else request.POST.getlist("submission")
    reason = request.POST.get(f"reason-{one}", "") if one else request.POST.get("reason", "")
    try:
        submissions = selectors.queue_submissions_get(uuids=uuids)
    except ValidationError:  # a malformed uuid in the form
        submissions = []
    if not submissions:
        messages.error(request, "Select at least one submission.")
        return _after_act(request)
    outcomes = services.submissions_moderate(
        submissions=submissions, actor=request.user, action=action, reason=reason
    )
    done = [o for o in outcomes if o.error is None]
    if done:
        messages.success(
            request,
            f"{Action(action).label.capitalize()}: {len(done)} submission"
            f"{'s' if len(done) != 1 else ''}.",
        )
    for outcome in outcomes:
        if outcome.error is not None:
            messages.error(request, f"{str(outcome.submission.uuid)[:8]}…: {outcome.error}")
    return _after_act(request)


def _dismiss(request: HttpRequest, uuid: str) -> HttpResponse:
    """Nothing wrong: the item's reports are handled, its status stays."""
    try:
        submissions = selectors.queue_submissions_get(uuids=[uuid])
    except ValidationError:
        submissions = []
    if not submissions:
        messages.error(request, "No such submission.")
        return _after_act(request)
    reason = request.POST.get(f"reason-{uuid}", "")
    try:
        handled = services.reports_dismiss(
            submission=submissions[0], actor=request.user, reason=reason
        )
    except ModerationError as exc:
        messages.error(request, f"{uuid[:8]}…: {exc}")
    else:
        messages.success(
            request, f"{uuid[:8]}…: {handled} report{'s' if handled != 1 else ''} dismissed."
        )
    return _after_act(request)


@page_methods("POST")
@login_required
def submission_report(request: HttpRequest, uuid) -> HttpResponse:
    """The "Report this result" form of the submission and run pages."""
    back = request.POST.get("next", "")
    # A path of this site only: a bare word ("x") is taken by redirect() for
    # a view's name, and one it could not reverse was a 500.
    if not back.startswith("/") or not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = ""
    submission = selectors.submission_for_action(user=request.user, uuid=uuid)
    if submission is None:
        raise Http404(f"No submission {uuid} that you may see")
    back = back or reverse("results:submission", args=[submission.uuid])
    try:
        services.submission_report(
            submission=submission, reporter=request.user, reason=request.POST.get("reason", "")
        )
    except ModerationError as exc:
        messages.error(request, f"Not reported: {exc}.")
        return redirect(back)
    messages.success(
        request, "Thank you: the moderators will look at this result. It stays listed meanwhile."
    )
    return redirect(back)


def _after_act(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("filters", "")
    if request.htmx:
        return render(
            request, "moderation/queue_items.html", _queue_context(request, QueryDict(query))
        )
    return redirect(f"{request.path.rsplit('act/', 1)[0]}?{query}")


@page_methods("GET")
@login_required
def my_submissions(request: HttpRequest) -> HttpResponse:
    items = selectors.own_submissions(user=request.user)
    histories = selectors.submission_histories([i.submission for i in items], request.user)
    for item in items:
        item.history = histories.get(item.submission.pk, [])
    return render(
        request,
        "moderation/my_submissions.html",
        {"items": items, "threshold": settings.BENCHHUB_AUTOFLAG_SCORE},
    )


@page_methods("POST")
@login_required
def my_submission_act(request: HttpRequest, uuid) -> HttpResponse:
    submission = selectors.own_submission_get(user=request.user, uuid=uuid)
    if submission is None:
        raise Http404("No such submission of yours")
    action = request.POST.get("action", "")
    if action not in (Action.HIDE, Action.UNHIDE, Action.DELETE):
        messages.error(request, "Choose hide, unhide or delete.")
        return redirect("accounts:submissions")
    try:
        services.submission_moderate(submission=submission, actor=request.user, action=action)
    except ModerationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{str(submission.uuid)[:8]}…: now {submission.status}.")
    return redirect("accounts:submissions")


@page_methods("GET")
@moderator_required
def audit_log(request: HttpRequest) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    page = filters.get("page") or 1
    entries = list(
        selectors.audit_log(
            action=filters.get("action") or "",
            actor=filters.get("actor") or "",
            submission=str(filters.get("submission") or ""),
        )[(page - 1) * AUDIT_PAGE : page * AUDIT_PAGE + 1]
    )
    kept = {k: v for k, v in filters.items() if v and k != "page"}
    context = {
        "form": form,
        "entries": entries[:AUDIT_PAGE],
        "next_query": urlencode({**kept, "page": page + 1}) if len(entries) > AUDIT_PAGE else None,
        "previous_query": urlencode({**kept, "page": page - 1}) if page > 1 else None,
    }
    template = "moderation/audit_rows.html" if request.htmx else "moderation/audit.html"
    return render(request, template, context)


@page_methods("GET", "POST")
@moderator_required
def dimensions(request: HttpRequest) -> HttpResponse:
    """Each aliasable field's values with their run counts, the alias rules,
    and a form to add one."""
    form = AliasRuleForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        dimension, _, field = form.cleaned_data["target"].partition(".")
        try:
            services.alias_rule_add(
                actor=request.user,
                dimension=dimension,
                field=field,
                from_value=form.cleaned_data["from_value"],
                to_value=form.cleaned_data["to_value"],
                reason=form.cleaned_data["reason"],
            )
        except ModerationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                "Alias rule added; stored results are being re-normalized in the background.",
            )
            return redirect("moderation:dimensions")
    values = selectors.dimension_value_counts()
    return render(
        request,
        "moderation/dimensions.html",
        {
            "form": form,
            "rules": selectors.alias_rule_list(),
            "fields": [(f"{d}.{f}", ALIASABLE[d, f].label, values[d, f]) for (d, f) in ALIASABLE],
        },
    )


@page_methods("POST")
@moderator_required
def alias_rule_remove(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        services.alias_rule_remove(actor=request.user, rule_id=pk)
    except ModerationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, "Alias rule removed; stored results are re-normalized from their raw strings."
        )
    return redirect("moderation:dimensions")
