#!/usr/bin/env bash
# db.sh - back up and restore the three databases (classifier, publisher,
# index_manager) as custom-format dumps that pg_restore reads.
#
#   scripts/db.sh backup [DIR]          dump each database to DIR/<db>-<stamp>.dump (DIR: backups)
#   scripts/db.sh restore [DIR [STAMP]] restore the newest dump of each database in DIR, or the
#                                       dumps of STAMP (YYYYmmdd-HHMMSS); stop the services first
#
# Natively the databases are the ones CLASSIFIER_DATABASE_URL, PUBLISHER_DATABASE_URL and
# INDEX_MANAGER_DATABASE_URL name (eval "$(scripts/services.sh env)"), and pg_dump/pg_restore
# come from the host (Debian's postgresql-client). With NC_DB_COMPOSE=1 the dumps stream out of
# and into the compose stack's Postgres containers, so the host needs no Postgres client.
# A restore checks every dump first and restores nothing unless all three are readable; each
# database is restored in one transaction.
set -euo pipefail

dbs=(classifier publisher index_manager)

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

url_of() {
  case $1 in
  classifier) echo "${CLASSIFIER_DATABASE_URL:?set CLASSIFIER_DATABASE_URL (eval \"\$(scripts/services.sh env)\")}" ;;
  publisher) echo "${PUBLISHER_DATABASE_URL:?set PUBLISHER_DATABASE_URL}" ;;
  index_manager) echo "${INDEX_MANAGER_DATABASE_URL:?set INDEX_MANAGER_DATABASE_URL}" ;;
  esac
}

container_of() { echo "north-cloud-postgres-${1//_/-}"; }

dump() { # db file
  if [ "${NC_DB_COMPOSE:-0}" = 1 ]; then
    docker exec "$(container_of "$1")" pg_dump -U postgres -d "$1" --format=custom >"$2"
  else
    pg_dump "$(url_of "$1")" --format=custom --file="$2"
  fi
}

readable() { # db file
  if [ "${NC_DB_COMPOSE:-0}" = 1 ]; then
    docker exec -i "$(container_of "$1")" pg_restore --list <"$2" >/dev/null 2>&1
  else
    pg_restore --list "$2" >/dev/null 2>&1
  fi
}

restore() { # db file
  if [ "${NC_DB_COMPOSE:-0}" = 1 ]; then
    docker exec -i "$(container_of "$1")" pg_restore -U postgres -d "$1" --clean --if-exists --no-owner \
      --exit-on-error --single-transaction <"$2"
  else
    pg_restore --clean --if-exists --no-owner --exit-on-error --single-transaction --dbname="$(url_of "$1")" "$2"
  fi
}

cmd=${1:-}
dir=${2:-backups}
case $cmd in
backup)
  mkdir -p "$dir"
  stamp=$(date +%Y%m%d-%H%M%S)
  for db in "${dbs[@]}"; do
    file="$dir/$db-$stamp.dump"
    dump "$db" "$file.partial"
    mv "$file.partial" "$file"
    echo "$db: $file ($(wc -c <"$file") bytes)"
  done
  ;;
restore)
  stamp=${3:-}
  files=()
  for db in "${dbs[@]}"; do
    if [ -n "$stamp" ]; then
      file="$dir/$db-$stamp.dump"
    else
      file=$(ls -t "$dir/$db"-*.dump 2>/dev/null | head -n 1 || true)
    fi
    if [ -z "$file" ] || [ ! -s "$file" ]; then
      echo "db.sh restore: no dump of $db in $dir${stamp:+ for $stamp}; nothing restored" >&2
      exit 1
    fi
    if ! readable "$db" "$file"; then
      echo "db.sh restore: $file is not a readable dump; nothing restored" >&2
      exit 1
    fi
    files+=("$file")
  done
  for i in "${!dbs[@]}"; do
    restore "${dbs[$i]}" "${files[$i]}"
    echo "${dbs[$i]}: restored from ${files[$i]}"
  done
  ;;
*) usage ;;
esac
