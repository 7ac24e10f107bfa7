"""SQL aggregates Django does not ship."""

from __future__ import annotations

from django.db.models import Aggregate, FloatField


class Median(Aggregate):
    """The median in SQL on PostgreSQL (percentile_cont). SQLite, the
    embedded default, has no percentile aggregate: there it is the mean, a
    stand-in good enough for a development server's summary tables."""

    function = "percentile_cont"
    name = "Median"
    output_field = FloatField()
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(
            compiler, connection, function="AVG", template="%(function)s(%(expressions)s)"
        )
