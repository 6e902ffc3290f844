package mogstored

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// tempName matches our upload and usage temporaries (".<name>.tmp-<hex>").
var tempName = regexp.MustCompile(`^\..+\.tmp-[0-9a-f]{16}$`)

// staleTempAge is how long a temporary must have been untouched before the
// start-up sweep removes it. Uploads in progress write continuously, so only
// leftovers of a crash or a kill -9 are this old.
const staleTempAge = time.Hour

// sweepTemps removes stale temporaries under every device directory once,
// in the background after start: a killed process cannot clean up after its
// cut uploads. It does not follow symlinks.
func (s *Server) sweepTemps(ctx context.Context) {
	devs, err := deviceDirs(s.cfg.DocRoot)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-staleTempAge)
	removed := 0
	for _, dev := range devs {
		// A device directory may itself be a symlink to its disk; WalkDir
		// would not descend into it.
		root, err := filepath.EvalSymlinks(filepath.Join(s.cfg.DocRoot, dev))
		if err != nil {
			continue
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return filepath.SkipAll
			}
			if err != nil || !d.Type().IsRegular() || !tempName.MatchString(d.Name()) {
				return nil
			}
			if fi, err := d.Info(); err == nil && fi.ModTime().Before(cutoff) {
				if err := os.Remove(p); err == nil {
					removed++
				}
			}
			return nil
		})
	}
	if removed > 0 {
		s.log.Info("removed stale upload temporaries", "count", removed)
	}
}
