package mogstored

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// diskUsage is one usage file's content. Sizes are KiB, as "df -k" printed
// them for the original (Mogstored::ChildProcess::DiskUsage).
type diskUsage struct {
	Available uint64
	Device    string // filesystem source, e.g. /dev/sdh1
	Disk      string // mount point if the device directory is one, else docroot/dev<N>
	Time      int64
	Total     uint64 // used + available: reserved blocks are left out, as the original did
	Used      uint64
	Use       string // "45%", df's rounding (up)
}

// format renders the usage file: "key: value" lines sorted by key, the
// original's layout, which the tracker's monitor parses with /^(\w+)\s*:\s*(.+)$/.
func (u diskUsage) format() string {
	kv := map[string]string{
		"available": strconv.FormatUint(u.Available, 10),
		"device":    u.Device,
		"disk":      u.Disk,
		"time":      strconv.FormatInt(u.Time, 10),
		"total":     strconv.FormatUint(u.Total, 10),
		"used":      strconv.FormatUint(u.Used, 10),
		"use":       u.Use,
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, kv[k])
	}
	return b.String()
}

// usePercent is GNU df's Use%: used/(used+avail), rounded up.
func usePercent(used, avail uint64) string {
	total := used + avail
	if total == 0 {
		return "-"
	}
	pct := used * 100 / total
	if used*100%total != 0 {
		pct++
	}
	return strconv.FormatUint(pct, 10) + "%"
}

// measureUsage statfs'es a device directory.
func measureUsage(docroot, dev string, now time.Time) (diskUsage, error) {
	dir := filepath.Join(docroot, dev)
	st, err := statFS(dir)
	if err != nil {
		return diskUsage{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	used := (st.blocks - st.free) * st.blockSize / 1024
	avail := st.avail * st.blockSize / 1024
	device, mount := mountOf(dir)
	disk := dir
	// The original kept df's mount point only when it was the device
	// directory itself.
	if mount != "" && filepath.Base(mount) == dev {
		disk = mount
	}
	return diskUsage{
		Available: avail,
		Device:    device,
		Disk:      disk,
		Time:      now.Unix(),
		Total:     used + avail,
		Used:      used,
		Use:       usePercent(used, avail),
	}, nil
}

// deviceDirs lists the dev<N> directories (or symlinks to directories) of
// the docroot.
func deviceDirs(docroot string) ([]string, error) {
	ents, err := os.ReadDir(docroot)
	if err != nil {
		return nil, err
	}
	var devs []string
	for _, e := range ents {
		if !isDevDir(e.Name()) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(docroot, e.Name())); err == nil && fi.IsDir() {
			devs = append(devs, e.Name())
		}
	}
	return devs, nil
}

// writeUsageFiles refreshes docroot/dev<N>/usage for every device. Each file
// is replaced by rename, so the monitor never reads a half-written one (the
// original padded and truncated in place to narrow that race).
func (s *Server) writeUsageFiles() {
	devs, err := deviceDirs(s.cfg.DocRoot)
	if err != nil {
		s.log.Error("listing device directories", "docroot", s.cfg.DocRoot, "err", err)
		return
	}
	now := time.Now()
	for _, dev := range devs {
		u, err := measureUsage(s.cfg.DocRoot, dev, now)
		if err != nil {
			s.log.Error("measuring disk usage", "dev", dev, "err", err)
			continue
		}
		if err := writeUsageFile(s.cfg.DocRoot, dev, u.format()); err != nil {
			s.log.Error("writing usage file", "dev", dev, "err", err)
		}
	}
}

func writeUsageFile(docroot, dev, content string) error {
	root, err := openDevice(docroot, dev)
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := ".usage.tmp-" + randomSuffix()
	if err := root.WriteFile(tmp, []byte(content), 0o644); err != nil {
		root.Remove(tmp)
		return err
	}
	if err := root.Rename(tmp, "usage"); err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

func (s *Server) usageLoop() {
	t := time.NewTicker(s.cfg.UsageInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.writeUsageFiles()
		}
	}
}
