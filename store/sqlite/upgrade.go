package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// addedColumns are the columns MogileFS added to existing SQLite tables by
// ALTER TABLE on its way to schema 17; CREATE TABLE IF NOT EXISTS cannot add
// them to a database made by an older mogdbsetup.
var addedColumns = []struct{ table, column, typ string }{
	{"class", "replpolicy", "VARCHAR(255)"},
	{"class", "hashtype", "TINYINT UNSIGNED"},
}

// upgradeColumns adds the missing addedColumns to tables that exist. Two
// Stores may upgrade at once: a failed ALTER is fine if the column is there
// afterwards.
func upgradeColumns(ctx context.Context, db *sql.DB) error {
	for _, c := range addedColumns {
		cols, err := columns(ctx, db, c.table)
		if err != nil {
			return err
		}
		if len(cols) == 0 || cols[c.column] {
			continue
		}
		_, aerr := db.ExecContext(ctx, "ALTER TABLE "+c.table+" ADD COLUMN "+c.column+" "+c.typ)
		if aerr == nil {
			continue
		}
		if cols, err = columns(ctx, db, c.table); err != nil || !cols[c.column] {
			return fmt.Errorf("sqlite: add column %s.%s: %w", c.table, c.column, aerr)
		}
	}
	return nil
}

// columns lists a table's columns; none when the table does not exist.
func columns(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read columns of %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}
