# Stored mount options normalized again from their raw strings, now that
# normalization leaves out the options irrelevant to performance (rw,
# resuid=…, errors=… : IRRELEVANT_MOUNT_OPTIONS in
# benchhub/results/normalization/storage.py), so that stored runs join the
# series new uploads land in: "noatime,rw" and "noatime" were two series.
# In batches, each its own transaction (the migration is not atomic), by id,
# as 0006 does; a row whose value does not change is not written. The
# comparisons' kept answers see the change through their triggers
# (benchhub/comparisons/kept.py); baselines do not read storage (it is not in
# the comparability key). Re-running it is harmless; the raw strings are
# kept, so a later rule is applied the same way, by a migration like this one.
# Rows keep their digest, as rows rewritten by an alias rule do.

from django.db import migrations, transaction

from benchhub.results.normalization import normalize_mount_options

BATCH = 2_000


def normalize_stored_mount_options(apps, schema_editor):
    database = schema_editor.connection.alias
    rows = apps.get_model("results", "Storage").objects.using(database).order_by("pk")
    last = 0
    while True:
        with transaction.atomic(using=database):
            batch = list(
                rows.filter(pk__gt=last)
                .select_for_update()
                .values_list("pk", "mount_options", "mount_options_raw")[:BATCH]
            )
            if not batch:
                break
            for pk, stored, raw in batch:
                value = normalize_mount_options(raw)
                if value != stored:
                    rows.filter(pk=pk).update(mount_options=value)
            last = batch[-1][0]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("results", "0009_document_lz4")]

    operations = [
        migrations.RunPython(
            normalize_stored_mount_options, migrations.RunPython.noop, elidable=True
        )
    ]
