# CompAssess: the Streamlit app and the `compassess` CLI in one image.
#   docker build -t compassess .                                   # CPU torch (default)
#   docker build -t compassess:cu128 --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .
# Behind a private index or mirror (docs/deploy.md, "Docker"): pip's settings as build arguments,
#   docker build --build-arg PYPI_INDEX_URL=https://pypi.example.org/simple \
#     --build-arg PYPI_TRUSTED_HOST=pypi.example.org --build-arg TORCH_INDEX_URL=... -t compassess .
# and a proxy through Docker's predefined HTTPS_PROXY / HTTP_PROXY / NO_PROXY build arguments.
# The steps are the Makefile's `setup` (what .ci/run proves): pip pinned, torch 2.13.0 first and
# pinned, then the pinned runtime requirements (requirements.txt; no test tools), then the package
# (a regular, non-editable install), then `compassess fetch-model`. Every step fails the build when
# pip cannot reach its index.
# The code and the virtualenv belong to root and are read-only for the app's user (uid 10001),
# which writes only under /data (the store, worker logs, the bundled model's one conversion).
# No tests, docs or benchmarks are copied in. The app serves on 0.0.0.0 and so requires sign-in:
# mount a secrets.toml with an [auth] section, readable by uid 10001, at
# /home/compassess/.streamlit/secrets.toml (docs/deploy.md); without one the app refuses to start
# unless COMPASSESS_ALLOW_ANONYMOUS=1 says anonymous access is intended.
# Build with `docker build` (BuildKit) or `podman build --format docker` (podman's default OCI
# format drops the HEALTHCHECK).
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# pip's index settings (empty: pip's defaults, or a pip.conf the build is given). Passed to pip as
# PIP_INDEX_URL / PIP_EXTRA_INDEX_URL / PIP_TRUSTED_HOST only when set, so an unset one never
# overrides a pip.conf. Several extra indexes or hosts: separated by spaces.
ARG PYPI_INDEX_URL=
ARG PYPI_EXTRA_INDEX_URL=
ARG PYPI_TRUSTED_HOST=
# pip itself, pinned: a build that cannot fetch it stops here instead of going on with the base's.
ARG PIP_VERSION=26.2.1

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    COMPASSESS_HOME=/data \
    COMPASSESS_CACHE=/opt/compassess-cache \
    COMPASSESS_CONVERTED_DIR=/data/converted-models

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

RUN groupadd --gid 10001 compassess \
 && useradd --uid 10001 --gid compassess --create-home --shell /usr/sbin/nologin compassess \
 && install -d -o compassess -g compassess -m 0700 /data

WORKDIR /app

# Dependencies before the code, so editing the code does not reinstall torch. Built as root: the
# virtualenv is root's, and the app's user cannot change it.
COPY requirements.txt /tmp/compassess-build/
RUN if [ -n "$PYPI_INDEX_URL" ]; then export PIP_INDEX_URL="$PYPI_INDEX_URL"; fi \
 && if [ -n "$PYPI_EXTRA_INDEX_URL" ]; then export PIP_EXTRA_INDEX_URL="$PYPI_EXTRA_INDEX_URL"; fi \
 && if [ -n "$PYPI_TRUSTED_HOST" ]; then export PIP_TRUSTED_HOST="$PYPI_TRUSTED_HOST"; fi \
 && python -m venv /opt/venv \
 && python -m pip install -q "pip==${PIP_VERSION}" \
 && python -m pip --version | grep -q "^pip ${PIP_VERSION} " \
 && python -m pip install -q --index-url "$TORCH_INDEX_URL" torch==2.13.0 \
 && python -m pip install -q -r /tmp/compassess-build/requirements.txt

# The package (engine, store), installed into the virtualenv like any dependency; then the bundled
# model's GGUF into the read-only cache (its sha256 remembered there, so it is never hashed again),
# and a check that the judge loads. That check converts the GGUF once; the conversion is dropped
# again: the image holds one copy of the model, and the first load in a container writes its
# conversion under /data (COMPASSESS_CONVERTED_DIR).
COPY pyproject.toml README.md LICENSE /tmp/compassess-build/
COPY compassess_core /tmp/compassess-build/compassess_core
COPY db /tmp/compassess-build/db
RUN if [ -n "$PYPI_INDEX_URL" ]; then export PIP_INDEX_URL="$PYPI_INDEX_URL"; fi \
 && if [ -n "$PYPI_EXTRA_INDEX_URL" ]; then export PIP_EXTRA_INDEX_URL="$PYPI_EXTRA_INDEX_URL"; fi \
 && if [ -n "$PYPI_TRUSTED_HOST" ]; then export PIP_TRUSTED_HOST="$PYPI_TRUSTED_HOST"; fi \
 && python -m pip install -q --no-deps /tmp/compassess-build \
 && rm -rf /tmp/compassess-build \
 && compassess fetch-model \
 && python -c "from compassess_core.judges.models import cached_sha256, default_model_path; cached_sha256(default_model_path())" \
 && COMPASSESS_CONVERTED_DIR=/tmp/converted-check python -c "from compassess_core.judges import load_judge; load_judge(None, device='cpu').close()" \
 && rm -rf /tmp/converted-check \
 && chmod -R a+rX,go-w /opt/venv /opt/compassess-cache

# The app itself: the entry point, its pages, its Streamlit settings and the bundled sample.
COPY app.py ./
COPY .streamlit/config.toml .streamlit/config.toml
COPY pages pages
COPY assets assets
RUN chmod -R a+rX,go-w /app

USER 10001:10001
VOLUME ["/data"]
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"]

# 0.0.0.0: reachable from outside the container, so app.py insists on sign-in (see above).
# .streamlit/config.toml sets browser.serverAddress, so Streamlit does not look up the server's
# external address on the internet at start.
CMD ["streamlit", "run", "app.py", "--server.address", "0.0.0.0", "--server.port", "8501", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
