package main

// Metadata backends linked into mogilefsd; db_dsn's scheme picks one.
import (
	_ "github.com/gomogile/gomogile/store/etcd" // lock_dsn = etcd://…
	_ "github.com/gomogile/gomogile/store/mysql"
	_ "github.com/gomogile/gomogile/store/postgres"
	_ "github.com/gomogile/gomogile/store/sqlite"
)
