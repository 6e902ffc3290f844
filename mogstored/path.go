package mogstored

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Path errors, mapped to HTTP statuses by the handler and to "ERROR:" lines
// by the management port.
var (
	errBadPath   = errors.New("invalid path")                   // 400
	errDotDot    = errors.New("uri invalid (contains ..)")      // 400, the original's wording
	errNotDevice = errors.New("path is not below a dev<N> dir") // 403
	errEscapes   = errors.New("path escapes the device directory")
	errDocRoot   = errors.New("path is the docroot itself")
)

// reqPath is a request path split into its device directory and the path
// below it.
type reqPath struct {
	dev string // "dev<N>"
	rel string // slash-separated, "." for the device directory itself
}

// parseReqPath checks a raw (still escaped) request path. Only plain
// /dev<N>/seg/… paths are accepted: Perlbal refused anything containing ".."
// and anything but [\w.-] segments, and we also refuse percent-encoding (so
// "%2e%2e" cannot turn into "..") and dot-leading segments (our upload
// temporaries are dot-files). Empty segments are skipped, as Perlbal's
// docroot.uri concatenation let the file system skip them: mogadm check asks
// for "http://host:port//devN/usage".
func parseReqPath(raw string) (reqPath, error) {
	if strings.Contains(raw, "..") {
		return reqPath{}, errDotDot
	}
	if !strings.HasPrefix(raw, "/") {
		return reqPath{}, fmt.Errorf("%w: must start with /", errBadPath)
	}
	var segs []string
	for _, s := range strings.Split(raw[1:], "/") {
		if s == "" {
			continue // "//" and a trailing slash (MKCOL sends one)
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return reqPath{}, errDocRoot
	}
	for _, s := range segs {
		if s[0] == '.' {
			return reqPath{}, fmt.Errorf("%w: segment %q starts with a dot", errBadPath, s)
		}
		for _, c := range []byte(s) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				return reqPath{}, fmt.Errorf("%w: character %q", errBadPath, c)
			}
		}
	}
	if !isDevDir(segs[0]) {
		return reqPath{}, errNotDevice
	}
	rel := "."
	if len(segs) > 1 {
		rel = strings.Join(segs[1:], "/")
	}
	return reqPath{dev: segs[0], rel: rel}, nil
}

// isDevDir reports whether name is "dev" followed by decimal digits, the
// original's /^dev\d+$/.
func isDevDir(name string) bool {
	if len(name) < 4 || !strings.HasPrefix(name, "dev") {
		return false
	}
	return strings.Trim(name[3:], "0123456789") == ""
}

// openDevice opens an os.Root on docroot/dev<N>. All file access goes through
// it, so symlinks cannot lead outside the device directory. A missing device
// directory is fs.ErrNotExist: we never create one.
func openDevice(docroot, dev string) (*os.Root, error) {
	root, err := os.OpenRoot(filepath.Join(docroot, dev))
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("%s is not a directory: %w", dev, fs.ErrNotExist)
		}
		return nil, err
	}
	return root, nil
}

// classify turns an error from an os.Root operation into one of ours when the
// cause was containment. os.Root reports an escape with an error that carries
// no errno; we also resolve the path ourselves, so a symlink pointing outside
// is recognised even when the root's error is a plain ENOENT.
func classify(docroot string, p reqPath, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || escapes(filepath.Join(docroot, p.dev), p.rel) {
		return fmt.Errorf("%w: %w", errEscapes, err)
	}
	return err
}

// escapes resolves rel below dir one component at a time and reports whether
// any symlink on the way resolves outside dir.
func escapes(dir, rel string) bool {
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	cur := base
	for _, comp := range strings.Split(rel, "/") {
		if comp == "." {
			continue
		}
		next := filepath.Join(cur, comp)
		fi, err := os.Lstat(next)
		if err != nil {
			return false // nothing beyond a missing component can escape
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(next)
			if err != nil {
				return true
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			if resolved, err := filepath.EvalSymlinks(target); err == nil {
				target = resolved
			}
			if !within(base, target) {
				return true
			}
			cur = target
			continue
		}
		cur = next
	}
	return false
}

func within(base, p string) bool {
	r, err := filepath.Rel(base, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}
