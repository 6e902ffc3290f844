package mogstored

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
)

// byteRange is the range of a PUT's Content-Range header, "bytes
// first-last/total" with total -1 for "*".
type byteRange struct {
	first, last, total int64
}

func (b byteRange) size() int64 { return b.last - b.first + 1 }

// errBadContentRange is the 400 answer to a Content-Range header we cannot
// write: anything but "bytes first-last/total" or "bytes first-last/*"
// with first <= last (< total).
var errBadContentRange = errors.New(`bad Content-Range: want "bytes first-last/total" or "bytes first-last/*"`)

// parseContentRange reads a PUT's Content-Range (RFC 9110 section 14.4):
// ok is false when h is empty.
func parseContentRange(h string) (b byteRange, ok bool, err error) {
	if h == "" {
		return byteRange{}, false, nil
	}
	spec, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return byteRange{}, false, errBadContentRange
	}
	rng, total, found := strings.Cut(spec, "/")
	if !found {
		return byteRange{}, false, errBadContentRange
	}
	first, last, found := strings.Cut(rng, "-")
	if !found {
		return byteRange{}, false, errBadContentRange
	}
	b.total = -1
	if b.first, err = parseOffset(first); err == nil {
		b.last, err = parseOffset(last)
	}
	if err == nil && total != "*" {
		b.total, err = parseOffset(total)
	}
	if err != nil || b.last < b.first || (b.total >= 0 && b.last >= b.total) {
		return byteRange{}, false, errBadContentRange
	}
	return b, true, nil
}

// parseOffset accepts plain decimal digits only (no sign, no spaces).
func parseOffset(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, errBadContentRange
	}
	return strconv.ParseInt(s, 10, 64)
}

// putRange writes a received, verified range body (in tmp) into the target
// at the range's offset, as Apache's mod_dav does for the largefile mode of
// MogileFS::Client (MogileFS::ClientHTTPFile): an empty PUT creates the
// file, then each chunk arrives as "Content-Range: bytes pos-end/*". The
// target grows but is never truncated; create_close's size check judges
// the result. The range must start within the file or at its end, so a
// lost chunk shows up as 416 on the next one rather than as a hole of
// zeros. A failed write shrinks the file back to its old size.
func (s *Server) putRange(w http.ResponseWriter, r *http.Request, root *os.Root, p reqPath, tmp *os.File, b byteRange) {
	flags := os.O_WRONLY
	if b.first == 0 {
		flags |= os.O_CREATE
	}
	f, err := root.OpenFile(p.rel, flags, 0o644)
	if errors.Is(err, fs.ErrNotExist) && b.first > 0 {
		w.Header().Set("Content-Range", "bytes */0")
		httpError(w, http.StatusRequestedRangeNotSatisfiable, "range starts beyond the end of the file")
		return
	}
	if errors.Is(err, syscall.EISDIR) {
		httpError(w, http.StatusConflict, "a directory exists at this path")
		return
	}
	if err != nil {
		s.fsError(w, r, p, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.fsError(w, r, p, err)
		return
	}
	if !fi.Mode().IsRegular() {
		httpError(w, http.StatusConflict, "not a regular file")
		return
	}
	if b.first > fi.Size() {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", fi.Size()))
		httpError(w, http.StatusRequestedRangeNotSatisfiable, "range starts beyond the end of the file")
		return
	}
	_, err = io.Copy(io.NewOffsetWriter(f, b.first), io.NewSectionReader(tmp, 0, b.size()))
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		if b.last >= fi.Size() {
			if terr := f.Truncate(fi.Size()); terr != nil {
				s.log.Error("shrinking a file after a failed range write", "uri", r.RequestURI, "err", terr)
			}
		}
		s.fsError(w, r, p, err)
		return
	}
	if fi.Size() == 0 && b.first == 0 {
		dir, _ := path.Split(p.rel)
		syncDir(s, root, path.Clean("./"+dir))
	}
	w.WriteHeader(http.StatusOK)
}
