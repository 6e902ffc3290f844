package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/gomogile/gomogile/store"
)

// With case_sensitive_list_keys off (stored 0), list_keys matches its
// prefix case-insensitively for ASCII letters, on every backend: 2.73 did
// so on MySQL (by the column's collation) and SQLite (PRAGMA
// case_sensitive_like), and not on PostgreSQL. Unset or on, prefixes
// compare byte for byte, as before. Keys still list in byte order, and
// after still compares byte for byte.
//
// It is built on Store.ListKeys alone, so every backend behaves the same
// with nothing written for it: the prefix's case variants that have keys
// after `after` are found letter by letter (a variant no key starts with
// ends its branch, so the queries are about two per letter for each
// variant in use, not one per variant of the whole prefix), and their
// sorted lists are merged.

func (e *Env) cmdListKeys(ctx context.Context, r *Request) (*Reply, error) {
	ctx = store.AllowReplica(ctx) // a read replica may answer (2.73's slaves_ok)
	_, dom, err := e.checkDomain(ctx, r)
	if err != nil {
		return nil, err
	}
	prefix, after := r.Args.Get("prefix"), r.Args.Get("after")
	fold, err := e.listKeysFolds(ctx)
	if err != nil {
		return nil, err
	}
	// The original matched after against prefix as a regex; a literal
	// prefix test is what clients mean, and with the prefix matched
	// case-insensitively so is this one (a client pages with next_after,
	// which may be any case of the prefix).
	if prefix != "" && PerlTrue(after) && !hasPrefix(after, prefix, fold) {
		return nil, perr("after_mismatch")
	}
	limit := int(PerlNum(r.Args.Get("limit")))
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	var keys []string
	if fold && prefix != "" {
		keys, err = e.listKeysFold(ctx, dom.ID, prefix, after, limit)
	} else {
		keys, err = e.Store.ListKeys(ctx, dom.ID, prefix, after, limit)
	}
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, perr("none_match")
	}
	res := &Reply{}
	next := ""
	for _, k := range keys {
		if k > next {
			next = k
		}
	}
	res.Set("key_count", len(keys))
	res.Set("next_after", next)
	for i, k := range keys {
		res.Set(fmt.Sprintf("key_%d", i+1), k)
	}
	return res, nil
}

// listKeysFold is ListKeys with prefix matched case-insensitively.
func (e *Env) listKeysFold(ctx context.Context, dmid int, prefix, after string, limit int) ([]string, error) {
	variants := []string{""}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		lo, up := asciiLower(c), asciiUpper(c)
		if lo == up {
			for j := range variants {
				variants[j] += string(c)
			}
			continue
		}
		var next []string
		for _, v := range variants {
			for _, cand := range []string{v + string(up), v + string(lo)} {
				keys, err := e.Store.ListKeys(ctx, dmid, cand, after, 1)
				if err != nil {
					return nil, err
				}
				if len(keys) > 0 {
					next = append(next, cand)
				}
			}
		}
		if variants = next; len(variants) == 0 {
			return nil, nil
		}
	}
	var out []string
	for _, v := range variants {
		keys, err := e.Store.ListKeys(ctx, dmid, v, after, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	// A database whose collation already folds case (mogdbsetup's latin1
	// on MySQL) answers every variant with the same keys.
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// hasPrefix is strings.HasPrefix, with ASCII letters' case ignored when
// fold is set.
func hasPrefix(s, prefix string, fold bool) bool {
	if len(s) < len(prefix) {
		return false
	}
	if !fold {
		return s[:len(prefix)] == prefix
	}
	for i := 0; i < len(prefix); i++ {
		if asciiLower(s[i]) != asciiLower(prefix[i]) {
			return false
		}
	}
	return true
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func asciiUpper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}
