"""SQL aggregates Django does not ship."""

from __future__ import annotations

from django.db.models import Aggregate, FloatField


class Median(Aggregate):
    """The median in SQL, PostgreSQL only (percentile_cont). SQLite has no
    percentile aggregate, and a mean would be a different number under the
    same name: there it refuses, and callers compute the median in Python
    (``benchhub.lib.spread``)."""

    function = "percentile_cont"
    name = "Median"
    output_field = FloatField()
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"

    def as_sqlite(self, compiler, connection, **extra_context):
        raise NotImplementedError("SQLite has no median aggregate: use benchhub.lib.spread")
