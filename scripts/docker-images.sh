#!/usr/bin/env bash
# Builds the database images the tests' dockertest path can use on a machine
# that reaches no image registry, from Debian packages only:
#
#   gomogile-test/mariadb:10.11-bookworm   MariaDB 10.11, port 3306
#   gomogile-test/postgres:15-bookworm     PostgreSQL 15, port 5432
#
# Usage (root; the engine must answer, see scripts/docker-engine.sh):
#
#   scripts/docker-images.sh            # build the missing ones; prints the tags
#   FORCE=1 scripts/docker-images.sh    # rebuild both
#   scripts/docker-images.sh --tag mariadb   # print a tag (mariadb, postgres)
#
#   GOMOGILE_TEST_MYSQL_IMAGE=gomogile-test/mariadb:10.11-bookworm \
#   GOMOGILE_TEST_POSTGRES_IMAGE=gomogile-test/postgres:15-bookworm go test ./...
#
# An image is cached by its tag: when the tag exists (and, if it carries the
# label gomogile.image.inputs, was built from this script and entrypoint as
# they are now) nothing is done. Otherwise:
#
#   1. debootstrap --variant=minbase bookworm, once, from the machine's own
#      Debian mirror (the first bookworm entry of /etc/apt/sources.list{,.d/*};
#      GOMOGILE_DEBIAN_MIRROR overrides); its maintainer scripts run under
#      `unshare -n` (no network at all, so nothing reaches the host's
#      servers) in a private mount and pid namespace;
#   2. per image: a copy of that root, the packages downloaded with network,
#      then installed under `unshare -n` with a policy-rc.d that forbids
#      starting any service; no docs, man pages or apt caches;
#   3. the entrypoint scripts/docker/<name>-entrypoint.sh as
#      /usr/local/bin/gomogile-entrypoint (what the official images do with
#      MYSQL_ROOT_PASSWORD, resp. POSTGRES_PASSWORD/POSTGRES_DB);
#   4. tar | docker import.
#
# The PostgreSQL image leaves out LLVM (libllvm14 and libz3-4, about 130 MB,
# used only for JIT, which its entrypoint turns off); dpkg therefore lists
# postgresql-15's dependency on it as unmet inside the image.
#
# Work files go to GOMOGILE_IMAGE_WORKDIR (default /var/tmp/gomogile-docker-images)
# and are removed at the end. Each step's time is printed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUITE=bookworm
MARIADB_TAG=gomogile-test/mariadb:10.11-bookworm
POSTGRES_TAG=gomogile-test/postgres:15-bookworm
WORK=${GOMOGILE_IMAGE_WORKDIR:-/var/tmp/gomogile-docker-images}
LABEL_INPUTS=gomogile.image.inputs

log() { printf 'docker-images: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# --tag mariadb|postgres prints that image's tag and does nothing else
# (scripts/test.sh names the images with it).
if [ "${1:-}" = --tag ]; then
	case "${2:-}" in
	mariadb) echo "$MARIADB_TAG" ;;
	postgres) echo "$POSTGRES_TAG" ;;
	*) die "--tag mariadb|postgres" ;;
	esac
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then die "run as root (debootstrap, chroot, unshare)"; fi
command -v docker >/dev/null || die "no docker CLI; run scripts/docker-engine.sh first"
timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
	die "the docker engine does not answer; run scripts/docker-engine.sh first"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%6.1f s", b - a }'; }
exec 3>&1 # the step times go here even when a step's output is redirected
# timed NAME CMD...: runs CMD and prints how long it took. (No `|| ...`
# here: that would turn off set -e inside CMD; a failing step ends the script.)
timed() {
	local name=$1 t0
	shift
	t0=$(now)
	"$@"
	printf 'docker-images: %-40s %s\n' "$name" "$(since "$t0")" >&3
}
# logged LOG CMD...: CMD with its output in LOG, whose tail is shown if it fails.
logged() {
	local logf=$1
	shift
	"$@" >"$logf" 2>&1 || { local rc=$?; log "failed: $*"; tail -n 30 "$logf" >&2; return $rc; }
}

