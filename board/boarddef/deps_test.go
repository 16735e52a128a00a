package boarddef

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoRedisOrKafka holds the package to its definitions: nothing of
// Redis (go-redis, internal/redisscript, package board, which keeps the
// boards' state there) and no Kafka client may be in its dependency graph.
func TestNoRedisOrKafka(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH")
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/rostrumhq/rostrum/"
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.Contains(pkg, "redis") || strings.HasPrefix(pkg, "github.com/twmb/franz-go") || pkg == module+"board" {
			bad = append(bad, pkg)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("board/boarddef depends on %s: what needs Redis belongs in package board", strings.Join(bad, " "))
	}
	if !strings.Contains(string(out), module+"codec") {
		t.Fatalf("go list -deps does not list codec; the check above saw nothing:\n%s", out)
	}
}
