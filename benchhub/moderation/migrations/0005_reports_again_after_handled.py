"""One open report per reader per submission, no longer one for ever: a
reader whose report a moderator handled (dismissed, say) may report the
result again."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("moderation", "0004_reports_from_flags"),
        ("results", "0009_document_lz4"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="report",
            name="report_one_per_reader",
        ),
        migrations.AddConstraint(
            model_name="report",
            constraint=models.UniqueConstraint(
                condition=models.Q(("handled_at__isnull", True)),
                fields=("submission", "reporter"),
                name="report_one_open_per_reader",
            ),
        ),
    ]
