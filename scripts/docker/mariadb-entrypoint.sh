#!/bin/sh
# Entrypoint of the gomogile-test/mariadb image (scripts/docker-images.sh),
# installed as /usr/local/bin/gomogile-entrypoint. It does, for the
# environment the tests pass, what the official mariadb/mysql images do:
#
#   MYSQL_ROOT_PASSWORD / MARIADB_ROOT_PASSWORD    root's password (root@localhost and root@'%')
#   MYSQL_ALLOW_EMPTY_PASSWORD / MARIADB_ALLOW_EMPTY_ROOT_PASSWORD   non-empty: allow no password
#   MYSQL_DATABASE / MARIADB_DATABASE              a database to create
#   MYSQL_USER + MYSQL_PASSWORD (or MARIADB_*)     a user with all rights on that database
#
# On the first start (an empty /var/lib/mysql) it runs mariadb-install-db,
# applies the above through a socket-only server, stops that, and then execs
# mariadbd in the foreground (listening on 0.0.0.0:3306), so `docker stop`'s
# SIGTERM reaches the server. Arguments starting with "-" are passed to
# mariadbd; any other command is run instead.
set -eu

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	exec "$@"
fi

DATADIR=/var/lib/mysql
SOCKET=/run/mysqld/mysqld.sock
root_pw=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}
allow_empty=${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-${MYSQL_ALLOW_EMPTY_PASSWORD:-}}
database=${MARIADB_DATABASE:-${MYSQL_DATABASE:-}}
user=${MARIADB_USER:-${MYSQL_USER:-}}
user_pw=${MARIADB_PASSWORD:-${MYSQL_PASSWORD:-}}

note() { echo "gomogile-entrypoint: $*" >&2; }
# sql_str: $1 as the body of a '...' SQL string literal.
sql_str() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e "s/'/\\\\'/g"; }
# sql_id: $1 as the body of a `...` identifier.
sql_id() { printf '%s' "$1" | sed -e 's/`/``/g'; }

mkdir -p /run/mysqld "$DATADIR"
chown mysql:mysql /run/mysqld "$DATADIR"

if [ ! -d "$DATADIR/mysql" ]; then
	if [ -z "$root_pw" ] && [ -z "$allow_empty" ]; then
		note "the database is uninitialised: set MYSQL_ROOT_PASSWORD (or MYSQL_ALLOW_EMPTY_PASSWORD=1)"
		exit 1
	fi
	note "initialising $DATADIR"
	mariadb-install-db --user=mysql --datadir="$DATADIR" --rpm \
		--auth-root-authentication-method=normal --cross-bootstrap --skip-test-db \
		--skip-log-bin --skip-name-resolve >/dev/null

	mariadbd --user=mysql --datadir="$DATADIR" --skip-networking --socket="$SOCKET" \
		--skip-log-bin --loose-innodb-buffer-pool-load-at-startup=0 \
		--loose-innodb-buffer-pool-dump-at-shutdown=0 &
	pid=$!
	i=0
	until mariadb --protocol=socket --socket="$SOCKET" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
			note "the initialising server did not start"
			exit 1
		fi
		sleep 0.1
	done

	pw=$(sql_str "$root_pw")
	# printf, not echo: dash's echo would eat the backslashes.
	{
		printf '%s\n' "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host NOT IN ('localhost'));" \
			"FLUSH PRIVILEGES;" \
			"ALTER USER 'root'@'localhost' IDENTIFIED VIA mysql_native_password USING PASSWORD('$pw') OR unix_socket;" \
			"CREATE USER 'root'@'%' IDENTIFIED BY '$pw';" \
			"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;" \
			"GRANT PROXY ON ''@'%' TO 'root'@'%' WITH GRANT OPTION;"
		if [ -n "$database" ]; then
			printf '%s\n' "CREATE DATABASE IF NOT EXISTS \`$(sql_id "$database")\`;"
		fi
		if [ -n "$user" ]; then
			printf '%s\n' "CREATE USER '$(sql_str "$user")'@'%' IDENTIFIED BY '$(sql_str "$user_pw")';"
			if [ -n "$database" ]; then
				printf '%s\n' "GRANT ALL ON \`$(sql_id "$database")\`.* TO '$(sql_str "$user")'@'%';"
			fi
		fi
	} | mariadb --protocol=socket --socket="$SOCKET" -uroot

	kill -TERM "$pid"
	wait "$pid" || true
	note "initialised"
fi

exec mariadbd --user=mysql --datadir="$DATADIR" --socket="$SOCKET" "$@"
