package query

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"strings"

	"github.com/gomogile/gomogile/store"
)

// digest fetches url and hashes it with ht.
func (e *Env) digest(ctx context.Context, url string, ht store.HashType) ([]byte, error) {
	h := ht.New()
	if h == nil {
		return nil, fmt.Errorf("unknown hashtype %d", ht)
	}
	return e.Nodes.Digest(ctx, url, h)
}

// parseChecksum is Checksum::from_string: "MD5:<hex>".
func parseChecksum(s string) (store.HashType, []byte, error) {
	name, hexsum, ok := strings.Cut(s, ":")
	if !ok {
		return 0, nil, errors.New("invalid checksum string")
	}
	ht, ok := store.ParseHashType(name)
	if !ok || ht == store.HashNone {
		return 0, nil, fmt.Errorf("invalid checksum name (%s) from %s", name, s)
	}
	if len(hexsum) < 32 || len(hexsum) > 128 || len(hexsum)%2 != 0 {
		return 0, nil, errors.New("invalid checksum string")
	}
	sum, err := hex.DecodeString(hexsum)
	if err != nil {
		return 0, nil, errors.New("invalid checksum string")
	}
	if len(sum) != ht.Size() {
		return 0, nil, fmt.Errorf("invalid checksum length=%d (expected %d)", len(sum), ht.Size())
	}
	return ht, sum, nil
}

func checksumInfo(ht store.HashType, sum []byte) string {
	return ht.String() + ":" + fmt.Sprintf("%x", sum)
}
