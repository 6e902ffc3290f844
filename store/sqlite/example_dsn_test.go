package sqlite_test

import (
	"fmt"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// The DSN store/sqlite's Open receives: its own parser puts the file's
// path in Database (and Path) however the DSN spells it, relative paths
// included.
func Example_dsn() {
	for _, raw := range []string{
		"sqlite:///var/lib/mogilefs/meta.db",
		"sqlite:meta.db",
		"DBI:SQLite:dbname=/var/lib/mogilefs/meta.db",
		"DBI:SQLite:/var/lib/mogilefs/meta.db",
	} {
		d, err := store.ParseDSN(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-45s Driver=%q Database=%q Path=%q\n", raw, d.Driver, d.Database, d.Path)
	}
	// Output:
	// sqlite:///var/lib/mogilefs/meta.db            Driver="sqlite" Database="/var/lib/mogilefs/meta.db" Path="/var/lib/mogilefs/meta.db"
	// sqlite:meta.db                                Driver="sqlite" Database="meta.db" Path="meta.db"
	// DBI:SQLite:dbname=/var/lib/mogilefs/meta.db   Driver="sqlite" Database="/var/lib/mogilefs/meta.db" Path="/var/lib/mogilefs/meta.db"
	// DBI:SQLite:/var/lib/mogilefs/meta.db          Driver="sqlite" Database="/var/lib/mogilefs/meta.db" Path="/var/lib/mogilefs/meta.db"
}
