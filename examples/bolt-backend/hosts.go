package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gomogile/gomogile/store"
)

// Hosts and devices. Host names and IPs are unique, as MogileFS's UNIQUE
// columns make them, through two name → hostid indexes.

func encodeHost(h store.Host) []byte {
	e := &enc{}
	e.str(h.Name).str(string(h.Status)).int(int64(h.HTTPPort)).int(int64(h.HTTPGetPort)).str(h.IP).str(h.AltIP).str(h.AltMask)
	return e.b
}

func decodeHost(id int, v []byte) (store.Host, error) {
	d := &dec{b: v}
	h := store.Host{ID: id, Name: d.str(), Status: store.HostStatus(d.str()), HTTPPort: int(d.int()), HTTPGetPort: int(d.int()),
		IP: d.str(), AltIP: d.str(), AltMask: d.str()}
	return h, d.done("host", v)
}

// claimHostIndexes checks that h's name and IP are free or already h's.
func claimHostIndexes(tx *bolt.Tx, h store.Host) error {
	if v := tx.Bucket(bHostName).Get([]byte(h.Name)); v != nil && int(getU64(v)) != h.ID {
		return fmt.Errorf("%w: host name %q is host %d's", store.ErrDuplicate, h.Name, getU64(v))
	}
	if v := tx.Bucket(bHostIP).Get([]byte(h.IP)); v != nil && int(getU64(v)) != h.ID {
		return fmt.Errorf("%w: host ip %s is host %d's", store.ErrDuplicate, h.IP, getU64(v))
	}
	return nil
}

func putHost(tx *bolt.Tx, h store.Host) error {
	if err := tx.Bucket(bHost).Put(id64(h.ID), encodeHost(h)); err != nil {
		return err
	}
	if err := tx.Bucket(bHostName).Put([]byte(h.Name), id64(h.ID)); err != nil {
		return err
	}
	return tx.Bucket(bHostIP).Put([]byte(h.IP), id64(h.ID))
}

func (b *backend) CreateHost(ctx context.Context, h store.Host) (store.Host, error) {
	err := b.write(ctx, func(tx *bolt.Tx) error {
		hosts := tx.Bucket(bHost)
		if h.ID != 0 && hosts.Get(id64(h.ID)) != nil {
			return fmt.Errorf("%w: hostid %d", store.ErrDuplicate, h.ID)
		}
		// Id 0 is nobody's: the name and IP must be free.
		if err := claimHostIndexes(tx, store.Host{Name: h.Name, IP: h.IP}); err != nil {
			return err
		}
		if h.ID == 0 {
			id, err := nextID(hosts, nil, 1, store.MaxHostID)
			if err != nil {
				return err
			}
			h.ID = int(id)
		}
		return putHost(tx, h)
	})
	if err != nil {
		return store.Host{}, err
	}
	return h, nil
}

func (b *backend) UpdateHost(ctx context.Context, h store.Host) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bHost).Get(id64(h.ID))
		if v == nil {
			return fmt.Errorf("%w: host %d", store.ErrNotFound, h.ID)
		}
		old, err := decodeHost(h.ID, v)
		if err != nil {
			return err
		}
		if err := claimHostIndexes(tx, h); err != nil {
			return err
		}
		if err := tx.Bucket(bHostName).Delete([]byte(old.Name)); err != nil {
			return err
		}
		if err := tx.Bucket(bHostIP).Delete([]byte(old.IP)); err != nil {
			return err
		}
		return putHost(tx, h)
	})
}

func (b *backend) DeleteHost(ctx context.Context, hostid int) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		v := tx.Bucket(bHost).Get(id64(hostid))
		if v == nil {
			return fmt.Errorf("%w: host %d", store.ErrNotFound, hostid)
		}
		h, err := decodeHost(hostid, v)
		if err != nil {
			return err
		}
		// Devices are few (one row per disk): a scan beats an index.
		err = tx.Bucket(bDevice).ForEach(func(k, v []byte) error {
			d, err := decodeDevice(int(getU64(k)), v)
			if err == nil && d.HostID == hostid {
				err = fmt.Errorf("%w: host %d has device %d", store.ErrHasDevices, hostid, d.ID)
			}
			return err
		})
		if err != nil {
			return err
		}
		if err := tx.Bucket(bHostName).Delete([]byte(h.Name)); err != nil {
			return err
		}
		if err := tx.Bucket(bHostIP).Delete([]byte(h.IP)); err != nil {
			return err
		}
		return tx.Bucket(bHost).Delete(id64(hostid))
	})
}

