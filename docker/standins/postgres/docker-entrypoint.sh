#!/usr/bin/env bash
# The official image's entrypoint, reduced to what it does on a first start: initdb with
# POSTGRES_USER/POSTGRES_PASSWORD, password logins from other hosts (scram-sha-256),
# POSTGRES_DB created, /docker-entrypoint-initdb.d/*.sql run against it; later starts just start.
set -Eeuo pipefail
for arg in "$@"; do
  case $arg in -V|--version|--help|-\?|--describe-config|-C) exec "$@" ;; esac
done
if [ "${1:-}" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
  exec gosu postgres "$0" "$@"
fi
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  initdb --username="$user" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") -D "$PGDATA" \
    ${POSTGRES_INITDB_ARGS:-}
  printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$user" --no-psqlrc --dbname postgres \
      -c "CREATE DATABASE \"$db\""
  fi
  for file in /docker-entrypoint-initdb.d/*; do
    case $file in
      *.sql) psql -v ON_ERROR_STOP=1 --username "$user" --no-psqlrc --dbname "$db" -f "$file" ;;
      *.sh) . "$file" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
if [ "${1:-}" = postgres ]; then
  exec "$@" -c listen_addresses='*'
fi
exec "$@"
