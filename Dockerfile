# syntax=docker/dockerfile:1
# planwatch and fleetsim in one image (the project, no dev extras), running as a non-root user.
#   docker build -t planwatch .
#   docker run --rm planwatch size examples/capstone.yaml
#   docker run --rm -p 8080:8080 planwatch serve examples/capstone.yaml --prometheus http://HOST:9090 --listen 0.0.0.0:8080
#   docker run --rm -p 9400:9400 --entrypoint fleetsim planwatch serve examples/capstone.yaml --listen 0.0.0.0:9400
# `fleetsim backfill` writes TSDB blocks itself (no promtool needed): docker-compose.yml backfills with this image.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY monitor ./monitor
COPY forecasting ./forecasting
COPY fleetsim ./fleetsim
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PLANWATCH_STATE_DB=/var/lib/planwatch/planwatch-state.db
COPY --from=build /wheels /tmp/wheels
RUN pip install /tmp/wheels/*.whl && rm -rf /tmp/wheels
# /var/lib/planwatch: planwatch serve's SQLite state (a volume in docker-compose.yml).
# /sd: where `fleetsim serve --file-sd /sd/targets.json` keeps Prometheus's targets (a shared volume);
# world-writable like /tmp, so the emulator can run as the uid of the Prometheus that reads the file.
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/planwatch planwatch \
    && install -d -m 1777 /sd
WORKDIR /app
COPY examples ./examples
USER planwatch
EXPOSE 8080 9400
ENTRYPOINT ["planwatch"]
CMD ["--help"]
