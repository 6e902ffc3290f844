package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// Domains and classes. A class row is keyed by (dmid, classid); class 0,
// "default", has a row only once someone created or updated it, as in
// MogileFS, where a domain's default class is implicit.

// nextID allocates the next id of a bucket keyed by u64 ids: one past the
// largest, or the first gap once the largest is max. Writers are
// serialized, so no two transactions can pick the same id.
func nextID(b *bolt.Bucket, prefix []byte, lo, hi uint64) (uint64, error) {
	last := lo - 1
	c := b.Cursor()
	if len(prefix) == 0 {
		if k, _ := c.Last(); k != nil {
			last = getU64(k)
		}
	} else {
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			last = getU64(k[len(prefix):])
		}
	}
	if last < hi {
		return max(last+1, lo), nil
	}
	want := lo
	for k, _ := c.Seek(cat(prefix, u64(lo))); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if getU64(k[len(prefix):]) != want {
			break
		}
		want++
	}
	if want > hi {
		return 0, fmt.Errorf("%w: every id from %d to %d is taken", store.ErrNoSpace, lo, hi)
	}
	return want, nil
}

// hasPrefix reports whether any key of b starts with prefix.
func hasPrefix(b *bolt.Bucket, prefix []byte) bool {
	k, _ := b.Cursor().Seek(prefix)
	return k != nil && bytes.HasPrefix(k, prefix)
}

func (b *backend) CreateDomain(ctx context.Context, name string) (store.Domain, error) {
	var d store.Domain
	err := b.write(ctx, func(tx *bolt.Tx) error {
		names := tx.Bucket(bDomainName)
		if names.Get([]byte(name)) != nil {
			return fmt.Errorf("%w: domain %q", store.ErrDuplicate, name)
		}
		doms := tx.Bucket(bDomain)
		id, err := nextID(doms, nil, 1, store.MaxDomainID)
		if err != nil {
			return err
		}
		if err := doms.Put(u64(id), []byte(name)); err != nil {
			return err
		}
		d = store.Domain{ID: int(id), Name: name}
		return names.Put([]byte(name), u64(id))
	})
	return d, err
}

func (b *backend) DeleteDomain(ctx context.Context, dmid int) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		doms := tx.Bucket(bDomain)
		name := doms.Get(id64(dmid))
		if name == nil {
			return fmt.Errorf("%w: domain %d", store.ErrNotFound, dmid)
		}
		if hasPrefix(tx.Bucket(bFileKey), id64(dmid)) {
			return fmt.Errorf("%w: domain %d", store.ErrHasFiles, dmid)
		}
		classes := tx.Bucket(bClass)
		c := classes.Cursor()
		for k, _ := c.Seek(id64(dmid)); k != nil && bytes.HasPrefix(k, id64(dmid)); k, _ = c.Next() {
			if getU64(k[8:]) != 0 {
				return fmt.Errorf("%w: domain %d has class %d", store.ErrHasClasses, dmid, getU64(k[8:]))
			}
		}
		// Only the implicit default class is left: it goes with the domain.
		if v := classes.Get(cat(id64(dmid), u64(0))); v != nil {
			cl, err := decodeClass(dmid, 0, v)
			if err != nil {
				return err
			}
			if err := tx.Bucket(bClassName).Delete(cat(id64(dmid), []byte(cl.Name))); err != nil {
				return err
			}
			if err := classes.Delete(cat(id64(dmid), u64(0))); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bDomainName).Delete(bytes.Clone(name)); err != nil {
			return err
		}
		return doms.Delete(id64(dmid))
	})
}

func (b *backend) Domains(ctx context.Context) ([]store.Domain, error) {
	var out []store.Domain
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bDomain).ForEach(func(k, v []byte) error {
			out = append(out, store.Domain{ID: int(getU64(k)), Name: string(v)})
			return nil
		})
	})
	return out, err
}

func encodeClass(c store.Class) []byte {
	e := &enc{}
	e.str(c.Name).int(int64(c.MinDevCount)).str(c.ReplPolicy).int(int64(c.HashType))
	return e.b
}

