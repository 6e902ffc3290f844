package store_test

import (
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// What a backend's Driver.Open receives, per DSN form. A backend without a
// DSNParser of its own gets the generic parse of its scheme's URL or DBI
// form; the common parameters (op_timeout, max_idle_conns, lock_dsn, …) are
// already taken out of Params, and DSN.Driver is the name it registered.
// A file-based backend reads Path (the generic Database drops the leading
// '/'), or parses its DSNs itself: store/sqlite has a DSNParser, and the
// DSN its Open gets has the file's path in Database (and Path), however
// sqlite:///… or DBI:SQLite:… wrote it. (No backend is linked into this
// example: "mybackend" is any scheme.)
func ExampleParseDSN() {
	for _, raw := range []string{
		"mybackend://meta:secret@db.example:5433/mogilefs?sslmode=require&op_timeout=5s",
		"DBI:mybackend:database=mogilefs;host=db.example;port=5433",
		"mybackend://meta@a:5433,b:5434/mogilefs",
		"mybackend:///var/lib/mogilefs/meta.db",
	} {
		d, err := store.ParseDSN(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s\n  Driver=%q User=%q Password set=%v Host=%q Port=%d Hosts=%v\n  Database=%q Path=%q Params=%v OpTimeout=%v\n",
			d.Redacted(), d.Driver, d.User, d.Password != "", d.Host, d.Port, d.Hosts, d.Database, d.Path, d.Params, d.OpTimeout)
	}
	// Output:
	// mybackend://meta:xxxxx@db.example:5433/mogilefs?op_timeout=5s&sslmode=require
	//   Driver="mybackend" User="meta" Password set=true Host="db.example" Port=5433 Hosts=[db.example:5433]
	//   Database="mogilefs" Path="/mogilefs" Params=map[sslmode:[require]] OpTimeout=5s
	// mybackend://db.example:5433/mogilefs
	//   Driver="mybackend" User="" Password set=false Host="db.example" Port=5433 Hosts=[db.example:5433]
	//   Database="mogilefs" Path="" Params=map[] OpTimeout=10s
	// mybackend://meta@a:5433,b:5434/mogilefs
	//   Driver="mybackend" User="meta" Password set=false Host="a" Port=5433 Hosts=[a:5433 b:5434]
	//   Database="mogilefs" Path="/mogilefs" Params=map[] OpTimeout=10s
	// mybackend:///var/lib/mogilefs/meta.db
	//   Driver="mybackend" User="" Password set=false Host="" Port=0 Hosts=[]
	//   Database="var/lib/mogilefs/meta.db" Path="/var/lib/mogilefs/meta.db" Params=map[] OpTimeout=10s
}
