# BenchHub's one image: the web server (gunicorn), the Celery worker and beat,
# and the one-shot migrate all run from it (docker-compose.yml).
#
#   docker build -t benchhub .
#
# BASE_IMAGE is any Debian-like image with Python 3.11 and its venv module;
# the test suite builds from a debootstrapped Debian (tests/deploy).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The processes run as this user; the code and the virtualenv stay root's.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/benchhub \
        --shell /usr/sbin/nologin benchhub

WORKDIR /app

# Builds without PyPI: a mirror (--build-arg PIP_INDEX_URL=...) or a wheelhouse
# (--build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=http://...); unset, pip uses PyPI.
ARG PIP_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_NO_INDEX

# Dependencies first, so that a code change rebuilds only the layers below.
# requirements.txt installs ./agents (the document schema and importers).
COPY requirements.txt ./
COPY agents/ ./agents/
RUN python3 -m venv /opt/venv \
    && pip install -r requirements.txt \
    && mkdir /app/staticfiles && chown benchhub:benchhub /app/staticfiles

USER benchhub
ENV BENCHHUB_VAR_DIR=/home/benchhub/var
EXPOSE 8000
# gunicorn.conf.py: 2 processes x 4 threads (gthread), the configuration
# benchmarks/ingest.py measures; GUNICORN_* variables change it.
CMD ["gunicorn", "--config", "gunicorn.conf.py", "benchhub.wsgi:application"]

# The code last (owned by root, read-only to the app), then the static files
# collected from it at build time (served by WhiteNoise). Settings need a key
# to load; this one exists only during this command.
COPY . .
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --noinput --verbosity 0
