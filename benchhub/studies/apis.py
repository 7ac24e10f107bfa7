"""/api/v1/studies/: list and create studies; /api/v1/studies/<uuid>/: one, with its table."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotAuthenticated, NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchhub.lib.api import ApiError
from benchhub.studies.data import study_as_data, study_summary
from benchhub.studies.selectors import study_get, study_list, study_table
from benchhub.studies.services import MAX_SUBMISSIONS, VARIABLE, InvalidStudy, study_create

MAX_LISTED = 200


class StudyListApi(APIView):
    @extend_schema(
        operation_id="studies_list",
        responses={200: OpenApiTypes.OBJECT},
        description="The studies you may see.",
    )
    def get(self, request: Request) -> Response:
        studies = study_list(user=request.user)[:MAX_LISTED]
        return Response({"results": [study_summary(study, request) for study in studies]})

    @extend_schema(
        operation_id="studies_create",
        request=inline_serializer(
            "StudyCreate",
            {
                "title": serializers.CharField(max_length=200),
                "question": serializers.CharField(max_length=2000),
                "benchmark": serializers.CharField(max_length=40),
                "metric": serializers.CharField(max_length=40),
                "vary": serializers.ListField(
                    child=serializers.ChoiceField(choices=VARIABLE), min_length=1, max_length=2
                ),
                "submissions": serializers.ListField(
                    child=serializers.UUIDField(), min_length=1, max_length=MAX_SUBMISSIONS
                ),
                "reference": serializers.CharField(max_length=200, required=False),
                "point": serializers.DictField(required=False),
                "write_up": serializers.CharField(max_length=20000, required=False),
                "repeats": serializers.UUIDField(required=False, allow_null=True),
            },
        ),
        responses={201: OpenApiTypes.OBJECT},
        description="A study of your own submissions: title, question, benchmark, metric, "
        "vary (one or two axes), submissions (uuids); optional reference, point, write_up, "
        "repeats (the uuid of the study this one repeats).",
    )
    def post(self, request: Request) -> Response:
        if not request.user.is_authenticated:
            raise NotAuthenticated("Sign in or send 'Authorization: Token <your API token>'.")
        try:
            study = study_create(owner=request.user, data=request.data)
        except InvalidStudy as exc:
            raise ApiError(
                str(exc),
                details=[{"path": f"$.{key}", "message": m} for key, m in exc.errors.items()],
            ) from exc
        return Response(study_summary(study, request), status=status.HTTP_201_CREATED)


class StudyApi(APIView):
    @extend_schema(operation_id="studies_retrieve", responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, uuid: str) -> Response:
        study = study_get(user=request.user, uuid=uuid)
        if study is None:
            raise NotFound("No study with this uuid that you may see.")
        return Response(study_as_data(study, study_table(study), request))
