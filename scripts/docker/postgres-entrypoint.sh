#!/bin/sh
# Entrypoint of the gomogile-test/postgres image (scripts/docker-images.sh),
# installed as /usr/local/bin/gomogile-entrypoint. It does, for the
# environment the tests pass, what the official postgres image does:
#
#   POSTGRES_PASSWORD          the superuser's password (required unless
#                              POSTGRES_HOST_AUTH_METHOD=trust)
#   POSTGRES_USER              the superuser, default postgres
#   POSTGRES_DB                a database to create, default $POSTGRES_USER
#   POSTGRES_HOST_AUTH_METHOD  auth for TCP from anywhere, default scram-sha-256
#   POSTGRES_INITDB_ARGS       more initdb arguments
#   PGDATA                     default /var/lib/postgresql/data
#
# On the first start (no $PGDATA/PG_VERSION) it runs initdb, listens on '*',
# creates the database through a socket-only server, stops that, and then
# execs postgres in the foreground as the postgres user. Arguments starting
# with "-" are passed to postgres; any other command is run instead.
set -eu

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	exec "$@"
fi

: "${PGDATA:=/var/lib/postgresql/data}"
export PGDATA
pg_user=${POSTGRES_USER:-postgres}
pg_db=${POSTGRES_DB:-$pg_user}
auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

note() { echo "gomogile-entrypoint: $*" >&2; }
as_pg() { env HOME=/var/lib/postgresql setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
chmod 2775 /run/postgresql

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
		note "the database is uninitialised: set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)"
		exit 1
	fi
	note "initialising $PGDATA"
	pwopt=
	if [ -n "${POSTGRES_PASSWORD:-}" ]; then
		pwfile=$(mktemp)
		printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
		chown postgres "$pwfile"
		pwopt=--pwfile=$pwfile
	fi
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of words
	as_pg initdb --username="$pg_user" $pwopt --auth-local=trust --auth-host="$auth" \
		${POSTGRES_INITDB_ARGS:-} >/dev/null
	if [ -n "$pwopt" ]; then rm -f "$pwfile"; fi
	echo "host all all all $auth" >>"$PGDATA/pg_hba.conf"
	{
		echo "listen_addresses = '*'"
		# The image has no LLVM (see docker-images.sh): no JIT.
		echo "jit = off"
	} >>"$PGDATA/postgresql.conf"

	as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w -t 60 start >/dev/null
	if [ "$pg_db" != postgres ]; then
		echo 'CREATE DATABASE :"db";' |
			as_pg psql -X -q -v ON_ERROR_STOP=1 --username="$pg_user" --dbname=postgres -v db="$pg_db"
	fi
	as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	note "initialised"
fi

exec env HOME=/var/lib/postgresql setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
