package store

// MaxNamedFid is the largest fid a caller may name in CreateTempFile
// (TempFile.Fid), and so the largest a client may name in create_open.
//
// The bound is 2^53: every fid up to it is exact in an IEEE double, which is
// how SQLite's numeric conversions, JavaScript and JSON tools and Perl
// numbers that went through a float see a fid; and it leaves 2^63 - 2^53
// (about 9.2e18) fids of headroom above it, so the allocator, which always
// hands out one past the largest fid in use, can never be pushed to where a
// BIGINT overflows and every later upload fails.
const MaxNamedFid int64 = 1 << 53
