"""benchhub.lib.collector: the cyclic collector is off inside the block, on
again once the last overlapping block ends, and left as it was found; the web
process freezes what it loaded at start."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading

import pytest
from django.conf import settings

from benchhub.lib.collector import cyclic_gc_paused


@pytest.fixture(autouse=True)
def collector_enabled():
    gc.enable()
    yield
    gc.enable()


def test_off_inside_on_after():
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_an_exception():
    with pytest.raises(RuntimeError), cyclic_gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with cyclic_gc_paused():
        pass
    assert not gc.isenabled()


def test_overlapping_blocks_in_two_threads_turn_it_on_only_when_both_end():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first():
        with cyclic_gc_paused():
            first_in.set()
            second_in.wait(5)
        seen["after first"] = gc.isenabled()
        first_out.set()

    def second():
        first_in.wait(5)
        with cyclic_gc_paused():
            second_in.set()
            first_out.wait(5)
            seen["inside second, first done"] = gc.isenabled()
        seen["after second"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {
        "after first": False,
        "inside second, first done": False,
        "after second": True,
    }


def test_the_web_process_sets_aside_what_it_loaded_before_its_first_request():
    """benchhub.wsgi (gunicorn's and runserver's application) freezes what it loaded:
    the views the URLconf imports are among the frozen objects, out of every pass."""
    script = (
        "import gc, benchhub.wsgi\n"
        "from benchhub.comparisons import views\n"
        "assert gc.get_freeze_count() > 10000, gc.get_freeze_count()\n"
        "tracked = {id(o) for o in gc.get_objects()}\n"  # every generation but the frozen one
        "print(id(views.compare) in tracked, id(views.__dict__) in tracked)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=settings.BASE_DIR,  # benchhub importable wherever pytest was started
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
