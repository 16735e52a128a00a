package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/rostrumhq/rostrum/wal"
)

// DiskOp is an operation of a Disk that a fault can fail.
type DiskOp int

const (
	// DiskWrite fails a Write on a file after half of its bytes reached
	// the file: a short write, as write(2) does when the disk fills up in
	// the middle of it (ENOSPC).
	DiskWrite DiskOp = iota
	// DiskSync fails the fsync of a regular file. Before it returns the
	// error, the bytes written to the file since its last successful fsync
	// are overwritten with zeros: after a failed fsync the kernel may have
	// dropped those dirty pages, and a later fsync that succeeds does not
	// bring them back. A log that fsyncs again and trusts it reads zeros.
	DiskSync
	// DiskDirSync fails the fsync of a directory (after a segment was
	// created or removed).
	DiskDirSync
	// DiskTruncate fails a Truncate.
	DiskTruncate
	// DiskCreate fails an OpenFile with os.O_CREATE (no space for a new
	// file).
	DiskCreate
	diskOps
)

func (o DiskOp) String() string {
	switch o {
	case DiskWrite:
		return "write"
	case DiskSync:
		return "fsync"
	case DiskDirSync:
		return "directory fsync"
	case DiskTruncate:
		return "truncate"
	case DiskCreate:
		return "create"
	}
	return fmt.Sprintf("DiskOp(%d)", int(o))
}

// Disk is a wal.FS over the operating system's file system that fails
// chosen operations while a fault is set, as a full or failing disk would.
// Faults are set and healed from the test while the log runs; Disk is safe
// for concurrent use. Reads never fail.
type Disk struct {
	mu     sync.Mutex
	faults [diskOps]diskFault
	hits   [diskOps]int
	synced map[string]int64 // path → size at the last successful fsync (or first open)
}

type diskFault struct {
	err   error
	times int // failures left; < 0: until healed
}

var _ wal.FS = (*Disk)(nil)

// NewDisk returns a Disk without faults.
func NewDisk() *Disk { return &Disk{synced: map[string]int64{}} }

// Fail makes the next times operations op fail with err (times < 0: every
// one until Heal).
func (d *Disk) Fail(op DiskOp, err error, times int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults[op] = diskFault{err: err, times: times}
}

// Heal removes every fault.
func (d *Disk) Heal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = [diskOps]diskFault{}
}

// Hits returns how many operations op failed because of a fault.
func (d *Disk) Hits(op DiskOp) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[op]
}

// fault returns the error op must fail with now, or nil.
func (d *Disk) fault(op DiskOp) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := &d.faults[op]
	if f.err == nil || f.times == 0 {
		return nil
	}
	if f.times > 0 {
		f.times--
	}
	d.hits[op]++
	return f.err
}

// OpenFile opens name on the operating system's file system.
func (d *Disk) OpenFile(name string, flag int, perm fs.FileMode) (wal.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := d.fault(DiskCreate); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.IsDir() {
		d.mu.Lock()
		if _, ok := d.synced[name]; !ok {
			d.synced[name] = st.Size()
		}
		d.mu.Unlock()
	}
	return &diskFile{File: f, d: d, dir: st.IsDir()}, nil
}

// Remove removes name.
func (d *Disk) Remove(name string) error {
	d.mu.Lock()
	delete(d.synced, name)
	d.mu.Unlock()
	return os.Remove(name)
}

// ReadDir lists name.
func (d *Disk) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// MkdirAll creates path.
func (d *Disk) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }

// diskFile is an open file of a Disk.
type diskFile struct {
	*os.File
	d   *Disk
	dir bool
}

func (f *diskFile) Write(p []byte) (int, error) {
	if err := f.d.fault(DiskWrite); err != nil {
		n, werr := f.File.Write(p[:len(p)/2])
		if werr != nil {
			return n, werr
		}
		return n, &fs.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return f.File.Write(p)
}

func (f *diskFile) Sync() error {
	if f.dir {
		if err := f.d.fault(DiskDirSync); err != nil {
			return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
		}
		return f.File.Sync()
	}
	if err := f.d.fault(DiskSync); err != nil {
		if zerr := f.dropUnsynced(); zerr != nil {
			return errors.Join(err, zerr)
		}
		return &fs.PathError{Op: "sync", Path: f.Name(), Err: err}
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	f.d.mu.Lock()
	f.d.synced[f.Name()] = st.Size()
	f.d.mu.Unlock()
	return nil
}

// dropUnsynced overwrites with zeros what was written to the file since its
// last successful fsync.
func (f *diskFile) dropUnsynced() error {
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	f.d.mu.Lock()
	from := f.d.synced[f.Name()]
	f.d.mu.Unlock()
	if st.Size() <= from {
		return nil
	}
	// A descriptor of its own: the log's may be O_APPEND, where WriteAt is
	// refused.
	w, err := os.OpenFile(f.Name(), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = w.WriteAt(make([]byte, st.Size()-from), from)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func (f *diskFile) Truncate(size int64) error {
	if err := f.d.fault(DiskTruncate); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.Name(), Err: err}
	}
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	f.d.mu.Lock()
	if s, ok := f.d.synced[f.Name()]; ok && s > size {
		f.d.synced[f.Name()] = size
	}
	f.d.mu.Unlock()
	return nil
}
