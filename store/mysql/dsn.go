package mysql

import (
	"strings"

	"github.com/gomogile/gomogile/store"
)

// dbiSyntax is DBD::mysql's: attributes split at ':' as well as ';', and
// bare ones taken as database, host and port in that order
// (DBI:mysql:mogilefs:db1:3306, or the original's sample config
// DBI:mysql:mogilefs:host=127.0.0.1).
var dbiSyntax = store.DBISyntax{Separators: ";:", Positional: []string{"db", "host", "port"}}

// ParseDSN reads mysql:// URLs as every backend does and DBI:mysql:… as
// DBD::mysql does (see dbiSyntax).
func (Driver) ParseDSN(raw string) (*store.DSN, error) {
	if len(raw) >= 4 && strings.EqualFold(raw[:4], "dbi:") {
		return store.ParseDBI(raw, dbiSyntax)
	}
	return store.ParseURL(raw)
}
