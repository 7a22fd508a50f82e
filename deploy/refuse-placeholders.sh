#!/bin/sh
# refuse-placeholders.sh - the entrypoint wrapper of the containers whose secrets no service
# of ours reads (the Postgres superuser's, Grafana's admin's): it refuses to start while one
# still holds a placeholder of .env.example (every one contains "change-me"), as the services
# refuse theirs, and otherwise runs the image's own entrypoint.
#
# Usage: refuse-placeholders.sh VAR[:ENV_NAME]... -- entrypoint [args...]
# VAR is the container's variable, ENV_NAME the .env variable it comes from (named in the
# message). Exit status 2 names every placeholder left.
set -eu
bad=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  var=${1%%:*}
  name=${1#*:}
  case "$var" in
    '' | [0-9]* | *[!A-Za-z0-9_]*) echo "refuse-placeholders.sh: not a variable name: $var" >&2; exit 2 ;;
  esac
  eval "value=\${$var-}"
  case "$value" in
    *[Cc][Hh][Aa][Nn][Gg][Ee]-[Mm][Ee]*) bad="$bad $name" ;;
  esac
  shift
done
if [ $# -eq 0 ]; then
  echo "refuse-placeholders.sh: usage: refuse-placeholders.sh VAR[:ENV_NAME]... -- entrypoint [args...]" >&2
  exit 2
fi
shift # the --
if [ -n "$bad" ]; then
  echo "refusing to start: the placeholder of .env.example (public: it contains \"change-me\") is left in:${bad}; run scripts/init-env.sh or set secrets of your own in .env" >&2
  exit 2
fi
exec "$@"
