#!/bin/sh
# The first start makes the cluster (POSTGRES_USER as its superuser, with POSTGRES_PASSWORD, and
# the database POSTGRES_DB), as the official image does; every start then runs PostgreSQL as
# process 1, listening on every address with passwords required over TCP.
set -eu
: "${POSTGRES_PASSWORD:?the first start needs POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "postgres-entrypoint: made the cluster, user $user, database $db"
fi
exec postgres -c listen_addresses='*' "$@"
