"""The agent's ``run --like`` verdict is the server's rule, line for line.

The agent cannot import server code, so ``agents/benchhub_agent/verdict.py``
is a copy of ``benchhub/comparisons/verdicts.py``; below their docstrings the
two must be the same code, and they must give the same verdicts.
"""

from __future__ import annotations

import ast
from pathlib import Path

from benchhub_agent import verdict as agent_verdict

from benchhub.comparisons import verdicts as server_verdicts

ROOT = Path(__file__).resolve().parents[2]


def code_without_docstring(path: Path) -> str:
    tree = ast.parse(path.read_text("utf-8"))
    tree.body = tree.body[1:]  # the module docstring
    return ast.unparse(tree)


def test_the_agents_verdict_module_is_the_servers_code():
    assert code_without_docstring(ROOT / "agents/benchhub_agent/verdict.py") == (
        code_without_docstring(ROOT / "benchhub/comparisons/verdicts.py")
    )


def test_both_give_the_same_verdicts_on_skewed_repetitions():
    cases = [
        ((100.0, 97.0, 130.0, 98.0), (150.0, 149.0, 151.0, 300.0)),
        ((10.0, 10.0, 10.0), (10.2, 10.1, 10.3)),
        ((5.0,), (6.0, 6.1)),
    ]
    for mine, theirs in cases:
        for direction in ("higher", "lower", ""):
            agent = agent_verdict.verdict(
                [agent_verdict.RunValues(mine[0], mine)],
                [agent_verdict.RunValues(theirs[0], theirs)],
                direction=direction,
            )
            server = server_verdicts.verdict(
                [server_verdicts.RunValues(mine[0], mine)],
                [server_verdicts.RunValues(theirs[0], theirs)],
                direction=direction,
            )
            assert agent.as_dict() == server.as_dict()
