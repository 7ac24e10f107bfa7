from django.urls import path

from benchhub.comparisons import views

app_name = "comparisons"

urlpatterns = [
    path("", views.compare, name="compare"),
    path("chart.svg", views.comparison_chart_svg, name="chart-svg"),
]

# Mounted at /runs/compare/ (benchhub/urls.py): it compares runs, not a metric by axes.
runs_urlpatterns = [
    path("", views.runs_side_by_side_page, name="runs"),
]
