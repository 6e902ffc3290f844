#!/usr/bin/env bash
# `make run`: a tracker on the embedded SQLite default plus one local storage
# node with two devices, registered and ready, all under var/run/.
# `make stop` (this script with "stop") ends both.
#
# Every port can be moved, so a second setup runs beside the first:
#   make run TRACKER_PORT=7101 MOGSTORED_PORT=7600 MOGSTORED_MGMT_PORT=7601 \
#     TRACKER_STATUS_PORT=7180 MOGSTORED_STATUS_PORT=7680 RUN_DIR=var/run2
#   make stop RUN_DIR=var/run2
# MOGSTORED_MGMT_PORT is also the tracker's mogstored_stream_port, where its
# monitor watches the node's I/O utilisation.
set -euo pipefail
cd "$(dirname "$0")/.."

port() { # name value: a TCP port or die
	[[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 65535 ] || { echo "run: $1=$2 is not a TCP port" >&2; exit 2; }
	echo "$2"
}
tracker_port=$(port TRACKER_PORT "${TRACKER_PORT:-7001}")
node_port=$(port MOGSTORED_PORT "${MOGSTORED_PORT:-7500}")
mgmt_port=$(port MOGSTORED_MGMT_PORT "${MOGSTORED_MGMT_PORT:-7501}")
tracker_status=127.0.0.1:$(port TRACKER_STATUS_PORT "${TRACKER_STATUS_PORT:-7080}")
node_status=127.0.0.1:$(port MOGSTORED_STATUS_PORT "${MOGSTORED_STATUS_PORT:-7580}")
dir=${RUN_DIR:-var/run}
case $dir in /*) ;; *) dir=$PWD/$dir ;; esac
bin=$PWD/bin
tracker=127.0.0.1:$tracker_port
node_http=127.0.0.1:$node_port
node_mgmt=127.0.0.1:$mgmt_port
export MOGTOOL_TRACKERS=$tracker

stop_one() {
	local pidfile=$dir/$1.pid
	[ -f "$pidfile" ] || return 0
	local pid
	pid=$(cat "$pidfile")
	if kill "$pid" 2>/dev/null; then
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		echo "stopped $1 (pid $pid)"
	fi
	rm -f "$pidfile"
}

if [ "${1:-}" = stop ]; then
	stop_one mogilefsd
	stop_one mogstored
	exit 0
fi

running() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

wait_port() { # host:port name logfile
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "$2 did not start; its log:" >&2
	tail -n 20 "$3" >&2
	exit 1
}

mkdir -p "$dir/mogdata/dev1" "$dir/mogdata/dev2"

if running mogstored; then
	echo "mogstored already running (pid $(cat "$dir/mogstored.pid"))"
else
	"$bin/mogstored" --skipconfig --docroot "$dir/mogdata" \
		--httplisten "$node_http" --mgmtlisten "$node_mgmt" --statuslisten "$node_status" >"$dir/mogstored.log" 2>&1 &
	echo $! >"$dir/mogstored.pid"
	wait_port "$node_http" mogstored "$dir/mogstored.log"
	echo "mogstored: http://$node_http docroot $dir/mogdata (log $dir/mogstored.log)"
fi

if running mogilefsd; then
	echo "mogilefsd already running (pid $(cat "$dir/mogilefsd.pid"))"
else
	"$bin/mogilefsd" --skipconfig --dsn "sqlite://$dir/mogilefs.db" \
		--listen "$tracker" --mogstored_stream_port "$mgmt_port" --status_listen "$tracker_status" >"$dir/mogilefsd.log" 2>&1 &
	echo $! >"$dir/mogilefsd.pid"
	wait_port "$tracker" mogilefsd "$dir/mogilefsd.log"
	echo "mogilefsd: $tracker on sqlite://$dir/mogilefs.db (log $dir/mogilefsd.log)"
fi

# Register the namespace once; a rerun finds it in place.
mog() { "$bin/mogtool" "$@" >/dev/null; }
"$bin/mogtool" domain list | grep -qE '^testdomain( |$)' || mog domain add testdomain
"$bin/mogtool" host list | grep -q 'local' || mog host add local --ip 127.0.0.1 --port "${node_http#*:}" --status alive
devices=$("$bin/mogtool" device list)
for dev in 1 2; do
	grep -qE "^dev$dev\b" <<<"$devices" || mog device add local "$dev"
done

cat <<MSG

gomogile is running: tracker $tracker, storage node $node_http with devices dev1 and dev2,
domain "testdomain" (default class: 2 copies).
Status page http://$tracker_status/ (metrics at /metrics); the node's metrics at http://$node_status/metrics.

  export MOGTOOL_TRACKERS=$tracker
  bin/mogtool upload --domain testdomain --key hello README.md
  bin/mogtool fetch  --domain testdomain --key hello
  bin/mogtool info   --domain testdomain --key hello

Stop both with: make stop${RUN_DIR:+ RUN_DIR=$RUN_DIR}
MSG
