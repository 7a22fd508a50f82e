#!/bin/sh
# Mounted into /docker-entrypoint-initdb.d of every Postgres container of docker-compose.yml.
# The official image runs it ONCE, when the data volume is first initialised (an existing
# volume is left alone: `docker compose down -v` to start over).
#
# Creates the service's LOGIN role APP_DB_USER and makes it the owner of POSTGRES_DB, so the
# service and its migrations connect as that role and never as the superuser.
set -e
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:?POSTGRES_DB must be set}"
: "${APP_DB_USER:?APP_DB_USER must be set}"
: "${APP_DB_PASSWORD:?APP_DB_PASSWORD must be set}"

psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    --set=app_role="$APP_DB_USER" \
    --set=app_db="$POSTGRES_DB" <<'SQL'
-- The password comes from the environment (\getenv), never from psql's command line,
-- which every process of the container can read.
\getenv app_password APP_DB_PASSWORD
CREATE ROLE :"app_role" LOGIN PASSWORD :'app_password';
-- Since Postgres 15 the public schema belongs to pg_database_owner, so the database owner
-- may create its tables there; nobody else may.
ALTER DATABASE :"app_db" OWNER TO :"app_role";
SQL
