package postgres

import (
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// openDB gives the shared SQL layer a database/sql pool over pgx.
func openDB(cfg *pgx.ConnConfig) *sql.DB {
	return stdlib.OpenDB(*cfg)
}
