package tracker

import (
	"fmt"
	"strconv"
)

// FidPath is the path of fid's blob on device devid, as the original lays
// devices out (MogileFS::DevFID uri_path):
//
//	/dev<devid>/<b>/<mmm>/<ttt>/<fid zero-padded to 10 digits>.fid
//
// where b, mmm and ttt are the first 1, 3 and 3 digits of the padded fid.
// Replication, deletion, fsck and tests share this one function.
func FidPath(devid int, fid int64) string {
	nfid := fmt.Sprintf("%010d", fid)
	return "/dev" + strconv.Itoa(devid) + "/" + nfid[0:1] + "/" + nfid[1:4] + "/" + nfid[4:7] + "/" + nfid + ".fid"
}

// fidDirs are the directories FidPath needs, outermost first (the MKCOLs of
// Device::vivify_directories).
func fidDirs(devid int, fid int64) []string {
	nfid := fmt.Sprintf("%010d", fid)
	d := "/dev" + strconv.Itoa(devid)
	return []string{
		d + "/" + nfid[0:1],
		d + "/" + nfid[0:1] + "/" + nfid[1:4],
		d + "/" + nfid[0:1] + "/" + nfid[1:4] + "/" + nfid[4:7],
	}
}
