#!/usr/bin/env bash
# The project's test command (make test, and CI through .ci/run): makes sure
# the database servers run, then vets and tests every package with all three
# backends really exercised. The full verbose log goes to var/test.log; the
# terminal gets failures, the conformance lines (one per backend: what ran,
# on which server, with what result) and a closing count.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/test-servers.sh || { echo "test: database servers unavailable" >&2; exit 1; }

export GOMOGILE_TEST_MYSQL_DSN="${GOMOGILE_TEST_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}"
export GOMOGILE_TEST_POSTGRES_DSN="${GOMOGILE_TEST_POSTGRES_DSN:-postgres://root@127.0.0.1:5432/test?sslmode=disable}"

mkdir -p var
log=var/test.log

# The real Docker engine's path (CI, or GOMOGILE_TEST_DOCKER=1; see
# scripts/test-servers.sh): its images are named for every test binary, so
# that the tests of dockertest itself (internal/testkit/testdb: a job container, a
# killed run) use them; the env DSNs above still win everywhere else.
docker_on=0
if [ "${GOMOGILE_TEST_DOCKER:-}" = 1 ] || { [ -n "${CI:-}" ] && [ "${GOMOGILE_TEST_DOCKER:-}" != 0 ]; }; then
	docker_on=1
	GOMOGILE_TEST_MYSQL_IMAGE="$(bash scripts/docker-images.sh --tag mariadb)" || exit 1
	GOMOGILE_TEST_POSTGRES_IMAGE="$(bash scripts/docker-images.sh --tag postgres)" || exit 1
	export GOMOGILE_TEST_MYSQL_IMAGE GOMOGILE_TEST_POSTGRES_IMAGE
fi

echo "go mod tidy -diff"
go mod tidy -diff || { echo "test: go.mod/go.sum are not tidy; run go mod tidy and commit the result" >&2; exit 1; }

echo "go vet ./..."
go vet ./... || exit 1

# Portable by construction: every package builds and vets for the other
# systems an operator may run it on.
for os in windows darwin freebsd; do
	echo "GOOS=$os go build ./... && go vet ./..."
	GOOS=$os go build ./... && GOOS=$os go vet ./... || exit 1
done

echo "go test ./... (log: $log)"
go test -count=1 -v -timeout 40m ./... >"$log" 2>&1
status=$?

# The example backends, each in its own module: built only from the
# exported pieces, each must pass the same suite — a server backend
# (outside-backend, whose broken variants the suite must fail), an
# embedded one on sqlstore (embedded-backend) and one that implements
# store.Backend with no SQL at all (bolt-backend).
for ex in outside-backend embedded-backend bolt-backend; do
	if [ $status -eq 0 ]; then
		echo "go vet + go test ./examples/$ex (own module)"
		(cd "examples/$ex" && go mod tidy -diff && go vet ./... && go test -count=1 -v -timeout 20m ./...) >>"$log" 2>&1 || status=1
	fi
done

# The workers' suite again with every worker in a process of its own, as
# mogilefsd runs them (GOMOGILE_TEST_JOB_PROCESSES; the tests that plant an
# in-process HTTP client keep goroutines, which a process cannot share).
if [ $status -eq 0 ]; then
	echo "go test ./tracker/jobs (workers as processes)"
	GOMOGILE_TEST_JOB_PROCESSES=1 go test -count=1 -v -timeout 20m ./tracker/jobs >>"$log" 2>&1 || status=1
fi

# The race detector over the packages where goroutines meet most: the
# shared SQL and its locks, the Store served to worker processes, the
# workers and their supervisor, SQLite's in-process locks, the storage
# node, the client and the suite's own bookkeeping.
if [ $status -eq 0 ]; then
	echo "go test -race (shared SQL, locks, workers, storage node, client)"
	go test -race -count=1 -v -timeout 20m ./tracker/internal/... ./tracker/jobs ./store/sqlstore/... \
		./store/sqlite ./store/storemetrics ./conformance ./client ./mogstored >>"$log" 2>&1 || status=1
fi

# The dockertest path, as a CI job without database services sees it: the
# MySQL and PostgreSQL suites with no env DSN, on containers a real Docker
# engine runs from the images scripts/docker-images.sh built from Debian
# packages (CI, or GOMOGILE_TEST_DOCKER=1; see scripts/test-servers.sh).
if [ $status -eq 0 ] && [ $docker_on = 1 ]; then
	echo "go test ./store/mysql ./store/postgres -run TestConformance\$ (dockertest, no env DSN)"
	env -u GOMOGILE_TEST_MYSQL_DSN -u GOMOGILE_TEST_POSTGRES_DSN \
		go test -count=1 -v -timeout 20m -run 'TestConformance$' ./store/mysql ./store/postgres >>"$log" 2>&1 || status=1
	left=$(docker ps -aq --filter label=gomogile.test 2>/dev/null | wc -l)
	[ "$left" -eq 0 ] || { echo "test: $left dockertest container(s) left after the run"; status=1; }
fi

# A short fuzz smoke run of what a peer or an operator's file can feed us:
# the tracker's request parser, then the config and DSN parsers, the
# storage node's path cleaning and management commands, and the client's
# reply parsing. They must find nothing. Counted in inputs, not seconds:
# Go 1.26's fuzz coordinator can end a timed run with "context deadline
# exceeded" on a loaded machine (fixed in 1.27), and a count is the same
# work whatever the load.
fuzz() { # package target inputs (Nx)
	if [ $status -eq 0 ] && grep -q "func $2(" "$1"/*_test.go 2>/dev/null; then
		echo "go test -fuzz=$2 ./$1 (smoke)"
		go test -run='^$' -fuzz="^$2\$" -fuzztime="$3" "./$1" >>"$log" 2>&1 || { echo "fuzz: $2 failed (see $log)"; status=1; }
	fi
}
fuzz tracker FuzzParseRequest 60000x
fuzz tracker FuzzParseConfig 20000x
fuzz store FuzzParseDSN 20000x
fuzz mogstored FuzzParseReqPath 20000x
fuzz mogstored FuzzMgmtCommand 20000x
fuzz client FuzzParseReply 20000x
fuzz client FuzzReplyDecoders 20000x
fuzz internal/wire FuzzRoundTrip 20000x

grep -E '^\s*--- FAIL|^panic:' "$log" | head -50
grep -E '^(ok|FAIL)\s' "$log" || true
echo
grep -E '^conformance: ' "$log" || echo "conformance: no suite ran"
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
if [ "$skipped" -gt 0 ]; then
	echo "skipped tests:"
	grep -E '^\s*--- SKIP' "$log" | head -20
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit $status
