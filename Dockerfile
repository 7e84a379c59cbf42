# Mnemo: one image for every process (migrate, bots, worker, beat); the command picks the role.
# Build: docker compose build   (or: docker build -t mnemo:local .)
# Run:   docker run --rm --env-file .env mnemo:local            -> `mnemo doctor`
#        docker run --rm --env-file .env mnemo:local mnemo worker
FROM python:3.11-slim

# PYTHONDONTWRITEBYTECODE: the sources are read-only for the app user; they are compiled at build.
# TMPDIR: jieba writes its dictionary cache (jieba.cache) to the temp dir; /tmp is world-writable.
# MNEMO_DATA_DIR: a directory the app user owns (exports, caches; the embedded database is never
# used here because DATABASE_URL is always set in docker-compose.yml).
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    TMPDIR=/tmp \
    MNEMO_DATA_DIR=/var/lib/mnemo

# The non-root user the processes run as (numeric id so `runAsNonRoot` checks can verify it).
RUN groupadd --system --gid 10001 mnemo \
 && useradd --system --uid 10001 --gid mnemo --home-dir /home/mnemo --create-home \
            --shell /usr/sbin/nologin mnemo \
 && mkdir -p /var/lib/mnemo \
 && chown mnemo:mnemo /var/lib/mnemo \
 && chmod 1777 /tmp

WORKDIR /app

# Dependencies first, in their own layer: it is rebuilt only when pyproject.toml changes.
# Only [project].dependencies are installed: no dev extra, no local-embeddings extra (PyTorch).
COPY pyproject.toml ./
RUN python -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; open('/tmp/requirements.txt', 'w').write('\n'.join(deps) + '\n')" \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt \
 && ! pip show --quiet torch 2>/dev/null

# Then the sources. Editable install: the package stays at /app, so shared/db/migrate.py finds
# /app/alembic (it looks for alembic/ beside the source tree, not in site-packages).
COPY . .
RUN pip install --no-cache-dir --no-deps -e . \
 && python -m compileall -q bot shared worker alembic \
 && python -c "from shared.db.migrate import ALEMBIC_DIR; assert (ALEMBIC_DIR / 'env.py').is_file(), ALEMBIC_DIR" \
 && mnemo --help > /dev/null

USER 10001:10001

CMD ["mnemo", "doctor"]
