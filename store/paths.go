package store

import "context"

// PathsReader is an optional Backend interface: a file by key together with
// the devices holding it, in one call — for an SQL Store one statement, one
// round trip, where FileByKey then FileOn take two. get_paths, the command
// clients send most, goes through FileByKeyOn, which uses it when the Store
// has it.
type PathsReader interface {
	// FileByKeyOn is FileByKey and FileOn of the file found, read at once
	// (one snapshot): the devices ascending, none for a file without
	// copies. ErrNotFound when the key has no file.
	FileByKeyOn(ctx context.Context, dmid int, key string) (File, []int, error)
}

// FileByKeyOn reads the file of key in domain dmid and the devices holding
// it: through s's PathsReader when it has one, else by FileByKey and then
// FileOn (two reads, between which the file may change).
func FileByKeyOn(ctx context.Context, s Backend, dmid int, key string) (File, []int, error) {
	if pr, ok := s.(PathsReader); ok {
		return pr.FileByKeyOn(ctx, dmid, key)
	}
	f, err := s.FileByKey(ctx, dmid, key)
	if err != nil {
		return f, nil, err
	}
	devs, err := s.FileOn(ctx, f.Fid)
	return f, devs, err
}
