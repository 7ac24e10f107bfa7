# Stored server versions' sort keys computed again by the one version order
# (benchhub.results.normalization.versions.version_sort_text), which puts a
# pre-release before its release: "16beta2" had the key of 16.2, and sorted
# after 16.1 in the run list and the version_min/version_max bounds.
# A row whose digest is the hash of its fields (every server row: no alias
# rule rewrites servers) gets the digest of its new fields, so that the next
# upload of the same server finds it instead of storing a twin; a digest
# another row already holds is left alone. In batches, each its own
# transaction, by id; a row whose key does not change is not written.
# Re-running it is harmless.

from django.db import migrations, transaction

from benchhub.results.comparability import canonical_json, sha256_hex
from benchhub.results.normalization.versions import version_sort_text

BATCH = 2_000
FIELDS = (
    "engine",
    "version",
    "version_major",
    "version_sort",
    "version_raw",
    "architecture",
    "config_profile",
    "settings",
)


def sort_keys_again(apps, schema_editor):
    database = schema_editor.connection.alias
    rows = apps.get_model("results", "DatabaseServer").objects.using(database).order_by("pk")
    last = 0
    while True:
        with transaction.atomic(using=database):
            batch = list(
                rows.filter(pk__gt=last).select_for_update().values("pk", "digest", *FIELDS)[:BATCH]
            )
            if not batch:
                break
            for row in batch:
                key = version_sort_text(row["version"])
                if key == row["version_sort"]:
                    continue
                values = {name: row[name] for name in FIELDS}
                changes = {"version_sort": key}
                if row["digest"] == sha256_hex(canonical_json(values)):
                    digest = sha256_hex(canonical_json({**values, "version_sort": key}))
                    if not rows.filter(digest=digest).exists():
                        changes["digest"] = digest
                rows.filter(pk=row["pk"]).update(**changes)
            last = batch[-1]["pk"]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("results", "0010_mount_options_without_irrelevant")]

    operations = [migrations.RunPython(sort_keys_again, migrations.RunPython.noop, elidable=True)]
