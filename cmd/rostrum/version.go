package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version, revision and buildTime are set at link time by release builds
// (`make release`, the Dockerfile):
//
//	go build -ldflags "-X main.version=v0.9.0 -X main.revision=$(git rev-parse HEAD) \
//	  -X main.buildTime=2026-11-22T10:00:00Z" ./cmd/rostrum
//
// Without them the version is the module's (a `go install …@v0.9.0`) or
// "devel", and the build time unknown. The revision the Go toolchain records
// from a git checkout wins over -X main.revision; the flag is the fallback
// where VCS stamping is off (-buildvcs=false, a build context without .git).
var version, revision, buildTime string

// build is the identity of the running binary, from the linker flags above
// and the Go build information (which records the VCS revision of a build
// from a git checkout, unless built with -buildvcs=false).
type build struct {
	Version    string
	Revision   string // VCS commit (else -X main.revision), or "unknown"
	CommitTime string // time of that commit (RFC 3339), or ""
	Modified   bool   // built from a working tree with uncommitted changes
	GoVersion  string
	BuildTime  string // from -X main.buildTime, or ""
}

func readBuild() build {
	b := build{Version: version, Revision: "unknown", GoVersion: runtime.Version(), BuildTime: buildTime}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.CommitTime = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Revision == "unknown" && revision != "" {
		b.Revision = revision
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	return b
}

// revision is the commit, with "-dirty" when the tree had changes.
func (b build) revision() string {
	if b.Modified {
		return b.Revision + "-dirty"
	}
	return b.Revision
}

func cmdVersion(stdout io.Writer) error {
	b := readBuild()
	orUnknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	_, err := fmt.Fprintf(stdout, "rostrum %s\ncommit:      %s\ncommit time: %s\nbuild time:  %s\ngo:          %s %s/%s\n",
		b.Version, b.revision(), orUnknown(b.CommitTime), orUnknown(b.BuildTime), b.GoVersion, runtime.GOOS, runtime.GOARCH)
	return err
}
