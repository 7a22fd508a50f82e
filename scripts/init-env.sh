#!/usr/bin/env bash
# init-env.sh - writes .env for the container stack (docker compose) from
# .env.example, with every placeholder secret replaced by a fresh random one,
# so that `scripts/init-env.sh && docker compose up --build` starts a stack
# the services accept (they refuse the example's placeholders). An existing
# .env is left alone. The dashboard's operator password is generated too and
# printed once; its bcrypt hash goes into .env.
#
# The hash is made by the first of: htpasswd (apache2-utils), Go (the
# index-manager's own `hash-password`), or the index-manager image through
# docker compose. The password reaches each on its standard input, never on
# a command line (which `ps` shows to every user of the machine).
#
# .env appears only when everything succeeded: the file is written beside it
# under a temporary name (mode 600) and linked into place at the end, so a
# failed run leaves no .env for the next run to skip over.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -e .env ]; then
  echo ".env already exists; leaving it as it is" >&2
  exit 0
fi

rand() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# hash_password ENV_FILE reads the password on stdin and prints its bcrypt
# hash; ENV_FILE is the complete environment compose needs to run the image.
hash_password() {
  if command -v htpasswd >/dev/null; then
    htpasswd -niBC 12 operator | cut -d: -f2 | sed 's/^\$2y\$/$2a$/'
  elif command -v go >/dev/null; then
    # scripts/build.sh's configuration: where the project was built or
    # tested before, nothing is compiled again.
    (cd index-manager && CGO_ENABLED=0 GOWORK=off go run -trimpath ./cmd/index-manager hash-password)
  else
    docker compose --env-file "$1" run --rm --no-deps -T index-manager /app/index-manager hash-password
  fi
}

umask 077
admin_password=$(rand 12)
tmp=$(mktemp .env.XXXXXX)
trap 'rm -f "$tmp"' EXIT
while IFS= read -r line; do
  case "$line" in
    JWT_SECRET=*) echo "JWT_SECRET=$(rand 32)" ;;
    INDEX_MANAGER_ADMIN_PASSWORD_HASH=*) echo "INDEX_MANAGER_ADMIN_PASSWORD_HASH='placeholder'" ;;
    [A-Z_]*PASSWORD=change-me*) echo "${line%%=*}=$(rand 24)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <.env.example >"$tmp"
# printf is a shell builtin: the password is on no command line.
hash=$(printf '%s\n' "$admin_password" | hash_password "$tmp" | tail -n 1) || hash=""
case "$hash" in
  '$2'*) ;;
  *) echo "could not make a bcrypt hash of the operator password (got: ${hash:-nothing}); no .env written" >&2; exit 1 ;;
esac
sed -i "s|^INDEX_MANAGER_ADMIN_PASSWORD_HASH=.*|INDEX_MANAGER_ADMIN_PASSWORD_HASH='$hash'|" "$tmp"
if grep -v '^#' "$tmp" | grep -q 'change-me\|placeholder'; then
  echo "a placeholder is left; no .env written: $(grep -v '^#' "$tmp" | grep 'change-me\|placeholder')" >&2
  exit 1
fi
chmod 600 "$tmp"
# A hard link never replaces a file: a .env written meanwhile stays as it is.
if ! ln "$tmp" .env 2>/dev/null; then
  echo ".env appeared while this ran; leaving it as it is" >&2
  exit 1
fi
echo "wrote .env with fresh secrets; the dashboard login is: $(sed -n 's/^INDEX_MANAGER_ADMIN_USER=//p' .env) / $admin_password" >&2
