#!/bin/sh
# Mounted into /docker-entrypoint-initdb.d of postgres-publisher only; runs once, on a new
# data volume, after 10-app-role.sh.
#
# Creates the LOGIN role OUTBOX_WRITER_USER ("classifier") that the classifier uses for
# CLASSIFIER_OUTBOX_DATABASE_URL. The role gets nothing but CONNECT here: the publisher's
# migrations own classified_outbox and GRANT INSERT on it (and USAGE on its sequence, if any)
# to this role.
# Same shape as 10-app-role.sh: kept apart because each init script is mounted on its own
# (this one into postgres-publisher only) and the image runs them as they are.
set -e
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:?POSTGRES_DB must be set}"
: "${OUTBOX_WRITER_USER:?OUTBOX_WRITER_USER must be set}"
: "${OUTBOX_WRITER_PASSWORD:?OUTBOX_WRITER_PASSWORD must be set}"

psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    --set=writer_role="$OUTBOX_WRITER_USER" \
    --set=app_db="$POSTGRES_DB" <<'SQL'
-- The password comes from the environment (\getenv), never from psql's command line,
-- which every process of the container can read.
\getenv writer_password OUTBOX_WRITER_PASSWORD
CREATE ROLE :"writer_role" LOGIN PASSWORD :'writer_password';
GRANT CONNECT ON DATABASE :"app_db" TO :"writer_role";
SQL
