#!/usr/bin/env bash
# db.sh - back up and restore the databases (classifier, publisher, index_manager) as
# custom-format dumps that pg_restore reads.
#
#   scripts/db.sh backup [--db DB]... [DIR]           dump each database to DIR/<db>-<stamp>.dump
#                                                     (DIR: backups)
#   scripts/db.sh restore [--db DB]... [DIR [STAMP]]  restore the newest dump of each database in
#                                                     DIR, or the dumps of STAMP (YYYYmmdd-HHMMSS);
#                                                     stop the services using them first
#
# --db (classifier, publisher or index_manager; index-manager is accepted too) limits the run to
# that database, as `task db:backup:classifier` does; without it all three are dumped or restored.
#
# Natively the databases are the ones CLASSIFIER_DATABASE_URL, PUBLISHER_DATABASE_URL and
# INDEX_MANAGER_DATABASE_URL name (eval "$(scripts/services.sh env)"), and pg_dump/pg_restore
# come from the host (Debian's postgresql-client). A password in a URL reaches them as
# PGPASSWORD in their environment, never on their command line (which every user of the machine
# can read in ps); a URL without one leaves libpq to ~/.pgpass or PGPASSFILE. With
# NC_DB_COMPOSE=1 the dumps stream out of and into the compose stack's Postgres containers, so
# the host needs no Postgres client.
# Dumps hold every row, so they are written with umask 077: the files 0600, a new DIR 0700.
# A restore checks every dump first and restores nothing unless all of them are readable; each
# database is restored in one transaction.
set -euo pipefail

all_dbs=(classifier publisher index_manager)

usage() {
  # The comment block at the top of this file.
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}

die() {
  echo "db.sh: $*" >&2
  exit 1
}

url_of() {
  case $1 in
  classifier) echo "${CLASSIFIER_DATABASE_URL:?set CLASSIFIER_DATABASE_URL (eval \"\$(scripts/services.sh env)\")}" ;;
  publisher) echo "${PUBLISHER_DATABASE_URL:?set PUBLISHER_DATABASE_URL (eval \"\$(scripts/services.sh env)\")}" ;;
  index_manager) echo "${INDEX_MANAGER_DATABASE_URL:?set INDEX_MANAGER_DATABASE_URL (eval \"\$(scripts/services.sh env)\")}" ;;
  esac
}

# pct_decode S: S with its %XX escapes decoded (a URL's password is percent-encoded; PGPASSWORD
# is the password itself).
pct_decode() {
  local s=${1//\\/\\\\}
  printf '%b' "${s//%/\\x}"
}

# with_url DB CMD ARGS...: runs CMD with the connection URL of DB in place of the word @URL,
# the URL's password moved into PGPASSWORD. The password is percent-decoded; the user name
# stays in the URL, where libpq decodes it.
with_url() {
  local db=$1 url rest userinfo user password
  shift
  url=$(url_of "$db")
  case $url in
  postgres://* | postgresql://*) ;;
  *)
    [[ $url != *password=* ]] || die "the URL of $db is a key=value string with a password; give it as postgres://user:password@host/db, or put the password in ~/.pgpass"
    ;;
  esac
  [[ $url != *'?'*password=* ]] || die "the URL of $db carries password= as a parameter; give it as postgres://user:password@host/db, or put the password in ~/.pgpass"
  password=
  if [[ $url == *://* ]]; then
    rest=${url#*://}
    # libpq's rule: user[:password] is what comes before the first @, if no / comes first.
    userinfo=${rest%%@*}
    if [[ $rest == *@* && $userinfo != */* && $userinfo == *:* ]]; then
      user=${userinfo%%:*}
      password=$(pct_decode "${userinfo#*:}")
      url="${url%%://*}://$user@${rest#*@}"
    fi
  fi
  local args=() a
  for a in "$@"; do
    [[ $a == @URL ]] && args+=("$url") || args+=("$a")
  done
  if [[ -n $password ]]; then
    PGPASSWORD=$password "${args[@]}"
  else
    "${args[@]}"
  fi
}

container_of() { echo "north-cloud-postgres-${1//_/-}"; }

dump() { # db file
  if [ "${NC_DB_COMPOSE:-0}" = 1 ]; then
    docker exec "$(container_of "$1")" pg_dump -U postgres -d "$1" --format=custom >"$2"
  else
    with_url "$1" pg_dump --dbname @URL --format=custom --file="$2"
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
    with_url "$1" pg_restore --clean --if-exists --no-owner --exit-on-error --single-transaction --dbname @URL "$2"
  fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
dbs=()
pos=()
while [ $# -gt 0 ]; do
  case $1 in
  --db)
    [ $# -ge 2 ] || usage
    case $2 in
    classifier | publisher | index_manager) dbs+=("$2") ;;
    index-manager) dbs+=(index_manager) ;;
    *) die "--db $2: unknown database (classifier, publisher, index_manager)" ;;
    esac
    shift 2
    ;;
  --db=*) set -- --db "${1#--db=}" "${@:2}" ;;
  -h | --help) usage ;;
  -*) die "unknown option $1" ;;
  *)
    pos+=("$1")
    shift
    ;;
  esac
done
[ ${#dbs[@]} -gt 0 ] || dbs=("${all_dbs[@]}")
dir=${pos[0]:-backups}

case $cmd in
backup)
  [ ${#pos[@]} -le 1 ] || usage
  umask 077
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
  [ ${#pos[@]} -le 2 ] || usage
  stamp=${pos[1]:-}
  files=()
  for db in "${dbs[@]}"; do
    if [ -n "$stamp" ]; then
      file="$dir/$db-$stamp.dump"
    else
      file=$(ls -t "$dir/$db"-*.dump 2>/dev/null | head -n 1 || true)
    fi
    if [ -z "$file" ] || [ ! -s "$file" ]; then
      die "restore: no dump of $db in $dir${stamp:+ for $stamp}; nothing restored"
    fi
    if ! readable "$db" "$file"; then
      die "restore: $file is not a readable dump; nothing restored"
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