# inputs_of NAME: a hash of what image NAME is built from.
inputs_of() {
	cat "${BASH_SOURCE[0]}" "$here/docker/$1-entrypoint.sh" | sha256sum | cut -c1-16
}

# needs_build TAG NAME: is TAG missing (or built from other inputs)?
needs_build() {
	local have
	[ -n "${FORCE:-}" ] && return 0
	if ! have=$(docker image inspect --format "{{index .Config.Labels \"$LABEL_INPUTS\"}}" "$1" 2>/dev/null); then
		return 0
	fi
	if [ -n "$have" ] && [ "$have" != "<no value>" ] && [ "$have" != "$(inputs_of "$2")" ]; then
		log "$1 was built from other inputs ($have); rebuilding"
		return 0
	fi
	return 1
}

todo=()
needs_build "$MARIADB_TAG" mariadb && todo+=(mariadb)
needs_build "$POSTGRES_TAG" postgres && todo+=(postgres)
if [ ${#todo[@]} -eq 0 ]; then
	log "both images present, nothing to build:"
	echo "$MARIADB_TAG"
	echo "$POSTGRES_TAG"
	exit 0
fi

# One build at a time on this machine.
mkdir -p /run/lock
exec 9>/run/lock/gomogile-docker-images.lock
flock -w 3600 9 || die "another docker-images.sh holds /run/lock/gomogile-docker-images.lock"

# ---- the Debian sources ------------------------------------------------------

# apt_entries: "URI SUITE" for each enabled deb entry of the machine's apt
# sources, one-line (.list) and deb822 (.sources) formats, in apt's order.
apt_entries() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" && NF >= 3 { print $2, $3 }'
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no")
					for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print uris[i], suites[j]
				types = ""; enabled = ""; nu = 0; ns = 0
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^[ \t]+/, "")
				if (key == "types") types = $0
				else if (key == "enabled") enabled = $0
				else if (key == "uris") nu = split($0, uris, /[ \t]+/)
				else if (key == "suites") ns = split($0, suites, /[ \t]+/)
			}
			END { flush() }' "$f"
	done
}

entries=$(apt_entries)
uri_for() { awk -v s="$1" '$2 == s { print $1; exit }' <<<"$entries"; }
MIRROR=${GOMOGILE_DEBIAN_MIRROR:-$(uri_for "$SUITE")}
[ -n "$MIRROR" ] || die "no '$SUITE' entry in /etc/apt/sources.list{,.d/*}; set GOMOGILE_DEBIAN_MIRROR"
UPDATES=$(uri_for "$SUITE-updates")
SECURITY=$(uri_for "$SUITE-security")
SECURITY=${SECURITY:-$(uri_for "$SUITE/updates")}
log "Debian mirror: $MIRROR${SECURITY:+ (security: $SECURITY)}"

# ---- chroot helpers -----------------------------------------------------------

# in_root ROOT CMD...: CMD in chroot ROOT, in a private mount and pid
# namespace with its own /proc (gone, with every process, when CMD ends).
in_root() { _chroot "" "$@"; }
# offline ROOT CMD...: the same in a network namespace of its own (no
# network at all, not even loopback): for maintainer scripts.
offline() { _chroot --net "$@"; }
_chroot() {
	local net=$1 root=$2
	shift 2
	unshare $net --mount --propagation private --pid --fork --mount-proc="$root/proc" \
		chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		DEBIAN_FRONTEND=noninteractive "$@"
}

# no_mounts_under DIR: refuse to rm -rf a tree with something mounted in it.
no_mounts_under() { ! findmnt -rno TARGET | grep -q "^$1\(/\|$\)"; }

