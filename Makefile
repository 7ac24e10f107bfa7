# The two commands a newcomer needs (see README.md):
#   make run    set up and serve BenchHub on the embedded default, with demo data
#   make test   set up and run the whole test suite on PostgreSQL and Redis
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1:8000
# The suite's servers; override to point elsewhere.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/benchhub
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15

.PHONY: run test check lint format vendor worker clean mutation bench-tools

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Stamp files: reinstall only when the requirements change. --no-compile: Python
# writes the bytecode of what it imports when it first imports it; compiling every
# installed module ahead took a third of a fresh setup. The agent is installed
# editable: its two compiled modules (agents/setup.py) are built beside their source.
$(VENV)/.installed: requirements.txt agents/pyproject.toml agents/setup.py \
		agents/benchhub_agent/benchmarks/_firebird_loop.c \
		agents/benchhub_agent/benchmarks/_pg_loop.c | $(BIN)/python
	$(BIN)/pip install --quiet --no-compile -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	bash .ci/ensure-build-deps.sh
	$(BIN)/pip install --quiet --no-compile -r requirements-dev.txt
	# The agent's compiled modules are optional: built without a compiler, they were left
	# out with a warning. Built again, now that ensure-build-deps.sh has made sure of one.
	$(BIN)/python -c "from benchhub_agent.benchmarks import _firebird_loop, _pg_loop" \
		2>/dev/null \
		|| $(BIN)/pip install --quiet --no-compile --no-deps -e ./agents
	touch $@

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	DEBUG=true $(BIN)/python manage.py load_demo_data
	DEBUG=true $(BIN)/python manage.py runserver $(HOST)

# The suite runs on TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: one process).
# Much of it waits on servers and subprocesses rather than computing, so three
# workers on the two cores finish first: the whole suite took 25.5 minutes on three
# against 35 on two, both on a machine loaded to 8-11 by other work. Each worker has
# its own test database, cache key prefix and Celery queue (tests/conftest.py) and
# agent databases (agents/tests/_databases.py); the browser tests run on every worker
# (a Chromium and a live server each); --dist loadgroup keeps each xdist_group on one
# worker, one test at a time: the Docker Compose and fault tests, which start, kill and
# restart servers, and the tests that change the shared servers' settings (conftest.py).
TEST_WORKERS ?= 3
test: $(VENV)/.installed-dev
	bash .ci/ensure-services.sh
	bash .ci/ensure-firebird.sh
	bash .ci/ensure-filesystems.sh
	bash .ci/ensure-browser.sh
	bash .ci/ensure-docker.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		bash .ci/pytest.sh -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The fast loop while changing code: lint, then the server's unit and API tests on
# test databases kept between runs (--reuse-db; the first run makes them), two
# pytest-xdist workers. Not the browser, agent, deploy, fault and gunicorn tests,
# nor those marked slow (processes of their own: manage.py, gunicorn's config,
# SQLite-backed Django; seconds of statistics): make test, which CI runs, is the
# whole gate and runs them all.
CHECK_TESTS := tests/results tests/comparisons tests/contract tests/leaderboards tests/releases \
	tests/moderation tests/accounts tests/imports tests/baselines tests/lib
CHECK_SKIP := --ignore=tests/lib/test_http_on_gunicorn.py --ignore=tests/lib/test_database_outage.py \
	--ignore=tests/lib/test_gunicorn_errors.py --ignore=tests/baselines/test_refresh_protocol.py \
	--ignore=tests/lib/test_read_replica.py --ignore=tests/lib/test_worker_outages.py

check: $(VENV)/.installed-dev
	bash .ci/ensure-services.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		bash .ci/pytest.sh -q -n 2 --reuse-db -m "not slow" $(CHECK_TESTS) $(CHECK_SKIP) $(PYTEST_ARGS)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-fetch the pinned front-end libraries from the npm registry.
vendor:
	bash static/update-vendor.sh

# A Celery worker on Redis, for running BenchHub like production, started
# again whenever it ends with an error (docker/worker-supervised.sh).
worker: $(VENV)/.installed
	PATH="$(CURDIR)/$(BIN):$$PATH" sh docker/worker-supervised.sh -A benchhub worker --beat --loglevel=info

# Mutation testing of the modules that decide what users see ([tool.mutmut]
# in pyproject.toml and agents/pyproject.toml; docs/testing.md says how to read it).
# Minutes per module, not in CI. MUTANTS narrows the server's run to some
# mutants, e.g. make mutation MUTANTS='benchhub.results.normalization*'.
mutation: $(VENV)/.installed-dev
	bash .ci/ensure-services.sh
	rm -rf mutants agents/mutants
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		$(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/mutmut results
	cd agents && ../$(BIN)/mutmut run --max-children 2 && ../$(BIN)/mutmut results

# The native tools benchmarks/agent_overhead.py compares the agent's load engines with:
# sysbench (MariaDB/MySQL) and pgbench (PostgreSQL), from Debian's packages.
bench-tools:
	bash .ci/ensure-bench-tools.sh

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache mutants agents/mutants agents/build
	rm -f agents/benchhub_agent/benchmarks/_firebird_loop*.so agents/benchhub_agent/benchmarks/_pg_loop*.so
