package processor

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMemberFile: the member file round-trips, a missing file records
// nothing, anything else is refused, and the version 1 fixture still reads.
func TestMemberFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "group-member")
	if g, m, err := readMemberFile(path); err != nil || g != "" || m != "" {
		t.Fatalf("missing file: %q %q %v", g, m, err)
	}
	if err := writeMemberFile(path, "rostrum-test", "kgo-1"); err != nil {
		t.Fatal(err)
	}
	if g, m, err := readMemberFile(path); err != nil || g != "rostrum-test" || m != "kgo-1" {
		t.Fatalf("round trip: %q %q %v", g, m, err)
	}
	for _, bad := range []string{"", "kgo-1\n", "rostrum-group-member 2\ng\nm\n", "rostrum-group-member 1\ng\n\n", "rostrum-group-member 1\ng\nm\nx\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := readMemberFile(path); err == nil {
			t.Errorf("%q: read without an error", bad)
		}
	}
	g, m, err := readMemberFile(filepath.Join("testdata", "group-member.v1"))
	if err != nil || g != "rostrum-prod" || m != "rostrum-7a1c-0d9e41b2-5f7a-4c1e-9d0b-2a6e3f4c5b6d" {
		t.Fatalf("testdata/group-member.v1: %q %q %v", g, m, err)
	}
}
