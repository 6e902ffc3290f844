#!/usr/bin/env bash
# Makes the database servers the tests need available on this machine:
# PostgreSQL and MariaDB on 127.0.0.1, trust/empty-password access for the
# tests, and a `test` database in each. It starts a server that is down and
# installs one that is missing (Debian packages), so a fresh machine works.
# It is idempotent and quick when everything already runs.
# It also installs the binaries internal/testkit/dbinstance starts private servers
# from (PostgreSQL's initdb/pg_basebackup, mariadb-install-db, PgBouncer,
# the Galera library and rsync, etcd, whose own service is disabled);
# those are only installed, never started here; Chromium, for the
# status page's headless-browser test; and perl, LWP and IO::WrapTie from
# Debian for the tests that drive the original Perl client. Debian does
# not package MogileFS::Client itself: those tests run when PERL5LIB (or
# the system) provides it, and skip saying so otherwise.
set -euo pipefail

log() { printf 'test-servers: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		log "need root for: $*"; return 1; fi
}

apt_updated=
apt_install() {
	if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # seconds, command...
	local n=$1; shift
	for _ in $(seq 1 $((n * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
	return 1
}

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }
pg_ok() { psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; }

ensure_postgres() {
	if ! command -v pg_ctlcluster >/dev/null; then
		log "installing PostgreSQL"
		apt_install postgresql postgresql-client
	fi
	local ver
	ver=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$ver" ]; then
		log "no PostgreSQL cluster configured"; return 1
	fi
	if ! pg_up; then
		log "starting PostgreSQL $ver"
		as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
		wait_for 60 pg_up || { log "PostgreSQL did not come up"; return 1; }
	fi
	if ! pg_ok; then
		# A fresh Debian cluster uses peer/scram auth; the tests use trust
		# on loopback only, as the machines this project runs on do.
		log "enabling trust auth on loopback"
		local hba=/etc/postgresql/$ver/main/pg_hba.conf
		as_root sh -c "printf '%s\n' 'local all all trust' 'host all all 127.0.0.1/32 trust' 'host all all ::1/128 trust' > '$hba'"
		as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
		wait_for 30 pg_ok || { log "cannot connect to PostgreSQL"; return 1; }
	fi
	psql -h 127.0.0.1 -U postgres -d postgres -Atqc "select 1 from pg_roles where rolname='root'" | grep -q 1 ||
		psql -h 127.0.0.1 -U postgres -d postgres -qc 'create role root superuser login'
	psql -h 127.0.0.1 -U postgres -d postgres -Atqc "select 1 from pg_database where datname='test'" | grep -q 1 ||
		psql -h 127.0.0.1 -U postgres -d postgres -qc 'create database test'
}

my_up() { mysqladmin -h 127.0.0.1 -P 3306 -uroot ping; }
my_ok() { mysql -h 127.0.0.1 -P 3306 -uroot -e 'select 1'; }

ensure_mariadb() {
	if ! command -v mariadbd >/dev/null && ! [ -x /usr/sbin/mariadbd ]; then
		log "installing MariaDB"
		apt_install mariadb-server mariadb-client
	fi
	if ! my_up >/dev/null 2>&1; then
		log "starting MariaDB"
		as_root install -d -o mysql -g mysql /run/mysqld 2>/dev/null || true
		as_root start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
		wait_for 60 my_up || { log "MariaDB did not come up"; return 1; }
	fi
	if ! my_ok >/dev/null 2>&1; then
		# Debian's root uses unix_socket auth; the tests connect over TCP
		# with an empty password, as the machines this project runs on do.
		log "allowing root on loopback with an empty password"
		as_root mysql -uroot -e "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(''); FLUSH PRIVILEGES;"
		wait_for 10 my_ok || { log "cannot connect to MariaDB"; return 1; }
	fi
	mysql -h 127.0.0.1 -P 3306 -uroot -e 'CREATE DATABASE IF NOT EXISTS test'
}

# internal/testkit/dbinstance runs PgBouncer itself (as the postgres user, on a
# port of its own); the Debian package is only needed for the binary.
ensure_pgbouncer() {
	if ! command -v pgbouncer >/dev/null && ! [ -x /usr/sbin/pgbouncer ]; then
		log "installing PgBouncer"
		apt_install pgbouncer
	fi
}

# internal/testkit/dbinstance starts private MariaDB Galera clusters (store/mysql's
# Galera tests) from the installed mariadbd, the Galera library and the
# rsync state transfer; like the other private servers, never started here.
ensure_galera() {
	local lib
	for lib in /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so; do
		[ -f "$lib" ] && break
	done
	if ! [ -f "$lib" ] || ! command -v rsync >/dev/null; then
		log "installing Galera and rsync"
		apt_install galera-4 rsync
	fi
}

# internal/testkit/dbinstance starts private etcd clusters (the etcd lock service's
# tests) from the installed binary, on ports of their own. The package's own
# service would hold 2379/2380 and run for nothing: it is stopped and
# disabled, now and on every later boot.
ensure_etcd() {
	if ! command -v etcd >/dev/null && ! [ -x /usr/bin/etcd ]; then
		log "installing etcd"
		# etcdctl (etcd-client) is for a developer's debugging only.
		apt_install etcd-server etcd-client || apt_install etcd-server
	fi
	if [ -d /run/systemd/system ]; then
		if systemctl is-enabled --quiet etcd.service 2>/dev/null || systemctl is-active --quiet etcd.service; then
			log "stopping and disabling the system etcd service"
			as_root systemctl disable --now etcd.service >/dev/null 2>&1
		fi
	elif [ -x /etc/init.d/etcd ]; then
		if ls /etc/rc[2345].d/S[0-9][0-9]etcd >/dev/null 2>&1; then
			log "disabling the system etcd service"
			as_root update-rc.d etcd disable >/dev/null 2>&1
		fi
		# The service runs as the etcd user; the private clusters never do.
		if pgrep -u etcd -x etcd >/dev/null; then
			log "stopping the system etcd service"
			as_root /etc/init.d/etcd stop >/dev/null 2>&1 ||
				as_root start-stop-daemon --stop --oknodo --retry 10 --user etcd --exec /usr/bin/etcd >/dev/null
		fi
	fi
}

# The status page's test (tracker/status_browser_test.go) drives Debian's
# Chromium headless through chromedp; only the binary is needed.
ensure_chromium() {
	if ! command -v chromium >/dev/null && ! [ -x /usr/bin/chromium ]; then
		log "installing Chromium"
		apt_install chromium
	fi
}

# The Perl client is a nice-to-have for a developer (its tests skip when it
# is missing); only its Debian-packaged dependencies are installed here.
ensure_perl_client() {
	if ! command -v perl >/dev/null || ! perl -MLWP::UserAgent -MIO::WrapTie -e1 >/dev/null 2>&1; then
		log "installing perl, LWP and IO::WrapTie"
		apt_install perl libwww-perl libio-stringy-perl
	fi
	perl -MMogileFS::Client -e1 >/dev/null 2>&1 ||
		log "note: MogileFS::Client is not installed (Debian has no package); the Perl client tests skip unless PERL5LIB provides it"
}

# The dockertest path (scripts/test.sh's last step) on a real engine: CI
# (CI set) or GOMOGILE_TEST_DOCKER=1 starts Debian's dockerd loopback-only
# when no engine answers, and builds the MariaDB and PostgreSQL images from
# Debian packages when their tags are missing. GOMOGILE_TEST_DOCKER=0 skips
# it, as does a developer's machine by default.
want_docker() {
	case "${GOMOGILE_TEST_DOCKER:-}" in
	1) return 0 ;;
	0) return 1 ;;
	esac
	[ -n "${CI:-}" ]
}

ensure_docker() {
	want_docker || return 0
	bash "$(dirname "$0")/docker-engine.sh"
	bash "$(dirname "$0")/docker-images.sh"
}

ensure_postgres
ensure_mariadb
ensure_pgbouncer
ensure_galera
ensure_etcd
ensure_chromium
ensure_perl_client
ensure_docker
log "PostgreSQL, MariaDB, PgBouncer, Galera, etcd, Chromium and the Perl client's dependencies ready"
