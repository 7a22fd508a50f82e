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
# docker compose.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -e .env ]; then
  echo ".env already exists; leaving it as it is" >&2
  exit 0
fi

rand() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

hash_password() {
  if command -v htpasswd >/dev/null; then
    htpasswd -nbBC 12 operator "$1" | cut -d: -f2 | sed 's/^\$2y\$/$2a$/'
  elif command -v go >/dev/null; then
    printf '%s' "$1" | (cd index-manager && go run ./cmd/index-manager hash-password)
  else
    printf '%s' "$1" | docker compose run --rm --no-deps -T index-manager /app/index-manager hash-password
  fi
}

admin_password=$(rand 12)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
while IFS= read -r line; do
  case "$line" in
    JWT_SECRET=*) echo "JWT_SECRET=$(rand 32)" ;;
    INDEX_MANAGER_ADMIN_PASSWORD_HASH=*) echo "INDEX_MANAGER_ADMIN_PASSWORD_HASH='placeholder'" ;;
    [A-Z_]*PASSWORD=change-me*) echo "${line%%=*}=$(rand 24)" ;;
    *) printf '%s\n' "$line" ;;
  esac
done <.env.example >"$tmp"
# Compose interpolates every secret, so the file must be complete before the
# image-based hash can run; the hash line is replaced last.
cp "$tmp" .env
chmod 600 .env
hash=$(hash_password "$admin_password" | tail -n 1)
case "$hash" in
  '$2'*) ;;
  *) echo "could not make a bcrypt hash of the operator password (got: $hash)" >&2; rm -f .env; exit 1 ;;
esac
sed "s|^INDEX_MANAGER_ADMIN_PASSWORD_HASH=.*|INDEX_MANAGER_ADMIN_PASSWORD_HASH='$hash'|" "$tmp" >.env
chmod 600 .env
if grep -v '^#' .env | grep -q 'change-me'; then
  echo "a placeholder is left in .env: $(grep -v '^#' .env | grep 'change-me')" >&2
  exit 1
fi
echo "wrote .env with fresh secrets; the dashboard login is: $(sed -n 's/^INDEX_MANAGER_ADMIN_USER=//p' .env) / $admin_password" >&2
