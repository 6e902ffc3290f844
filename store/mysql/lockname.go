package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// lockPrefix starts every server lock name, so gomogile's locks are
// recognisable in performance_schema.metadata_locks and the process list.
const lockPrefix = "gomogile:"

var lockEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// serverLockName maps a gomogile lock name to a GET_LOCK name. GET_LOCK's
// namespace is the whole server, and its rules vary (MySQL 8: at most 64
// characters; case folding documented, but not what MariaDB 10.11 does),
// so every name is hashed, together with the database it guards:
// "gomogile:" and the SHA-256 of database NUL name in lower-case base32 is
// 61 ASCII characters, identical on both servers, case-free, and
// collision-free as far as SHA-256 is.
func serverLockName(database, name string) string {
	h := sha256.New()
	h.Write([]byte(database))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return lockPrefix + lockEncoding.EncodeToString(h.Sum(nil))
}

// canonicalDatabase is the name lock names are derived from: the server's
// own spelling, folded to lower case where the server folds table names
// (lower_case_table_names 1 or 2), so two DSNs naming one database in
// different cases share one lock namespace.
func canonicalDatabase(ctx context.Context, db *sql.DB) (string, error) {
	var name sql.NullString
	var lctn int
	if err := db.QueryRowContext(ctx, "SELECT DATABASE(), @@lower_case_table_names").Scan(&name, &lctn); err != nil {
		return "", err
	}
	if !name.Valid || name.String == "" {
		return "", fmt.Errorf("%w: no database selected", store.ErrBadDSN)
	}
	if lctn != 0 {
		return strings.ToLower(name.String), nil
	}
	return name.String, nil
}
