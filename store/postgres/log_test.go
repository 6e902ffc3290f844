package postgres_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
)

// syncBuffer is a bytes.Buffer safe for the store's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The driver's output (queries when debugging, the server's notices) goes
// to slog.Default, where mogilefsd's log_level/log_format apply.
func TestDriverLogsThroughSlog(t *testing.T) {
	dsn := testdb.Postgres(t)
	var buf syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)

	// The second Open's idempotent schema setup draws NOTICEs ("already
	// exists, skipping") from the server.
	open(t, dsn).Close()
	st := open(t, dsn)
	if _, err := st.Info(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	slog.SetDefault(prev)

	var queries, notices int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if rec["component"] != "pgx" {
			continue
		}
		switch {
		case rec["msg"] == "query" && rec["sql"] != nil:
			queries++
		case rec["severity"] != nil:
			notices++
		}
	}
	if queries == 0 || notices == 0 {
		t.Errorf("%d query and %d notice records from pgx; want both\n%.2000s", queries, notices, buf.String())
	}
	t.Logf("%d query and %d notice records", queries, notices)

	// At info nothing is traced.
	var quiet syncBuffer
	slog.SetDefault(slog.New(slog.NewJSONHandler(&quiet, nil)))
	st = open(t, dsn)
	st.Info(t.Context())
	st.Close()
	slog.SetDefault(prev)
	if strings.Contains(quiet.String(), `"msg":"query"`) {
		t.Errorf("queries traced at info level:\n%.500s", quiet.String())
	}
}
