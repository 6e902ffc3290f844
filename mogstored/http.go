package mogstored

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"
)

// ServeHTTP serves one storage request; the Server is its own handler so
// tests and embedders can also mount it elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	w, r, measured := s.metrics.measure(w, r)
	defer measured()

	w.Header().Set("Server", "gomogile-mogstored")
	s.guardBody(w, r)
	p, err := parseReqPath(r.URL.EscapedPath())
	if errors.Is(err, errDocRoot) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// Perlbal (dirindexing = 0) answers any directory with 200 and this
		// text; mogadm check fetches "/" to see that the node is up.
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.WriteString(w, "<h1>200 - OK</h1>\nDirectory listing disabled")
		}
		return
	}
	if err != nil {
		s.pathError(w, r, err)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, "MKCOL":
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT, DELETE, MKCOL")
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if s.writeRefused(w, r, p) {
		return
	}
	root, err := openDevice(s.cfg.DocRoot, p.dev)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Perlbal's min_put_directory check answers the same.
			httpError(w, http.StatusNotFound, "Base directory does not exist")
			return
		}
		s.fsError(w, r, p, err)
		return
	}
	defer root.Close()

	switch r.Method {
	case http.MethodGet, http.MethodHead:
		s.serveFile(w, r, root, p)
	case http.MethodPut:
		s.put(w, r, root, p)
	case http.MethodDelete:
		s.delete(w, r, root, p)
	case "MKCOL":
		s.mkcol(w, r, root, p)
	}
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

func (s *Server) pathError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Debug("refused path", "method", r.Method, "uri", r.RequestURI, "err", err)
	if errors.Is(err, errNotDevice) || errors.Is(err, errDocRoot) {
		httpError(w, http.StatusForbidden, err.Error())
		return
	}
	httpError(w, http.StatusBadRequest, "Invalid filename: "+err.Error())
}

