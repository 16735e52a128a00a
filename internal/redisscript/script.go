package redisscript

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/redis/go-redis/v9"
)

// includePrefix starts a line that Parse replaces with another file.
const includePrefix = "--! include "

// Script is a Lua script as Redis runs it. It is immutable and safe for
// concurrent use.
type Script struct {
	name string // file name, e.g. "lua/apply.lua"
	src  string // the file after its includes
	sha  string // hex SHA-1 of src: the name EVALSHA uses
}

// New returns the script name with source src, taken as is.
func New(name, src string) *Script {
	h := sha1.Sum([]byte(src))
	return &Script{name: name, src: src, sha: hex.EncodeToString(h[:])}
}

// Parse reads the script file name from fsys and replaces each of its
// "--! include FILE" lines with FILE, read from name's directory. It fails
// when FILE is missing, included twice, or includes a file itself.
func Parse(fsys fs.FS, name string) (*Script, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("redisscript: %w", err)
	}
	seen := map[string]bool{}
	var src strings.Builder
	for line := range strings.Lines(string(b)) {
		file, ok := includeOf(line)
		if !ok {
			src.WriteString(line)
			continue
		}
		if seen[file] {
			return nil, fmt.Errorf("redisscript: %s: %s included twice", name, file)
		}
		seen[file] = true
		inc, err := fs.ReadFile(fsys, path.Join(path.Dir(name), file))
		if err != nil {
			return nil, fmt.Errorf("redisscript: %s: include: %w", name, err)
		}
		for l := range strings.Lines(string(inc)) {
			if _, nested := includeOf(l); nested {
				return nil, fmt.Errorf("redisscript: %s: included file %s includes another", name, file)
			}
		}
		src.Write(inc)
		if len(inc) > 0 && inc[len(inc)-1] != '\n' {
			src.WriteByte('\n')
		}
	}
	return New(name, src.String()), nil
}

// includeOf returns the file an include line names.
func includeOf(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, " \t\r\n"), includePrefix)
	if !ok || strings.TrimSpace(rest) == "" {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// MustParse is Parse for package-level variables over embedded files; it
// panics when Parse fails (a missing or nested include), which fails every
// test of the package at its start. A Lua error is Redis's to find: each
// package's tests load every one of its embedded files (LoadAll).
func MustParse(fsys fs.FS, name string) *Script {
	s, err := Parse(fsys, name)
	if err != nil {
		panic(err)
	}
	return s
}

// ParseAll parses every file of fsys that matches pattern (fs.Glob),
// included files too, in name order.
func ParseAll(fsys fs.FS, pattern string) ([]*Script, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, fmt.Errorf("redisscript: %w", err)
	}
	out := make([]*Script, 0, len(names))
	for _, n := range names {
		s, err := Parse(fsys, n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Name returns the script's file name.
func (s *Script) Name() string { return s.name }

// Source returns the Lua source Redis runs: the file after its includes.
func (s *Script) Source() string { return s.src }

// SHA returns the hex SHA-1 of Source, the name EVALSHA calls it by.
func (s *Script) SHA() string { return s.sha }

// LoadAll loads the scripts into Redis with SCRIPT LOAD. A cluster client
// loads each into every master (go-redis sends SCRIPT LOAD to every shard),
// so that a call routed to any slot finds it. It fails with the first script
// Redis refuses (a Lua syntax error, say).
func LoadAll(ctx context.Context, c redis.UniversalClient, scripts ...*Script) error {
	for _, s := range scripts {
		sha, err := c.ScriptLoad(ctx, s.src).Result()
		if err != nil {
			return fmt.Errorf("redisscript: load %s: %w", s.name, err)
		}
		if sha != s.sha {
			return fmt.Errorf("redisscript: load %s: redis named it %s, want %s", s.name, sha, s.sha)
		}
	}
	return nil
}
