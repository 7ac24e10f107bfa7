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

.PHONY: run test lint format vendor worker clean mutation

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Stamp files: reinstall only when the requirements change.
$(VENV)/.installed: requirements.txt agents/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	DEBUG=true $(BIN)/python manage.py load_demo_data
	DEBUG=true $(BIN)/python manage.py runserver $(HOST)

test: $(VENV)/.installed-dev
	bash .ci/ensure-services.sh
	bash .ci/ensure-firebird.sh
	bash .ci/ensure-browser.sh
	bash .ci/ensure-docker.sh
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) \
		bash .ci/pytest.sh $(PYTEST_ARGS)

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Re-fetch the pinned front-end libraries from the npm registry.
vendor:
	bash static/update-vendor.sh

# A Celery worker on Redis, for running BenchHub like production.
worker: $(VENV)/.installed
	$(BIN)/celery -A benchhub worker --beat --loglevel=info

# Mutation testing of the modules that decide what users see ([tool.mutmut]
# in pyproject.toml; survivors in docs/testing.md). Minutes, not in CI.
mutation: $(VENV)/.installed-dev
	bash .ci/ensure-services.sh
	rm -rf mutants
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache mutants
