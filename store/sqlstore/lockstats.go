package sqlstore

import "github.com/gomogile/gomogile/store"

// LockStats reports the lock mechanism's own numbers when it keeps any (a
// Config.Locks or lock service with a LockStats() store.LockStats
// method), else zero. It is
// the optional store method that package store/storemetrics exports.
func (s *Store) LockStats() store.LockStats {
	if ls, ok := s.locks.(interface{ LockStats() store.LockStats }); ok {
		return ls.LockStats()
	}
	return store.LockStats{}
}