func decodeClass(dmid, classid int, v []byte) (store.Class, error) {
	d := &dec{b: v}
	c := store.Class{DomainID: dmid, ID: classid, Name: d.str(), MinDevCount: int(d.int()), ReplPolicy: d.str(), HashType: store.HashType(d.int())}
	return c, d.done("class", v)
}

// classKey is a class row's key; classNameKey its name index's.
func classKey(dmid, classid int) []byte         { return cat(id64(dmid), id64(classid)) }
func classNameKey(dmid int, name string) []byte { return cat(id64(dmid), []byte(name)) }

func (b *backend) CreateClass(ctx context.Context, c store.Class) (store.Class, error) {
	err := b.write(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bDomain).Get(id64(c.DomainID)) == nil {
			return fmt.Errorf("%w: domain %d", store.ErrNotFound, c.DomainID)
		}
		names := tx.Bucket(bClassName)
		if names.Get(classNameKey(c.DomainID, c.Name)) != nil {
			return fmt.Errorf("%w: class %q of domain %d", store.ErrDuplicate, c.Name, c.DomainID)
		}
		classes := tx.Bucket(bClass)
		if c.Name == "default" {
			c.ID = 0
			if classes.Get(classKey(c.DomainID, 0)) != nil {
				return fmt.Errorf("%w: class 0 of domain %d", store.ErrDuplicate, c.DomainID)
			}
		} else {
			id, err := nextID(classes, id64(c.DomainID), 1, store.MaxClassID)
			if err != nil {
				return err
			}
			c.ID = int(id)
		}
		if err := classes.Put(classKey(c.DomainID, c.ID), encodeClass(c)); err != nil {
			return err
		}
		return names.Put(classNameKey(c.DomainID, c.Name), id64(c.ID))
	})
	if err != nil {
		return store.Class{}, err
	}
	return c, nil
}

func (b *backend) UpdateClass(ctx context.Context, c store.Class) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		classes, names := tx.Bucket(bClass), tx.Bucket(bClassName)
		old := classes.Get(classKey(c.DomainID, c.ID))
		if old == nil {
			// The implicit default class of an existing domain gets its row
			// now; any other class must exist.
			if c.ID != 0 || tx.Bucket(bDomain).Get(id64(c.DomainID)) == nil {
				return fmt.Errorf("%w: class %d of domain %d", store.ErrNotFound, c.ID, c.DomainID)
			}
		}
		if v := names.Get(classNameKey(c.DomainID, c.Name)); v != nil && int(getU64(v)) != c.ID {
			return fmt.Errorf("%w: class %q of domain %d", store.ErrDuplicate, c.Name, c.DomainID)
		}
		if old != nil {
			prev, err := decodeClass(c.DomainID, c.ID, old)
			if err != nil {
				return err
			}
			if err := names.Delete(classNameKey(c.DomainID, prev.Name)); err != nil {
				return err
			}
		}
		if err := classes.Put(classKey(c.DomainID, c.ID), encodeClass(c)); err != nil {
			return err
		}
		return names.Put(classNameKey(c.DomainID, c.Name), id64(c.ID))
	})
}

func (b *backend) DeleteClass(ctx context.Context, dmid, classid int) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		classes := tx.Bucket(bClass)
		v := classes.Get(classKey(dmid, classid))
		if v == nil {
			return fmt.Errorf("%w: class %d of domain %d", store.ErrNotFound, classid, dmid)
		}
		if hasPrefix(tx.Bucket(bFileClass), classKey(dmid, classid)) {
			return fmt.Errorf("%w: class %d of domain %d", store.ErrHasFiles, classid, dmid)
		}
		c, err := decodeClass(dmid, classid, v)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bClassName).Delete(classNameKey(dmid, c.Name)); err != nil {
			return err
		}
		return classes.Delete(classKey(dmid, classid))
	})
}

func (b *backend) Classes(ctx context.Context) ([]store.Class, error) {
	var out []store.Class
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bClass).ForEach(func(k, v []byte) error {
			c, err := decodeClass(int(getU64(k)), int(getU64(k[8:])), v)
			out = append(out, c)
			return err
		})
	})
	return out, err
}
