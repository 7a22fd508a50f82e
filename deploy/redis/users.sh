#!/bin/sh
# users.sh - the Redis ACL users of the pipeline (docs/roles.md, "Redis users"), written as an
# ACL file for redis-server --aclfile, from passwords passed in the environment (never on a
# command line, never in the file: it holds their SHA-256 only).
#
#   users.sh FILE                  write FILE (mode 600)
#   users.sh FILE -- COMMAND...    write FILE, then run COMMAND (the container's entrypoint:
#                                  the image's docker-entrypoint.sh when it has one)
#
# Passwords (each required; one holding the "change-me" placeholder of .env.example is refused):
#   REDIS_ADMIN_PASSWORD       user admin: every command, key and channel (operators, tests)
#   REDIS_PUBLISHER_PASSWORD   user publisher: PUBLISH/SPUBLISH on the content channels and the
#                              probe channel, XADD to the mirror streams stream:*, PING
#   REDIS_DASHBOARD_PASSWORD   user dashboard: (P/S)SUBSCRIBE on the content channels, PING
#   REDIS_SUBSCRIBER_PASSWORD  user subscriber: as dashboard, and reads the mirror streams
# The default user is off: a connection that does not authenticate can run nothing.
#
# docker-compose.yml runs it as the redis service's entrypoint; scripts/services.sh writes the
# native Redis's file with it.
set -eu

if [ $# -lt 1 ]; then
  echo "usage: users.sh FILE [-- COMMAND...]" >&2
  exit 2
fi
file=$1
shift

bad=""
value=""
for var in REDIS_ADMIN_PASSWORD REDIS_PUBLISHER_PASSWORD REDIS_DASHBOARD_PASSWORD REDIS_SUBSCRIBER_PASSWORD; do
  eval "value=\${$var-}"
  case "$value" in
    '') bad="$bad $var(unset)" ;;
    *[Cc][Hh][Aa][Nn][Gg][Ee]-[Mm][Ee]*) bad="$bad $var(placeholder)" ;;
    *[!A-Za-z0-9._-]*) bad="$bad $var(use letters, digits, '-', '_' and '.' only: it goes into URLs)" ;;
  esac
done
if [ -n "$bad" ]; then
  echo "users.sh: refusing to start Redis: no usable password in:$bad; run scripts/init-env.sh or set them in .env" >&2
  exit 2
fi

hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

# The content channels of docs/architecture.md ("Channels and the message").
channels='resetchannels &articles:* &content:*'
subscribe='+ping +subscribe +psubscribe +ssubscribe +unsubscribe +punsubscribe +sunsubscribe'
# What a client of a Redis Cluster reads to route its commands: the slot map and the command
# table (read-only; on a single Redis CLUSTER answers that cluster support is off).
topology='+cluster|slots +cluster|shards +cluster|nodes +cluster|info +command +readonly'

umask 077
tmp="$file.tmp.$$"
cat >"$tmp" <<EOF
user default off resetpass resetkeys resetchannels nocommands
user admin on #$(hash "$REDIS_ADMIN_PASSWORD") ~* &* +@all
user publisher on #$(hash "$REDIS_PUBLISHER_PASSWORD") resetkeys %W~stream:* $channels &publisher:probe nocommands +ping +publish +spublish +xadd $topology
user dashboard on #$(hash "$REDIS_DASHBOARD_PASSWORD") resetkeys $channels nocommands $subscribe $topology
user subscriber on #$(hash "$REDIS_SUBSCRIBER_PASSWORD") resetkeys %R~stream:* $channels nocommands $subscribe +xread +xrange +xrevrange +xlen $topology
EOF
# The official image starts as root and drops to user redis, which must read the file.
if [ "$(id -u)" = 0 ] && id redis >/dev/null 2>&1; then
  chown redis "$tmp"
fi
mv "$tmp" "$file"

[ $# -gt 0 ] || exit 0
if [ "$1" != "--" ] || [ $# -lt 2 ]; then
  echo "usage: users.sh FILE [-- COMMAND...]" >&2
  exit 2
fi
shift
if command -v docker-entrypoint.sh >/dev/null 2>&1; then
  exec docker-entrypoint.sh "$@"
fi
exec "$@"
