package faultproxy_test

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/faultproxy"
)

// A Store (here plain database/sql) connects through the proxy instead of
// to the server, and the test makes faults on the proxy.
func Example() {
	p, err := faultproxy.Start("127.0.0.1:5432", faultproxy.Options{Protocol: faultproxy.Postgres, Logf: log.Printf})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	db, err := sql.Open("pgx", "postgres://root@"+p.Addr()+"/test?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	p.DropCommitReplies(1) // the next COMMIT applies, but its client gets an error
	tx, _ := db.BeginTx(ctx, nil)
	tx.ExecContext(ctx, "INSERT INTO t DEFAULT VALUES")
	if err := tx.Commit(); err != nil {
		log.Printf("ambiguous commit: %v", err)
	}

	p.Blackhole(true) // a partition: no bytes, no FIN/RST
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	db.QueryRowContext(qctx, "SELECT 1") // hangs until its deadline
	cancel()
	p.Blackhole(false)

	p.SetDelay(50 * time.Millisecond) // every chunk 50ms late, both ways
	p.Cut()                           // every connection closed now
	log.Printf("%+v", p.Stats())
}