// fsError answers a failed file operation: containment → 403, missing → 404,
// anything else is our problem (507 when the disk is full).
func (s *Server) fsError(w http.ResponseWriter, r *http.Request, p reqPath, err error) {
	err = classify(s.cfg.DocRoot, p, err)
	switch {
	case errors.Is(err, errEscapes):
		s.log.Warn("refused path escaping its device", "method", r.Method, "uri", r.RequestURI, "err", err)
		httpError(w, http.StatusForbidden, "path escapes the device directory")
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		httpError(w, http.StatusNotFound, "Not Found")
	case errors.Is(err, fs.ErrPermission):
		httpError(w, http.StatusForbidden, "permission denied")
	case errors.Is(err, syscall.ENOSPC):
		s.log.Error("disk full", "method", r.Method, "uri", r.RequestURI, "err", err)
		httpError(w, http.StatusInsufficientStorage, "no space left on device")
	default:
		s.log.Error("file operation failed", "method", r.Method, "uri", r.RequestURI, "err", err)
		httpError(w, http.StatusInternalServerError, "internal error")
	}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, root *os.Root, p reqPath) {
	f, err := root.Open(p.rel)
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
		// dirindexing = 0 in the original; a HEAD on a directory must not
		// look like a file to the tracker's size check.
		httpError(w, http.StatusForbidden, "Directory listing disabled")
		return
	}
	ctype := "application/octet-stream"
	if path.Base(p.rel) == "usage" {
		ctype = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	// ServeContent handles Range, If-Modified-Since and HEAD's Content-Length.
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, root *os.Root, p reqPath) {
	if p.rel == "." {
		httpError(w, http.StatusForbidden, "refusing to delete a device directory")
		return
	}
	fi, err := root.Lstat(p.rel)
	if err != nil {
		s.fsError(w, r, p, err)
		return
	}
	if fi.IsDir() {
		// Perlbal unlinks, which fails on a directory with 400.
		httpError(w, http.StatusBadRequest, "is a directory")
		return
	}
	if err := root.Remove(p.rel); err != nil {
		s.fsError(w, r, p, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// mkcol creates a directory and its parents. It is idempotent (200 when the
// directory already exists) because the tracker treats any failure as "cannot
// replicate here", and it never creates a device directory.
func (s *Server) mkcol(w http.ResponseWriter, r *http.Request, root *os.Root, p reqPath) {
	if r.ContentLength > 0 || len(r.TransferEncoding) > 0 {
		httpError(w, http.StatusUnsupportedMediaType, "MKCOL with a body is not supported")
		return
	}
	fi, err := root.Stat(p.rel)
	switch {
	case err == nil && fi.IsDir():
		w.WriteHeader(http.StatusOK)
		return
	case err == nil:
		httpError(w, http.StatusMethodNotAllowed, "a file exists at this path")
		return
	case errors.Is(err, syscall.ENOTDIR):
		httpError(w, http.StatusConflict, "a parent is not a directory")
		return
	case !errors.Is(err, fs.ErrNotExist):
		s.fsError(w, r, p, err)
		return
	}
	if err := root.MkdirAll(p.rel, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			httpError(w, http.StatusConflict, "a parent is not a directory")
			return
		}
		s.fsError(w, r, p, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// put stores the body atomically: temporary file in the target directory,
// fsync, rename. Anything short of a complete, verified body removes the
// temporary file and leaves any previous version of the target untouched.
// A PUT with Content-Range receives its body the same way and then writes
// it into the target at the range's offset (putRange).
func (s *Server) put(w http.ResponseWriter, r *http.Request, root *os.Root, p reqPath) {
	if p.rel == "." || strings.HasSuffix(r.URL.EscapedPath(), "/") {
		httpError(w, http.StatusBadRequest, "Invalid filename: PUT needs a file name")
		return
	}
	rng, ranged, err := parseContentRange(r.Header.Get("Content-Range"))
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if ranged && r.ContentLength >= 0 && r.ContentLength != rng.size() {
		httpError(w, http.StatusBadRequest, "body length does not match Content-Range")
		return
	}
	var wantMD5 []byte
	if h := r.Header.Get("Content-MD5"); h != "" {
		sum, err := base64.StdEncoding.DecodeString(h)
		if err != nil || len(sum) != md5.Size {
			httpError(w, http.StatusBadRequest, "Content-MD5 is not a base64 MD5 digest")
			return
		}
		wantMD5 = sum
	}
	dir, base := path.Split(p.rel)
	if dir == "" {
		dir = "."
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrExist) {
			httpError(w, http.StatusConflict, "a parent is not a directory")
			return
		}
		s.fsError(w, r, p, err)
		return
	}
	tmp := path.Join(dir, "."+base+".tmp-"+randomSuffix())
	f, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		s.fsError(w, r, p, err)
		return
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			if err := root.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.log.Error("removing upload temporary", "file", tmp, "err", err)
			}
		}
	}()

	var sum hash.Hash
	dst := io.Writer(&errWriter{w: f})
	if wantMD5 != nil {
		sum = md5.New()
		dst = io.MultiWriter(dst, sum)
	}
	paced := s.pacedBody(w, r)
	var body io.Reader = paced
	if ranged {
		// A chunked ranged body must not grow past its range.
		body = io.LimitReader(body, rng.size()+1)
	}
	n, err := io.Copy(dst, body)
	if err != nil {
		var we *writeError
		if errors.As(err, &we) {
			s.fsError(w, r, p, we.err)
			return
		}
		if errors.Is(err, errSlowBody) {
			s.log.Warn("upload cut: body stopped or too slow", "uri", truncate(r.RequestURI), "remote", r.RemoteAddr, "received", n,
				"bodytimeout", s.cfg.BodyTimeout, "minbodyrate", s.cfg.MinBodyRate)
			httpError(w, http.StatusRequestTimeout, "upload body stopped or too slow")
			return
		}
		// Short body or the client went away (or Close cut us off).
		s.log.Info("upload aborted", "uri", r.RequestURI, "received", n, "content_length", r.ContentLength, "err", err)
		httpError(w, http.StatusBadRequest, "incomplete upload")
		return
	}
	if paced.eof {
		// Nothing of this request is left on the connection (guardBody).
		w.Header().Del("Connection")
	}
	if r.ContentLength >= 0 && n != r.ContentLength {
		httpError(w, http.StatusBadRequest, "body length does not match Content-Length")
		return
	}
	if ranged && n != rng.size() {
		httpError(w, http.StatusBadRequest, "body length does not match Content-Range")
		return
	}
	if sum != nil && !bytes.Equal(sum.Sum(nil), wantMD5) {
		httpError(w, http.StatusBadRequest, "Content-MD5 mismatch")
		return
	}
	if ranged {
		s.putRange(w, r, root, p, f, rng)
		return
	}
	if err := f.Sync(); err != nil {
		s.fsError(w, r, p, err)
		return
	}
	if err := f.Close(); err != nil {
		s.fsError(w, r, p, err)
		return
	}
	if err := root.Rename(tmp, p.rel); err != nil {
		if fi, serr := root.Lstat(p.rel); serr == nil && fi.IsDir() {
			httpError(w, http.StatusConflict, "a directory exists at this path")
			return
		}
		s.fsError(w, r, p, err)
		return
	}
	committed = true
	syncDir(s, root, dir)
	w.WriteHeader(http.StatusOK)
}

// syncDir makes a rename or a new file in dir durable; a failure is
// logged, not fatal, because the data is already in place.
func syncDir(s *Server, root *os.Root, dir string) {
	if d, err := root.Open(dir); err == nil {
		if err := d.Sync(); err != nil {
			s.log.Warn("syncing directory", "dir", dir, "err", err)
		}
		d.Close()
	}
}

// writeError marks an error as coming from the file, not the request body.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

type errWriter struct{ w io.Writer }

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		return n, &writeError{err}
	}
	return n, nil
}

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand doc)
	return hex.EncodeToString(b[:])
}