func (b *backend) Hosts(ctx context.Context) ([]store.Host, error) {
	var out []store.Host
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bHost).ForEach(func(k, v []byte) error {
			h, err := decodeHost(int(getU64(k)), v)
			out = append(out, h)
			return err
		})
	})
	return out, err
}

func encodeDevice(d store.Device) []byte {
	e := &enc{}
	e.int(int64(d.HostID)).str(string(d.Status)).int(int64(d.Weight)).int(d.MBTotal).int(d.MBUsed).int(nanos(d.MBAsOf))
	return e.b
}

func decodeDevice(id int, v []byte) (store.Device, error) {
	d := &dec{b: v}
	dev := store.Device{ID: id, HostID: int(d.int()), Status: store.DeviceState(d.str()), Weight: int(d.int()),
		MBTotal: d.int(), MBUsed: d.int(), MBAsOf: fromNanos(d.int())}
	return dev, d.done("device", v)
}

func (b *backend) CreateDevice(ctx context.Context, d store.Device) (store.Device, error) {
	err := b.write(ctx, func(tx *bolt.Tx) error {
		devs := tx.Bucket(bDevice)
		if d.ID != 0 && devs.Get(id64(d.ID)) != nil {
			return fmt.Errorf("%w: devid %d", store.ErrDuplicate, d.ID)
		}
		if tx.Bucket(bHost).Get(id64(d.HostID)) == nil {
			return fmt.Errorf("%w: host %d", store.ErrNotFound, d.HostID)
		}
		if d.ID == 0 {
			id, err := nextID(devs, nil, 1, store.MaxDeviceID)
			if err != nil {
				return err
			}
			d.ID = int(id)
		}
		return devs.Put(id64(d.ID), encodeDevice(d))
	})
	if err != nil {
		return store.Device{}, err
	}
	return d, nil
}

// updateDevice applies f to device devid's row.
func (b *backend) updateDevice(ctx context.Context, devid int, f func(d *store.Device)) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		devs := tx.Bucket(bDevice)
		v := devs.Get(id64(devid))
		if v == nil {
			return fmt.Errorf("%w: device %d", store.ErrNotFound, devid)
		}
		d, err := decodeDevice(devid, v)
		if err != nil {
			return err
		}
		f(&d)
		return devs.Put(id64(devid), encodeDevice(d))
	})
}

func (b *backend) SetDeviceState(ctx context.Context, devid int, state store.DeviceState) error {
	return b.updateDevice(ctx, devid, func(d *store.Device) { d.Status = state })
}

func (b *backend) SetDeviceWeight(ctx context.Context, devid int, weight int) error {
	return b.updateDevice(ctx, devid, func(d *store.Device) { d.Weight = weight })
}

func (b *backend) SetDeviceUsage(ctx context.Context, devid int, mbTotal, mbUsed int64) error {
	return b.updateDevice(ctx, devid, func(d *store.Device) {
		d.MBTotal, d.MBUsed, d.MBAsOf = mbTotal, mbUsed, time.Now().Round(0)
	})
}

func (b *backend) DeleteDevice(ctx context.Context, devid int) error {
	return b.write(ctx, func(tx *bolt.Tx) error {
		devs := tx.Bucket(bDevice)
		if devs.Get(id64(devid)) == nil {
			return fmt.Errorf("%w: device %d", store.ErrNotFound, devid)
		}
		if hasPrefix(tx.Bucket(bFileOnDev), id64(devid)) {
			return fmt.Errorf("%w: device %d holds copies", store.ErrHasFiles, devid)
		}
		return devs.Delete(id64(devid))
	})
}

func (b *backend) Devices(ctx context.Context) ([]store.Device, error) {
	var out []store.Device
	err := b.read(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bDevice).ForEach(func(k, v []byte) error {
			d, err := decodeDevice(int(getU64(k)), v)
			out = append(out, d)
			return err
		})
	})
	return out, err
}
