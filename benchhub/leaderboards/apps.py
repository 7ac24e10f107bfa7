from django.apps import AppConfig


class LeaderboardsConfig(AppConfig):
    """Which environment is fastest for this workload: one benchmark's runs
    grouped by what they ran on, best first, relative to the best and judged
    against it. Reads results; owns no table."""

    name = "benchhub.leaderboards"