cleanup() {
	if [ -d "$WORK" ]; then
		if no_mounts_under "$WORK"; then rm -rf "$WORK"; else log "left $WORK: something is mounted under it"; fi
	fi
}
trap cleanup EXIT
cleanup
mkdir -p "$WORK"

# ---- 1. the minbase root --------------------------------------------------------

BASE=$WORK/base
t_all=$(now)
if ! command -v debootstrap >/dev/null; then
	timed "install debootstrap" logged "$WORK/debootstrap-install.log" sh -c '
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap ||
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; }'
fi

# First stage (download and unpack, no maintainer script) with network; the
# second (configure) without.
timed "debootstrap 1st stage (download)" logged "$WORK/debootstrap1.log" \
	debootstrap --foreign --variant=minbase "$SUITE" "$BASE" "$MIRROR"
timed "debootstrap 2nd stage (unshare -n)" logged "$WORK/debootstrap2.log" \
	unshare --net --mount --propagation private --pid --fork \
	chroot "$BASE" /debootstrap/debootstrap --second-stage

setup_base() {
	# Never start a service from a maintainer script.
	printf '#!/bin/sh\n# gomogile images: starting services is not allowed here\nexit 101\n' >"$BASE/usr/sbin/policy-rc.d"
	chmod 755 "$BASE/usr/sbin/policy-rc.d"
	# No docs, man pages or translations from here on.
	cat >"$BASE/etc/dpkg/dpkg.cfg.d/90-gomogile-nodoc" <<-'EOF'
	path-exclude=/usr/share/doc/*
	path-include=/usr/share/doc/*/copyright
	path-exclude=/usr/share/man/*
	path-exclude=/usr/share/info/*
	path-exclude=/usr/share/locale/*
	path-exclude=/usr/share/lintian/*
	EOF
	cat >"$BASE/etc/apt/apt.conf.d/90-gomogile" <<-'EOF'
	APT::Install-Recommends "false";
	APT::Install-Suggests "false";
	Acquire::Languages "none";
	EOF
	{
		echo "deb $MIRROR $SUITE main"
		if [ -n "$UPDATES" ]; then echo "deb $UPDATES $SUITE-updates main"; fi
		if [ -n "$SECURITY" ]; then echo "deb $SECURITY $SUITE-security main"; fi
	} >"$BASE/etc/apt/sources.list"
	cp /etc/resolv.conf "$BASE/etc/resolv.conf"
	logged "$WORK/apt-update.log" in_root "$BASE" apt-get update
}
timed "base setup + apt-get update" setup_base

# ---- 2.-4. an image -----------------------------------------------------------------

# slim ROOT: what no container needs.
slim() {
	local root=$1
	in_root "$root" apt-get clean
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
		"$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
		"$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/* "$root"/root/.cache
	find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
	find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
	rm -rf "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
		"$root"/usr/share/lintian/*
	# Docker supplies these.
	: >"$root/etc/resolv.conf"
	: >"$root/etc/hostname"
}

# build NAME TAG PACKAGES...
build() {
	local name=$1 tag=$2 root=$WORK/$1
	shift 2
	local pkgs=("$@")
	log "building $tag from ${pkgs[*]}"
	timed "$name: copy base" cp -a "$BASE" "$root"
	timed "$name: download packages" logged "$WORK/$name-download.log" \
		in_root "$root" apt-get install -y --download-only "${pkgs[@]}"
	timed "$name: install (unshare -n)" logged "$WORK/$name-install.log" \
		offline "$root" apt-get install -y "${pkgs[@]}"
	timed "$name: configure" "configure_$name" "$root"
	timed "$name: slim" slim "$root"
	install -m 755 "$here/docker/$name-entrypoint.sh" "$root/usr/local/bin/gomogile-entrypoint"
	local old new
	old=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
	timed "$name: docker import" import_image "$name" "$tag" "$root"
	rm -rf "$root"
	new=$(docker image inspect --format '{{.Id}}' "$tag")
	# The image this one replaces (and its untagged parent), unless a
	# container still uses it.
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker rmi "$old" >/dev/null 2>&1 || log "kept the previous $tag ($old): in use"
	fi
}

import_image() {
	local name=$1 tag=$2 root=$3 port env=() extra=()
	case $name in
	mariadb) port=3306 ;;
	postgres)
		port=5432
		env=(-c 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
			-c 'ENV PGDATA=/var/lib/postgresql/data')
		# docker import cannot set STOPSIGNAL; postgres' fast shutdown is
		# SIGINT (SIGTERM waits for every client to leave).
		extra=('STOPSIGNAL SIGINT') ;;
	esac
	tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -c . |
		docker import \
			-c 'ENTRYPOINT ["/usr/local/bin/gomogile-entrypoint"]' \
			-c "EXPOSE $port" \
			-c 'ENV LANG=C.UTF-8' \
			"${env[@]}" \
			-c "LABEL $LABEL_INPUTS=$(inputs_of "$name")" \
			-m "scripts/docker-images.sh: Debian $SUITE minbase + $name" \
			- "$tag" >/dev/null
	if [ ${#extra[@]} -gt 0 ]; then
		# A metadata-only layer on top, by the classic builder (no registry
		# needed: the base is local).
		{ echo "FROM $tag"; printf '%s\n' "${extra[@]}"; } >"$WORK/$name.Dockerfile"
		logged "$WORK/$name-build.log" env DOCKER_BUILDKIT=0 docker build -t "$tag" - <"$WORK/$name.Dockerfile"
	fi
}

configure_mariadb() {
	local root=$1
	# The package's postinst initialised a datadir (with a 96 MB redo log):
	# the entrypoint makes a fresh one, with the passwords it is given.
	rm -rf "$root"/var/lib/mysql/*
	cat >"$root/etc/mysql/mariadb.conf.d/99-gomogile.cnf" <<-'EOF'
	# gomogile test image: reachable from outside the container, and no
	# reverse DNS on connect (there is no DNS here).
	[mariadbd]
	bind-address = 0.0.0.0
	skip-name-resolve
	EOF
}

configure_postgres() {
	local root=$1
	# The package made a cluster 15/main; the entrypoint makes $PGDATA.
	rm -rf "$root"/var/lib/postgresql/15 "$root"/etc/postgresql/15
	# LLVM (and its z3) serve only JIT, off in the entrypoint: about 130 MB.
	local llvm
	llvm=$(in_root "$root" dpkg-query -W -f '${db:Status-Status} ${Package}\n' 'libllvm*' 'libz3-*' 2>/dev/null |
		awk '$1 == "installed" { print $2 }')
	if [ -n "$llvm" ]; then
		log "postgres: leaving out" $llvm
		# shellcheck disable=SC2086 # a list of package names
		logged "$WORK/postgres-purge.log" offline "$root" dpkg --purge --force-depends $llvm
	fi
	rm -rf "$root"/usr/lib/postgresql/15/lib/llvmjit* "$root"/usr/lib/postgresql/15/lib/bitcode
	mkdir -p "$root/var/lib/postgresql/data"
	in_root "$root" chown postgres:postgres /var/lib/postgresql/data
}

for name in "${todo[@]}"; do
	case $name in
	mariadb) timed "image $MARIADB_TAG" build mariadb "$MARIADB_TAG" mariadb-server ;;
	postgres) timed "image $POSTGRES_TAG" build postgres "$POSTGRES_TAG" postgresql-15 ;;
	esac
done
printf 'docker-images: %-40s %s\n' "total" "$(since "$t_all")"
for tag in "$MARIADB_TAG" "$POSTGRES_TAG"; do
	printf '%s\t%s\n' "$tag" "$(docker image inspect --format '{{.Size}}' "$tag" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
done
