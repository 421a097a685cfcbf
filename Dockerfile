# CompAssess: the Streamlit app and the `compassess` CLI in one image.
#   docker build -t compassess .                                   # CPU torch (default)
#   docker build -t compassess:cu128 --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .
# The steps are the Makefile's `setup` (what .ci/run proves): torch 2.13.0 first and pinned, then the
# pinned requirements, then the package without dependencies, then `compassess fetch-model`.
# Only the runtime pins (requirements.txt) are installed; the test tools stay out of the image.
# It serves on 0.0.0.0 and so requires sign-in: mount a secrets.toml with an [auth] section at
# /home/compassess/.streamlit/secrets.toml (docs/deploy.md); without one the app refuses to start
# unless COMPASSESS_ALLOW_ANONYMOUS=1 says anonymous access is intended.
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    COMPASSESS_HOME=/data \
    COMPASSESS_CACHE=/opt/compassess-cache

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

RUN groupadd --gid 10001 compassess \
 && useradd --uid 10001 --gid compassess --create-home --shell /usr/sbin/nologin compassess \
 && install -d -o compassess -g compassess /data /opt/compassess-cache /opt/venv /app

WORKDIR /app
USER 10001:10001

# Dependencies before the code, so editing the code does not reinstall torch.
COPY --chown=compassess:compassess requirements.txt ./
# hadolint ignore=DL3013
RUN python -m venv /opt/venv \
 && python -m pip install -q --upgrade pip \
 && python -m pip install -q --index-url "$TORCH_INDEX_URL" torch==2.13.0 \
 && python -m pip install -q -r requirements.txt

COPY --chown=compassess:compassess . .
RUN python -m pip install -q --no-deps -e . \
 && compassess fetch-model \
 && python -c "from compassess_core.judges import load_judge; load_judge(None, device='cpu').close()"

VOLUME ["/data"]
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"]

# 0.0.0.0: reachable from outside the container, so app.py insists on sign-in (see above).
CMD ["streamlit", "run", "app.py", "--server.address", "0.0.0.0", "--server.port", "8501", "--server.headless", "true", "--browser.gatherUsageStats", "false"]
