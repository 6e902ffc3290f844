package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Keys are big-endian so that bbolt's byte order is numeric order; records
// are a sequence of varints and length-prefixed strings, in a fixed order
// per record type. A record that does not decode is reported, never
// guessed at.

// u64 is the 8-byte big-endian key of a non-negative id.
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }

// id64 is u64 of an id of the contract (dmid, fid, devid, …).
func id64[T ~int | ~int64](v T) []byte { return u64(uint64(v)) }

// getU64 reads an 8-byte key or value; 0 for a short one.
func getU64(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// cat joins key parts.
func cat(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// timeKey orders Unix nanoseconds, negative ones (an imported zero time)
// included: the sign bit flipped.
func timeKey(ns int64) []byte { return u64(uint64(ns) ^ 1<<63) }

// nanos is t in Unix nanoseconds; 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos is nanos' inverse: the zero time for 0, and always the same
// time.Time value for the same number, so that rows compare equal with ==.
func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// errCorrupt reports a record that does not decode.
var errCorrupt = errors.New("boltstore: corrupt record")

type enc struct{ b []byte }

func (e *enc) int(v int64) *enc { e.b = binary.AppendVarint(e.b, v); return e }
func (e *enc) str(s string) *enc {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
	return e
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string {
	if d.err != nil {
		return ""
	}
	l, n := binary.Uvarint(d.b)
	if n <= 0 || uint64(len(d.b)-n) < l {
		d.err = errCorrupt
		return ""
	}
	s := string(d.b[n : n+int(l)])
	d.b = d.b[n+int(l):]
	return s
}

// done reports a decoding error, naming what was read.
func (d *dec) done(what string, key []byte) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errCorrupt
	}
	if d.err != nil {
		return fmt.Errorf("%w: %s %x", d.err, what, key)
	}
	return nil
}
