module example.com/bolt-backend

go 1.26.0

require (
	github.com/gomogile/gomogile v0.0.0
	go.etcd.io/bbolt v1.4.3
)

require golang.org/x/sys v0.49.0 // indirect

replace github.com/gomogile/gomogile => ../..
