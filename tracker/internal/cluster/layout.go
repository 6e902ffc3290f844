package cluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// FidPath is the path of fid's blob on device devid, laid out as the
// original does (MogileFS::DevFID uri_path):
//
//	/dev<devid>/<b>/<mmm>/<ttt>/<fid zero-padded to 10 digits>.fid
//
// b, mmm and ttt are the first 1, 3 and 3 digits of the padded fid. Every
// blob path, the tracker's and the workers', is built by this function.
func FidPath(devid int, fid int64) string {
	nfid := fmt.Sprintf("%010d", fid)
	return "/dev" + strconv.Itoa(devid) + "/" + nfid[0:1] + "/" + nfid[1:4] + "/" + nfid[4:7] + "/" + nfid + ".fid"
}

// FidDirs are the collections FidPath needs, outermost first: the MKCOLs of
// Device::vivify_directories, which WebDAV servers need before a PUT.
func FidDirs(devid int, fid int64) []string {
	nfid := fmt.Sprintf("%010d", fid)
	d := "/dev" + strconv.Itoa(devid) + "/" + nfid[0:1]
	return []string{d, d + "/" + nfid[1:4], d + "/" + nfid[1:4] + "/" + nfid[4:7]}
}

// WeightedOrder is Util::weighted_list: items in a random order where each
// one's chance to come next is proportional to its weight; items weighing 0
// or less are left out.
func WeightedOrder[T any](items []T, weight func(T) float64) []T {
	type item struct {
		v T
		w float64
	}
	var list []item
	sum := 0.0
	for _, v := range items {
		if w := weight(v); w > 0 {
			list = append(list, item{v, w})
			sum += w
		}
	}
	out := make([]T, 0, len(list))
	for len(list) > 0 {
		r := rand.Float64() * sum
		idx := len(list) - 1
		cur := 0.0
		for i, it := range list {
			cur += it.w
			if cur >= r {
				idx = i
				break
			}
		}
		out = append(out, list[idx].v)
		sum -= list[idx].w
		list = append(list[:idx], list[idx+1:]...)
	}
	return out
}
