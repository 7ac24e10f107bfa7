"""The apps depend one way: each app's services, selectors and models import
only the apps below it (docs/architecture.md). Pages (views, URLs, admin,
template tags, what a page shows) may put several apps on one screen, so
they may import any app; nothing imports a page.

Read from the source with ``ast``, lazy imports inside functions included:
an import moved into a function is still a dependency."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "benchhub"

# Lowest first. An app may import the apps of its own layer or of lower
# ones; the project's own modules (settings, urls, openapi) sit on top.
LAYERS = (
    ("lib",),
    ("accounts",),
    ("results",),
    ("baselines", "imports", "moderation"),
    ("comparisons",),
    ("leaderboards", "releases", "studies", "devserver"),
)
LAYER = {app: level for level, apps in enumerate(LAYERS) for app in apps}
PAGE_MODULES = {"views.py", "urls.py", "admin.py", "presentation.py", "feeds.py"}
PAGE_FOLDERS = {"templatetags", "management"}


def is_page(path: pathlib.Path) -> bool:
    return path.name in PAGE_MODULES or bool(PAGE_FOLDERS & set(path.parts))


def imported_apps(path: pathlib.Path) -> set[str]:
    """The BenchHub packages ``path`` imports (``benchhub.<name>``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "benchhub" and len(parts) > 1:
                found.add(parts[1])
    return found


def app_modules() -> list[tuple[str, pathlib.Path]]:
    return [
        (path.relative_to(PACKAGE).parts[0], path)
        for path in sorted(PACKAGE.rglob("*.py"))
        if len(path.relative_to(PACKAGE).parts) > 1 and "migrations" not in path.parts
    ]


def violations(
    modules: list[tuple[str, pathlib.Path]], package: pathlib.Path = PACKAGE
) -> list[str]:
    """Each import of a higher layer's app by a module that is not a page,
    and each import of a page or of the project's top-level modules."""
    found = []
    for app, path in modules:
        for other in sorted(imported_apps(path) - {app}):
            where = f"{path.relative_to(package.parent)} imports benchhub.{other}"
            if other not in LAYER:
                if (package / f"{other}.py").exists():
                    found.append(f"{where}, a project module above every app")
                continue
            if not is_page(path) and LAYER[other] > LAYER[app]:
                found.append(f"{where}, a layer above {app} ({LAYERS[LAYER[other]]})")
    return found


def test_every_app_has_a_layer():
    apps = {app for app, _ in app_modules()}
    assert apps - set(LAYER) == set(), "add the new app to LAYERS"


def test_apps_import_only_the_apps_below_them():
    assert violations(app_modules()) == []


@pytest.mark.parametrize(
    ("app", "module", "source", "found"),
    [
        ("results", "services.py", "from benchhub.moderation import services", True),
        ("results", "services.py", "def f():\n    import benchhub.baselines.refresh", True),
        ("results", "views.py", "from benchhub.baselines import selectors", False),
        ("moderation", "services.py", "from benchhub.baselines import services", False),
        ("lib", "api.py", "from benchhub.openapi import postprocess", True),
        ("results", "models.py", "from benchhub.lib import api", False),
    ],
)
def test_the_check_finds_an_upward_import(tmp_path, app, module, source, found):
    package = tmp_path / "benchhub"
    path = package / app / module
    path.parent.mkdir(parents=True)
    path.write_text(source + "\n", encoding="utf-8")
    (package / "openapi.py").write_text("", encoding="utf-8")
    assert bool(violations([(app, path)], package)) is found
