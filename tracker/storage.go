package tracker

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"fmt"

	"hash"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// digest fetches url and hashes it with ht.
func (t *Tracker) digest(ctx context.Context, url string, ht store.HashType) ([]byte, error) {
	h := newHash(ht)
	if h == nil {
		return nil, fmt.Errorf("unknown hashtype %d", ht)
	}
	return t.nodes.Digest(ctx, url, h)
}

// Hash types by name, as MogileFS::Checksum numbers them.
var hashNames = map[string]store.HashType{"MD5": store.HashMD5, "SHA-1": 2}

func hashName(ht store.HashType) string {
	for n, v := range hashNames {
		if v == ht {
			return n
		}
	}
	return ""
}

func hashLen(ht store.HashType) int {
	switch ht {
	case store.HashMD5:
		return md5.Size
	case 2:
		return sha1.Size
	}
	return 0
}

func newHash(ht store.HashType) hash.Hash {
	switch ht {
	case store.HashMD5:
		return md5.New()
	case 2:
		return sha1.New()
	}
	return nil
}

// parseChecksum is Checksum::from_string: "MD5:<hex>".
func parseChecksum(s string) (store.HashType, []byte, error) {
	name, hexsum, ok := strings.Cut(s, ":")
	if !ok {
		return 0, nil, errors.New("invalid checksum string")
	}
	ht, ok := hashNames[name]
	if !ok {
		return 0, nil, fmt.Errorf("invalid checksum name (%s) from %s", name, s)
	}
	if len(hexsum) < 32 || len(hexsum) > 128 || len(hexsum)%2 != 0 {
		return 0, nil, errors.New("invalid checksum string")
	}
	sum := make([]byte, len(hexsum)/2)
	for i := range sum {
		a, b := hexsum[2*i], hexsum[2*i+1]
		if !isHex(a) || !isHex(b) {
			return 0, nil, errors.New("invalid checksum string")
		}
		sum[i] = unhex(a)<<4 | unhex(b)
	}
	if len(sum) != hashLen(ht) {
		return 0, nil, fmt.Errorf("invalid checksum length=%d (expected %d)", len(sum), hashLen(ht))
	}
	return ht, sum, nil
}

func checksumInfo(ht store.HashType, sum []byte) string {
	return hashName(ht) + ":" + fmt.Sprintf("%x", sum)
}
