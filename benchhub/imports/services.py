"""Writes of the imports app."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from benchhub.results.models import Submission
from benchhub.results.services import submission_create

ARTICLES_DIR = Path(__file__).resolve().parent / "articles"
CURATOR_USERNAME = "benchhub-curators"


@dataclass(frozen=True)
class ArticleLoad:
    file: str
    submission: Submission
    created: bool


def curator_user() -> AbstractBaseUser:
    """The account curated article data is filed under. It cannot sign in."""
    user, created = get_user_model().objects.get_or_create(username=CURATOR_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def articles_load(*, directory: Path = ARTICLES_DIR) -> list[ArticleLoad]:
    """Store every article document as an approved curated submission.
    Loading again stores nothing new (each document has a fixed uuid)."""
    curator = curator_user()
    loaded = []
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text("utf-8"))
        outcome = submission_create(
            submitter=curator, document=document, status=Submission.Status.APPROVED
        )
        loaded.append(ArticleLoad(path.name, outcome.submission, outcome.created))
    return loaded
