#!/usr/bin/env bash
# Makes a Docker engine answer on this machine, for the tests' dockertest
# path (internal/testkit/testdb) when no GOMOGILE_TEST_*_DSN is set.
#
#   scripts/docker-engine.sh        # idempotent; prints one line saying what it did
#
# If `docker version` already gets an answer from $DOCKER_HOST (or the default
# socket), it does nothing. Otherwise it installs Debian's docker.io when
# dockerd is missing and starts dockerd in the background, without systemd:
#
#   - socket: the unix socket of $DOCKER_HOST when that is unix://..., else
#     /run/docker.sock (= /var/run/docker.sock, the default);
#   - loopback only: --ip=127.0.0.1 makes published ports listen on 127.0.0.1,
#     and --iptables=false --ip-forward=false --ip-masq=false keep the host's
#     firewall and forwarding as they are, so containers reach the host (over
#     the docker0 bridge) and nothing beyond it;
#   - log /var/log/gomogile-dockerd.log, pid file /run/gomogile-dockerd.pid.
#
# It waits up to GOMOGILE_DOCKERD_WAIT seconds (default 60) for the engine to
# answer and exits non-zero, with the log's tail, when it does not.
# A tcp:// DOCKER_HOST that does not answer is reported, not started.
set -euo pipefail

log() { printf 'docker-engine: %s\n' "$*" >&2; }
say() { printf 'docker-engine: %s\n' "$*"; }

LOG=/var/log/gomogile-dockerd.log
PIDFILE=/run/gomogile-dockerd.pid
WAIT=${GOMOGILE_DOCKERD_WAIT:-60}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		log "need root for: $*"; return 1; fi
}

# engine_up: does `docker version` get a server answer (within 10 s)?
engine_up() {
	command -v docker >/dev/null 2>&1 || return 1
	timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

server_version() { timeout 10 docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'; }

host=${DOCKER_HOST:-}
if engine_up; then
	say "engine at ${host:-the default socket} answers (server $(server_version)); nothing to do"
	exit 0
fi

case "$host" in
"" ) sock=/run/docker.sock ;;
unix://*) sock=${host#unix://} ;;
*)
	log "DOCKER_HOST=$host does not answer; this script only starts a local engine (unset DOCKER_HOST or use unix://)"
	exit 1 ;;
esac

# A dockerd we started earlier that is still coming up: wait for it rather
# than start a second one on the same socket.
if [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
	started_by="an already running dockerd (pid $(cat "$PIDFILE"))"
else
	did_install=
	if ! command -v dockerd >/dev/null 2>&1; then
		t0=$(date +%s)
		# Debian's maintainer scripts start services through invoke-rc.d;
		# with no policy-rc.d that would start a dockerd with the package's
		# defaults (iptables and all). Forbid it for the install only.
		tmp_policy=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
			as_root chmod 755 /usr/sbin/policy-rc.d
			tmp_policy=1
			trap 'as_root rm -f /usr/sbin/policy-rc.d' EXIT
		fi
		log "installing docker.io"
		# Refresh the lists only when the candidate is unknown.
		if ! apt-cache show docker.io >/dev/null 2>&1; then as_root apt-get update -qq; fi
		apt_out=$(mktemp)
		if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >"$apt_out" 2>&1; then
			cat "$apt_out" >&2; rm -f "$apt_out"; exit 1
		fi
		rm -f "$apt_out"
		if [ -n "$tmp_policy" ]; then as_root rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
		did_install="installed docker.io in $(( $(date +%s) - t0 )) s, "
	fi
	# The package's docker CLI may be shadowed by another one in PATH
	# (/usr/local/bin/docker); either talks to this engine.
	as_root mkdir -p "$(dirname "$sock")"
	as_root touch "$LOG"
	# setsid + nohup: the daemon outlives this script and its terminal.
	dockerd_args=(
		--host="unix://$sock"
		--pidfile="$PIDFILE"
		--iptables=false --ip-forward=false --ip-masq=false
		--ip=127.0.0.1
	)
	sudo=()
	if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
	# A plain background command (no function, no subshell) leaves no
	# waiting shell behind.
	"${sudo[@]}" setsid nohup dockerd "${dockerd_args[@]}" >>"$LOG" 2>&1 </dev/null &
	started_by="${did_install}started dockerd"
fi

export DOCKER_HOST="unix://$sock"
deadline=$(( $(date +%s) + WAIT ))
until engine_up; do
	if [ "$(date +%s)" -ge "$deadline" ]; then
		log "dockerd did not answer on $DOCKER_HOST within ${WAIT}s; last lines of $LOG:"
		tail -n 20 "$LOG" >&2 || true
		exit 1
	fi
	sleep 0.5
done
if [ "$started_by" != "${started_by%started dockerd}" ] && [ -s "$PIDFILE" ]; then
	started_by="$started_by (pid $(cat "$PIDFILE"))"
fi
hint=
if [ -z "$host" ] && [ "$sock" != /run/docker.sock ] && [ "$sock" != /var/run/docker.sock ]; then hint=" (export DOCKER_HOST=$DOCKER_HOST)"; fi
say "${started_by} on unix://$sock, loopback-only (server $(server_version), log $LOG)$hint"
