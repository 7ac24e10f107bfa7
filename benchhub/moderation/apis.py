"""Moderation over REST, for moderators' scripts and readers' reports."""

from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.lib.api import ApiError
from benchhub.lib.fields import TextField
from benchhub.moderation.models import AuditEntry
from benchhub.moderation.selectors import submission_for_action
from benchhub.moderation.services import (
    AlreadyReported,
    InvalidReason,
    ModerationError,
    NotPermitted,
    ReasonRequired,
    TransitionNotAllowed,
    submission_moderate,
    submission_report,
)
from benchhub.results.models import Submission

_STATUS = {
    NotPermitted: status.HTTP_403_FORBIDDEN,
    TransitionNotAllowed: status.HTTP_409_CONFLICT,
    AlreadyReported: status.HTTP_409_CONFLICT,
    ReasonRequired: status.HTTP_400_BAD_REQUEST,
}
API_ACTIONS = [
    AuditEntry.Action.APPROVE,
    AuditEntry.Action.REJECT,
    AuditEntry.Action.FLAG,
    AuditEntry.Action.REQUEST_RERUN,
    AuditEntry.Action.HIDE,
    AuditEntry.Action.UNHIDE,
    AuditEntry.Action.DELETE,
]


class StrictInput(serializers.Serializer):
    """A JSON body whose every field is one this endpoint reads (docs/api.md:
    an unknown field is a 400 naming it): {"action": "reject", "reson": "…"}
    was answered as if no reason had been given, and {"action": "hide",
    "extra": 1} as if "extra" meant something."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = [name for name in data if name not in self.fields]
            if unknown:
                takes = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {name: f"unknown field; this endpoint takes {takes}" for name in unknown}
                )
        return super().to_internal_value(data)


class ModerationOutput(serializers.ModelSerializer):
    class Meta:
        model = Submission
        fields = ("uuid", "status", "status_reason")


def _moderate(request: Request, uuid, action: str, reason: str) -> Response:
    submission = submission_for_action(user=request.user, uuid=uuid)
    if submission is None:
        raise ApiError(f"No submission {uuid} that you may see", status_code=404, code="not_found")
    try:
        if action == AuditEntry.Action.REPORT:
            submission_report(submission=submission, reporter=request.user, reason=reason)
        else:
            submission = submission_moderate(
                submission=submission, actor=request.user, action=action, reason=reason
            )
    except ModerationError as exc:
        if isinstance(exc, ReasonRequired | InvalidReason):
            path = "$.reason"
        elif action == AuditEntry.Action.REPORT:
            path = "$"  # a report's body has no action: the request as a whole is refused
        else:
            path = "$.action"
        raise ApiError(
            str(exc),
            status_code=_STATUS.get(type(exc), status.HTTP_400_BAD_REQUEST),
            code=exc.code,
            details=[{"path": path, "message": str(exc)}],
        ) from None
    return Response(ModerationOutput(submission).data)


class SubmissionModerationApi(APIView):
    permission_classes = [IsAuthenticated]

    class ModerationInputSerializer(StrictInput):
        action = serializers.ChoiceField(choices=API_ACTIONS)
        reason = TextField(required=False, allow_blank=True, max_length=2000, default="")

    @extend_schema(
        operation_id="submissions_moderate",
        request=ModerationInputSerializer,
        responses={
            200: ModerationOutput,
            400: OpenApiResponse(description="unknown action, or a reason is required"),
            401: OpenApiResponse(description="not signed in"),
            403: OpenApiResponse(description="your role does not allow this action"),
            404: OpenApiResponse(description="no such submission that you may see"),
            409: OpenApiResponse(description="not allowed from the current status"),
        },
        description=(
            "Change a submission's status. Moderators: approve, reject (reason required), "
            "flag (reason required), request_rerun (reason required: what to change). "
            "The submitter or a moderator: hide, unhide, delete. Every change is in the "
            "audit log."
        ),
    )
    def post(self, request: Request, uuid) -> Response:
        data = self.ModerationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return _moderate(
            request, uuid, data.validated_data["action"], data.validated_data["reason"]
        )


class SubmissionReportApi(APIView):
    permission_classes = [IsAuthenticated]

    class ReportInputSerializer(StrictInput):
        reason = TextField(max_length=2000)

    @extend_schema(
        operation_id="submissions_report",
        request=ReportInputSerializer,
        responses={
            200: ModerationOutput,
            400: OpenApiResponse(description="the reason is missing, empty or too long"),
            401: OpenApiResponse(description="not signed in"),
            403: OpenApiResponse(description="your own submission: hide or delete it instead"),
            404: OpenApiResponse(description="no such submission that you may see"),
            409: OpenApiResponse(
                description="reported by you already, and not yet handled by a moderator "
                "(code already_reported), or not "
                "reportable in its status (hidden, rejected, …)"
            ),
        },
        description="Report a submission to the moderators, with what looks wrong. Its "
        "status does not change (an approved result stays public): the report puts it in "
        "the moderation queue and the audit log until a moderator acts on it or dismisses "
        "it. One open report per reader per submission: a second one before a moderator "
        "has handled the first is a 409; after, it is a new report.",
    )
    def post(self, request: Request, uuid) -> Response:
        data = self.ReportInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return _moderate(request, uuid, AuditEntry.Action.REPORT, data.validated_data["reason"])
