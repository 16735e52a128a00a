package wal

import (
	"io"
	"io/fs"
	"os"
)

// FS is the file system a Log keeps its segments on. Config.FS nil means
// the operating system's (OSFS). Tests pass one that wraps OSFS and fails
// chosen operations (ENOSPC on a write, EIO on an fsync or a directory
// fsync) to check what the log does when the disk fails.
//
// The directory lock (dir/LOCK, an flock on an open descriptor) is always
// taken on the operating system's file system: an FS wraps the disk the
// segments live on, it does not replace the kernel's locking.
type FS interface {
	// OpenFile opens a file as os.OpenFile does. The log opens a directory
	// with os.O_RDONLY to fsync it after creating or removing a segment.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove removes a file, as os.Remove.
	Remove(name string) error
	// ReadDir lists a directory sorted by file name, as os.ReadDir.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its parents, as os.MkdirAll.
	MkdirAll(path string, perm fs.FileMode) error
}

// File is an open file of an FS; *os.File implements it.
type File interface {
	io.Writer
	io.ReaderAt
	io.WriterAt
	// Sync commits the file's written data (or a directory's entries) to
	// stable storage, as fsync(2).
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
	Close() error
	// Name is the name the file was opened with, for error messages.
	Name() string
}

// OSFS is the operating system's file system, the default FS.
type OSFS struct{}

var _ FS = OSFS{}

// OpenFile calls os.OpenFile.
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return f, nil
}

// Remove calls os.Remove.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// ReadDir calls os.ReadDir.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// MkdirAll calls os.MkdirAll.
func (OSFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
