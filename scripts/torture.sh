#!/usr/bin/env bash
# The long edition of the torture program (make torture): one run per
# backend, each on a database of its own — a temporary SQLite file, a
# private MariaDB, a private PostgreSQL primary with a synchronous standby
# (crashed and restarted, and failed over again and again: every fault
# kind in one run), and a private PostgreSQL behind PgBouncer in
# transaction mode (the pooler deployment). Prints every run's summary line at
# the end and fails if any run found a violation or could not run.
#
# With LOCKS=etcd every run (but SQLite's, which keeps its locks in its
# process) keeps its locks in a private 3-member etcd cluster, whose
# members are killed (the leader too) and partitioned from the trackers;
# and a run on a private 3-node MariaDB Galera cluster is added (galera,
# which needs the locks outside the database), its nodes killed and
# rejoining.
#
#   [LOCKS=etcd] scripts/torture.sh [sqlite|mysql|postgres|galera|all] [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
backend="${1:-all}"
duration="${2:-120s}"
locks="${LOCKS:-}"
case "$locks" in
"" | etcd) ;;
*) echo "torture: LOCKS=$locks: want etcd or nothing" >&2; exit 2 ;;
esac
go build -o bin/ ./cmd/gomogile-torture
case "$backend" in
sqlite) runs=(sqlite) ;;
mysql) runs=(mysql) ;;
postgres) runs=(postgres postgres-pgbouncer) ;;
galera) runs=(galera) ;;
all) runs=(sqlite mysql postgres postgres-pgbouncer galera) ;;
*) echo "torture: BACKEND=$backend: want sqlite, mysql, postgres, galera or all" >&2; exit 2 ;;
esac
if [ "$backend" = galera ] && [ -z "$locks" ]; then
	echo "torture: BACKEND=galera needs LOCKS=etcd (a Galera node's GET_LOCK is its own)" >&2
	exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
status=0
summaries=()
for r in "${runs[@]}"; do
	if [ "$r" = galera ] && [ -z "$locks" ]; then
		continue
	fi
	if [ "$r" = sqlite ]; then
		if [ -n "$locks" ]; then
			continue
		fi
		args=(--dsn "sqlite://$tmp/torture.db")
	else
		args=(--private "$r")
		if [ -n "$locks" ]; then
			args+=(--locks "$locks")
		fi
	fi
	echo "== torture $r${locks:+ with $locks locks} for $duration" >&2
	if ! bin/gomogile-torture "${args[@]}" --duration "$duration" | tee "$tmp/$r.out"; then
		status=1
	fi
	line="$(grep '^torture: backend=' "$tmp/$r.out" | tail -1 || true)"
	summaries+=("$r${locks:+/$locks}: ${line:-no summary (the run could not be carried out)}")
done
printf '%s\n' "${summaries[@]}"
exit $status
