# gomogile — see README.md.
GO ?= go

.PHONY: all build test bench bench-move load run stop vet lint fuzz clean torture

all: build

build:
	$(GO) build -o bin/ ./cmd/...

vet:
	$(GO) vet ./...

# staticcheck, fetched through the module proxy; its configuration and the
# one check left out are in staticcheck.conf.
lint: vet
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...
	cd examples/outside-backend && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...
	cd examples/embedded-backend && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...
	cd examples/bolt-backend && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...

# Starts (or installs) PostgreSQL and MariaDB when needed, then runs every
# package's tests with all three backends.
test:
	bash scripts/test.sh

# Benchmarks of every backend, each operation beside the raw SQL it wraps.
bench:
	bash scripts/test-servers.sh
	GOMOGILE_TEST_MYSQL_DSN="$${GOMOGILE_TEST_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}" \
	GOMOGILE_TEST_POSTGRES_DSN="$${GOMOGILE_TEST_POSTGRES_DSN:-postgres://root@127.0.0.1:5432/test?sslmode=disable}" \
	$(GO) test -run='^$$' -bench=. -benchtime=2000x ./store/...

# Moving an installation between backends (store/migrate): every source >
# target pair at 100,000 and at 1,000,000 files (two copies each, SHA-1
# checksums), one move each, check included; "move:" lines.
# MOVE_FILES and MOVE_PAIRS (e.g. sqlite>postgres,sqlite>mysql) narrow it.
MOVE_FILES ?= 100000 1000000
MOVE_PAIRS ?=
bench-move:
	bash scripts/test-servers.sh
	for n in $(MOVE_FILES); do \
	GOMOGILE_TEST_MYSQL_DSN="$${GOMOGILE_TEST_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}" \
	GOMOGILE_TEST_POSTGRES_DSN="$${GOMOGILE_TEST_POSTGRES_DSN:-postgres://root@127.0.0.1:5432/test?sslmode=disable}" \
	$(GO) test -run='^$$' -bench=BenchmarkMove -benchtime=1x -timeout=3h ./store/migrate -args -move.files=$$n -move.pairs='$(MOVE_PAIRS)' || exit 1; \
	done

# The load generator: upload + get_paths through the Go client, 1/8/32
# clients, 1, 2 and 4 trackers, every backend on a fresh database each; one
# line per cell (also in docs/load.txt) and the chart in docs/load.svg; then
# the same with the locks in a private etcd cluster on MySQL, PostgreSQL and
# a private 3-node Galera cluster, each tracker on a node of its own
# (docs/load-cluster.txt). LOAD_FLAGS adds flags to both
# (e.g. LOAD_FLAGS='-iterations 200').
LOAD_FLAGS ?=
load:
	bash scripts/test-servers.sh
	$(GO) build -o bin/ ./cmd/gomogile-bench
	GOMOGILE_TEST_MYSQL_DSN="$${GOMOGILE_TEST_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}" \
	GOMOGILE_TEST_POSTGRES_DSN="$${GOMOGILE_TEST_POSTGRES_DSN:-postgres://root@127.0.0.1:5432/test?sslmode=disable}" \
	bin/gomogile-bench -chart docs/load.svg -save docs/load.txt $(LOAD_FLAGS)
	GOMOGILE_TEST_MYSQL_DSN="$${GOMOGILE_TEST_MYSQL_DSN:-mysql://root@127.0.0.1:3306/test}" \
	GOMOGILE_TEST_POSTGRES_DSN="$${GOMOGILE_TEST_POSTGRES_DSN:-postgres://root@127.0.0.1:5432/test?sslmode=disable}" \
	bin/gomogile-bench -locks etcd -backends mysql,postgres,galera -save docs/load-cluster.txt $(LOAD_FLAGS)

# The torture program's long edition: BACKEND=sqlite|mysql|postgres|galera|all (galera with LOCKS=etcd)
# (postgres = a private server crashed at will, then behind PgBouncer, then
# with a standby to fail over to), each run DURATION long. LOCKS=etcd keeps
# the locks in a private etcd cluster (its members killed, the leader too,
# and partitioned from the trackers); SQLite is then skipped.
DURATION ?= 120s
BACKEND ?= all
LOCKS ?=
torture:
	LOCKS=$(LOCKS) bash scripts/torture.sh $(BACKEND) $(DURATION)

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParseRequest$$' -fuzztime=60s ./tracker

# A tracker on the embedded SQLite default plus a local storage node with two
# devices, registered and ready; prints how to upload and fetch a file.
# TRACKER_PORT, MOGSTORED_PORT, MOGSTORED_MGMT_PORT, TRACKER_STATUS_PORT,
# MOGSTORED_STATUS_PORT and RUN_DIR move it
# (make run TRACKER_PORT=7101 ...; make stop RUN_DIR=... for that one).
run: build
	bash scripts/run.sh

stop:
	bash scripts/run.sh stop

clean:
	rm -rf bin var
