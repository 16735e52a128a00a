// Package deployments_test checks the deployment files of rostrum: the
// Dockerfile, the compose stack, the Prometheus and Grafana configuration, the
// Grafana dashboard and the Kubernetes manifests. None of it needs Docker or a
// cluster: the files are parsed and cross-checked against each other, against
// rostrum's flags and against the metric names the metrics package exports.
package deployments_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/metrics"
)

const env = "prod"

// topics are the topics of env prod that the compose stack creates.
var topics = []string{
	env + ".callbacks.rtc",
	env + ".callbacks.client",
	env + ".callbacks.signal",
	env + ".callbacks.dlq",
	env + ".ranking.topn",
	env + ".recording.commands",
	env + ".rooms.layout",
}

// compacted are the topics created compacted.
var compacted = map[string]bool{env + ".ranking.topn": true, env + ".rooms.layout": true}

// readYAML decodes every document of a YAML file.
func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", path)
	}
	return docs
}

func readYAML1(t *testing.T, path string) map[string]any {
	t.Helper()
	docs := readYAML(t, path)
	if len(docs) != 1 {
		t.Fatalf("%s: %d YAML documents, want 1", path, len(docs))
	}
	return docs[0]
}

// get walks a decoded YAML/JSON value by map keys and list indexes (as
// ints); it fails the test when a step is missing.
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	cur := v
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: not a map at %v", path, path[:i])
			}
			cur, ok = m[k]
			if !ok {
				t.Fatalf("%v: no key %q", path, k)
			}
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: no element %d", path, k)
			}
			cur = l[k]
		}
	}
	return cur
}

func str(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, ok := get(t, v, path...).(string)
	if !ok {
		t.Fatalf("%v: not a string: %#v", path, get(t, v, path...))
	}
	return s
}

// strings of a YAML list, or of a single string.
func strList(t *testing.T, v any, path ...any) []string {
	t.Helper()
	switch x := get(t, v, path...).(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				t.Fatalf("%v[%d]: not a string: %#v", path, i, e)
			}
			out[i] = s
		}
		return out
	default:
		t.Fatalf("%v: not a string or a list: %#v", path, x)
		return nil
	}
}

// knownFlags are the flag names of `rostrum run`: those of its table in
// docs/configuration.md (generated from the binary), plus http (the address
// of the HTTP server).
func knownFlags(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]bool{"http": true}
	re := regexp.MustCompile("^\\| `--([a-z0-9-]+)`")
	sc := bufio.NewScanner(bytes.NewReader(b))
	inRun := false
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "### "); ok {
			inRun = h == "rostrum run"
		}
		if m := re.FindStringSubmatch(sc.Text()); m != nil && inRun {
			flags[m[1]] = true
		}
	}
	for _, f := range []string{"brokers", "redis", "env", "wal-dir", "log-format", "top-n"} {
		if !flags[f] {
			t.Fatalf("docs/configuration.md: the table of rostrum run lacks --%s; cannot check flag names", f)
		}
	}
	return flags
}

func TestEveryYAMLFileParses(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// A Helm chart's templates are Go templates, not YAML: they are
		// checked once rendered (tools/kubecheck).
		if d.IsDir() && d.Name() == "templates" && strings.HasPrefix(path, "helm/") {
			return filepath.SkipDir
		}
		if d.IsDir() || (!strings.HasSuffix(path, ".yml") && !strings.HasSuffix(path, ".yaml")) {
			return nil
		}
		n++
		readYAML(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 8 {
		t.Fatalf("found %d YAML files, want at least 8", n)
	}
}

// dockerfile returns the instructions of the Dockerfile, continuation lines
// joined and comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "#") || (trim == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trim, "\\") {
			cur.WriteString(strings.TrimSuffix(trim, "\\") + " ")
			continue
		}
		cur.WriteString(trim)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := dockerfile(t)
	var froms, users []string
	var build, entry, cmd, expose, volume string
	for _, in := range ins {
		word, rest, _ := strings.Cut(in, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			froms = append(froms, rest)
		case "USER":
			users = append(users, rest)
		case "RUN":
			if strings.Contains(rest, "go build") {
				build = rest
			}
		case "ENTRYPOINT":
			entry = rest
		case "CMD":
			cmd = rest
		case "EXPOSE":
			expose = rest
		case "VOLUME":
			volume = rest
		}
	}
	if len(froms) < 2 || !strings.HasPrefix(froms[0], "golang:1.26") {
		t.Errorf("want a multi-stage build from golang:1.26, got FROM %q", froms)
	}
	// Every base image is pinned by digest (make docker-pin renews them).
	pinned := regexp.MustCompile(`^\S+:\S+@sha256:[0-9a-f]{64}(\s|$)`)
	for _, f := range froms {
		if !pinned.MatchString(f) {
			t.Errorf("FROM %s: not pinned as tag@sha256:digest", f)
		}
	}
	if last := froms[len(froms)-1]; !strings.HasPrefix(last, "gcr.io/distroless/static") && !strings.HasPrefix(last, "scratch") {
		t.Errorf("final stage %q: want distroless static or scratch", last)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w`, "-X main.version=${VERSION}",
		"-X main.revision=${REVISION}", "-X main.buildTime=${CREATED}", "./cmd/rostrum"} {
		if !strings.Contains(build, want) {
			t.Errorf("go build %q lacks %s", build, want)
		}
	}
	// The image is the production binary alone: the developer tools
	// (benchmarks, simulator) are not built into it.
	for _, in := range ins {
		if strings.Contains(in, "rostrum-dev") {
			t.Errorf("%q: the image must not hold cmd/rostrum-dev", in)
		}
	}
	// The Go build information keeps the commit (rostrum version,
	// rostrum_build_info) unless VCS stamping is turned off.
	if strings.Contains(build, "-buildvcs=false") {
		t.Errorf("go build %q throws the VCS information away", build)
	}
	var labels string
	for _, in := range ins {
		if strings.HasPrefix(strings.ToUpper(in), "LABEL ") {
			labels += in
		}
	}
	for _, l := range []string{"source", "version", "revision", "created", "licenses"} {
		if !strings.Contains(labels, "org.opencontainers.image."+l+"=") {
			t.Errorf("no OCI label org.opencontainers.image.%s", l)
		}
	}
	if len(users) == 0 {
		t.Fatal("no USER: the container would run as root")
	}
	u, _, _ := strings.Cut(users[len(users)-1], ":")
	if u == "" || u == "0" || u == "root" {
		t.Errorf("USER %q is root", users[len(users)-1])
	}
	if entry != `["/rostrum"]` || cmd != `["run"]` {
		t.Errorf(`ENTRYPOINT %s CMD %s, want ["/rostrum"] ["run"]`, entry, cmd)
	}
	if expose != "8080" {
		t.Errorf("EXPOSE %q, want 8080", expose)
	}
	if !strings.Contains(volume, "/var/lib/rostrum/wal") {
		t.Errorf("VOLUME %q: want the WAL directory /var/lib/rostrum/wal", volume)
	}
}

// TestDockerignore: the build context leaves out the git directory and the
// build outputs, and keeps what the build compiles and embeds.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			ignored[strings.TrimPrefix(line, "/")] = true
		}
	}
	for _, p := range []string{".git", "bin", "dist"} {
		if !ignored[p] {
			t.Errorf(".dockerignore does not leave out %s", p)
		}
	}
	for p := range ignored {
		for _, keep := range []string{"go.mod", "go.sum", "cmd", "docs", "web", "LICENSE", "*.go", "**/*.go", "*"} {
			if p == keep {
				t.Errorf(".dockerignore leaves out %s, which the build needs", p)
			}
		}
	}
}

func TestCompose(t *testing.T) {
	c := readYAML1(t, "docker-compose.yml")
	services, _ := get(t, c, "services").(map[string]any)
	for _, s := range []string{"kafka", "kafka-init", "redis", "rostrum", "prometheus", "grafana"} {
		if _, ok := services[s]; !ok {
			t.Errorf("compose has no service %s", s)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every image is pinned to a tag, never latest.
	for name, s := range services {
		m := s.(map[string]any)
		img, ok := m["image"].(string)
		if !ok {
			t.Errorf("service %s has no image", name)
			continue
		}
		_, tag, ok := strings.Cut(img, ":")
		if !ok || tag == "" || tag == "latest" {
			t.Errorf("service %s: image %q is not pinned", name, img)
		}
	}
	if img := str(t, c, "services", "kafka", "image"); !strings.HasPrefix(img, "apache/kafka:") {
		t.Errorf("kafka image %q, want apache/kafka", img)
	}
	if a, b := str(t, c, "services", "kafka", "image"), str(t, c, "services", "kafka-init", "image"); a != b {
		t.Errorf("kafka-init image %q differs from kafka's %q", b, a)
	}
	kenv := get(t, c, "services", "kafka", "environment").(map[string]any)
	if !strings.Contains(kenv["KAFKA_PROCESS_ROLES"].(string), "controller") {
		t.Error("kafka is not a KRaft controller")
	}
	if !strings.Contains(kenv["KAFKA_ADVERTISED_LISTENERS"].(string), "kafka:9092") {
		t.Error("kafka does not advertise kafka:9092 to the compose network")
	}

	// The topics: each created once, 6 partitions, only the output and layout topics compacted.
	script := strings.Join(strList(t, c, "services", "kafka-init", "command"), "\n")
	created := map[string]string{}
	topicRE := regexp.MustCompile(`--topic\s+(\S+)`)
	for _, line := range strings.Split(script, "\n") {
		if !strings.Contains(line, "kafka-topics.sh") || !strings.Contains(line, "--create") {
			continue
		}
		m := topicRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("topic creation without --topic: %s", line)
			continue
		}
		if _, dup := created[m[1]]; dup {
			t.Errorf("topic %s created twice", m[1])
		}
		created[m[1]] = line
	}
	for _, topic := range topics {
		line, ok := created[topic]
		if !ok {
			t.Errorf("kafka-init does not create %s", topic)
			continue
		}
		if !strings.Contains(line, "--partitions 6") {
			t.Errorf("%s: want --partitions 6: %s", topic, line)
		}
		if !strings.Contains(line, "--bootstrap-server kafka:9092") {
			t.Errorf("%s: want --bootstrap-server kafka:9092: %s", topic, line)
		}
		compact := strings.Contains(line, "cleanup.policy=compact")
		if compact != compacted[topic] {
			t.Errorf("%s: compacted=%v, want %v", topic, compact, compacted[topic])
		}
	}
	if len(created) != len(topics) {
		t.Errorf("kafka-init creates %d topics, want %d", len(created), len(topics))
	}

	// rostrum: settings, dependencies, WAL volume, image build.
	renv := get(t, c, "services", "rostrum", "environment").(map[string]any)
	want := map[string]string{
		"ROSTRUM_BROKERS": "kafka:9092",
		"ROSTRUM_REDIS":   "redis:6379",
		"ROSTRUM_ENV":     env,
		"ROSTRUM_HTTP":    ":8080",
	}
	for k, v := range want {
		if renv[k] != v {
			t.Errorf("rostrum %s=%v, want %q", k, renv[k], v)
		}
	}
	flags := knownFlags(t)
	for k := range renv {
		name, ok := strings.CutPrefix(k, "ROSTRUM_")
		if !ok || !flags[strings.ReplaceAll(strings.ToLower(name), "_", "-")] {
			t.Errorf("rostrum environment %s names no flag", k)
		}
	}
	if v := str(t, c, "services", "rostrum", "depends_on", "kafka-init", "condition"); v != "service_completed_successfully" {
		t.Errorf("rostrum depends on kafka-init %q", v)
	}
	if v := str(t, c, "services", "rostrum", "depends_on", "redis", "condition"); v != "service_healthy" {
		t.Errorf("rostrum depends on redis %q", v)
	}
	if _, ok := get(t, c, "services", "redis").(map[string]any)["healthcheck"]; !ok {
		t.Error("redis has no healthcheck, but rostrum waits for service_healthy")
	}
	if _, ok := get(t, c, "services", "kafka").(map[string]any)["healthcheck"]; !ok {
		t.Error("kafka has no healthcheck, but kafka-init waits for service_healthy")
	}
	if !slices.Contains(strList(t, c, "services", "redis", "command"), "--appendonly") {
		t.Error("redis runs without --appendonly")
	}
	walDir, _ := renv["ROSTRUM_WAL_DIR"].(string)
	walMounted := false
	for _, v := range strList(t, c, "services", "rostrum", "volumes") {
		src, dst, _ := strings.Cut(v, ":")
		if dst == walDir || dst == walDir+":rw" {
			walMounted = true
			if _, ok := get(t, c, "volumes").(map[string]any)[src]; !ok {
				t.Errorf("WAL volume %s is not a named volume", src)
			}
		}
	}
	if !walMounted {
		t.Errorf("no volume on the WAL directory %q", walDir)
	}
	ctx := str(t, c, "services", "rostrum", "build", "context")
	df := str(t, c, "services", "rostrum", "build", "dockerfile")
	if _, err := os.Stat(filepath.Join(ctx, "go.mod")); err != nil {
		t.Errorf("build context %s is not the repository root: %v", ctx, err)
	}
	if _, err := os.Stat(filepath.Join(ctx, df)); err != nil {
		t.Errorf("build dockerfile: %v", err)
	}

	// Bind mounts exist; Grafana's provisioning points at the mounted dashboards.
	mounts := map[string]string{} // host path → container path
	for name, s := range services {
		vols, _ := s.(map[string]any)["volumes"].([]any)
		for _, v := range vols {
			src, rest, _ := strings.Cut(v.(string), ":")
			dst, _, _ := strings.Cut(rest, ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("service %s mounts %s: %v", name, src, err)
				}
				mounts[filepath.Clean(src)] = dst
			}
		}
	}
	if mounts["prometheus/prometheus.yml"] != "/etc/prometheus/prometheus.yml" {
		t.Errorf("prometheus.yml mounted at %q", mounts["prometheus/prometheus.yml"])
	}
	for _, sub := range []string{"datasources", "dashboards"} {
		if got := mounts["grafana/provisioning/"+sub]; got != "/etc/grafana/provisioning/"+sub {
			t.Errorf("grafana provisioning of %s mounted at %q", sub, got)
		}
	}
	dashDir := mounts["grafana/dashboards"]
	p := readYAML1(t, "grafana/provisioning/dashboards/rostrum.yml")
	if got := str(t, p, "providers", 0, "options", "path"); got != dashDir {
		t.Errorf("dashboard provider path %q, but grafana/dashboards is mounted at %q", got, dashDir)
	}
	genv := get(t, c, "services", "grafana", "environment").(map[string]any)
	if home, _ := genv["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"].(string); home != "" && home != dashDir+"/rostrum.json" {
		t.Errorf("home dashboard %q is not %s/rostrum.json", home, dashDir)
	}
}

func TestPrometheusAndDatasource(t *testing.T) {
	p := readYAML1(t, "prometheus/prometheus.yml")
	found := false
	for _, sc := range get(t, p, "scrape_configs").([]any) {
		if sc.(map[string]any)["job_name"] != "rostrum" {
			continue
		}
		for _, st := range get(t, sc, "static_configs").([]any) {
			if slices.Contains(strList(t, st, "targets"), "rostrum:8080") {
				found = true
			}
		}
	}
	if !found {
		t.Error("prometheus: no job rostrum scraping rostrum:8080")
	}

	d := readYAML1(t, "grafana/provisioning/datasources/prometheus.yml")
	if str(t, d, "datasources", 0, "type") != "prometheus" || str(t, d, "datasources", 0, "url") != "http://prometheus:9090" {
		t.Errorf("datasource: %v", get(t, d, "datasources", 0))
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name    string `json:"name"`
				Current struct {
					Value any `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	readJSON(t, "grafana/dashboards/rostrum.json", &dash)
	uid := str(t, d, "datasources", 0, "uid")
	ok := false
	for _, v := range dash.Templating.List {
		if v.Name == "datasource" && v.Current.Value == uid {
			ok = true
		}
	}
	if !ok {
		t.Errorf("the dashboard's datasource variable does not default to the provisioned uid %q", uid)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func dashboardPanels(t *testing.T) (schema int, uid string, panels []panel) {
	t.Helper()
	var d struct {
		SchemaVersion int     `json:"schemaVersion"`
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		Panels        []panel `json:"panels"`
	}
	readJSON(t, "grafana/dashboards/rostrum.json", &d)
	var flat []panel
	for _, p := range d.Panels {
		flat = append(flat, p)
		flat = append(flat, p.Panels...) // panels of collapsed rows
	}
	return d.SchemaVersion, d.UID, flat
}

func TestDashboard(t *testing.T) {
	schema, uid, panels := dashboardPanels(t)
	if schema < 36 || uid == "" {
		t.Errorf("schemaVersion %d, uid %q", schema, uid)
	}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	used := map[cell]string{}
	exprs := 0
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
	grid:
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[cell{x, y}]; ok {
					t.Errorf("panel %q overlaps %q at (%d,%d)", p.Title, other, x, y)
					break grid
				}
				used[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || refs[tg.RefID] {
				t.Errorf("panel %q: empty expression or duplicate refId %q", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if err := balanced(tg.Expr); err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
			}
			if strings.Contains(tg.Expr, "_bucket") && !strings.Contains(tg.Expr, "histogram_quantile(") {
				t.Errorf("panel %q: buckets without histogram_quantile: %s", p.Title, tg.Expr)
			}
			if strings.Contains(tg.Expr, "histogram_quantile(") && !regexp.MustCompile(`by \(([a-z_, ]*\b)?le\b`).MatchString(tg.Expr) {
				t.Errorf("panel %q: histogram_quantile must aggregate by le: %s", p.Title, tg.Expr)
			}
			exprs++
		}
	}
	if exprs < 20 {
		t.Errorf("%d queries, want at least 20", exprs)
	}
}

// balanced reports unbalanced (), {} or [] in a PromQL expression.
func balanced(expr string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	inString := false
	for _, r := range expr {
		switch {
		case r == '"':
			inString = !inString
		case inString:
		case r == '(' || r == '{' || r == '[':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return errors.New("unbalanced brackets")
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 || inString {
		return errors.New("unbalanced brackets or quotes")
	}
	return nil
}

var metricRE = regexp.MustCompile(`rostrum_[a-z_]+`)

// dashboardMetrics returns the metric names the dashboard queries, with the
// _bucket, _sum and _count series of histograms folded into their name.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	_, _, panels := dashboardPanels(t)
	set := map[string]bool{}
	for _, p := range panels {
		for _, tg := range p.Targets {
			for _, m := range metricRE.FindAllString(tg.Expr, -1) {
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					m = strings.TrimSuffix(m, suf)
				}
				set[m] = true
			}
		}
	}
	var out []string
	for m := range set {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// TestDashboardEnv: the dashboard has an env variable, and every query of a
// series that carries the env label (every metric of metrics.Names, the
// gateway's records and bytes) selects env=~"$env". The gateway's request
// series have no env: one gateway serves every environment.
func TestDashboardEnv(t *testing.T) {
	var d struct {
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	readJSON(t, "grafana/dashboards/rostrum.json", &d)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Definition
	}
	if def, ok := vars["env"]; !ok || !strings.Contains(def, ", env)") {
		t.Errorf("no env variable over the env label: %q", def)
	}
	if !strings.Contains(vars["instance"], `env=~"$env"`) {
		t.Errorf("the instance variable %q is not narrowed by $env", vars["instance"])
	}
	withEnv := map[string]bool{"rostrum_gateway_records_produced_total": true, "rostrum_gateway_produced_bytes_total": true}
	for _, n := range metrics.Names() {
		withEnv[n] = true
	}
	_, _, panels := dashboardPanels(t)
	sel := regexp.MustCompile(`(rostrum_[a-z_]+)(\{[^}]*\})?`)
	for _, p := range panels {
		for _, tg := range p.Targets {
			for _, m := range sel.FindAllStringSubmatch(tg.Expr, -1) {
				name := m[1]
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					name = strings.TrimSuffix(name, suf)
				}
				if withEnv[name] && !strings.Contains(m[2], `env=~"$env"`) {
					t.Errorf("panel %q: %s without env=~\"$env\"", p.Title, m[0])
				}
			}
		}
	}
}

func TestDashboardMetricsExist(t *testing.T) {
	known := map[string]bool{}
	for _, n := range append(metrics.Names(), gateway.MetricNames()...) {
		known[n] = true
	}
	used := dashboardMetrics(t)
	if len(used) < 15 {
		t.Fatalf("dashboard queries %d rostrum metrics, want at least 15: %v", len(used), used)
	}
	for _, m := range used {
		if !known[m] {
			t.Errorf("dashboard queries %s, which metrics.Names() does not list", m)
		}
	}
}

// rostrumFlags builds the binary once and returns the flags a command of it
// accepts, read from its --help-all output: the manifests are checked against the
// binary itself, not a list kept by hand.
func rostrumFlags(t *testing.T, command string) map[string]bool {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rostrum-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "rostrum")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/rostrum").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	out, _ := exec.Command(binPath, command, "--help-all").CombinedOutput() // every flag, grouped
	flags := map[string]bool{}
	re := regexp.MustCompile(`(?m)^\s+--([a-z0-9][a-z0-9-]*)`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["brokers"] {
		t.Fatalf("rostrum %s -h lists no --brokers:\n%s", command, out)
	}
	return flags
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// k8sDocs reads every manifest of the kustomization, by kind and name.
func k8sDocs(t *testing.T) (map[string]map[string]any, []string) {
	t.Helper()
	byKind := map[string]map[string]any{}
	k := readYAML1(t, "k8s/kustomization.yaml")
	files := strList(t, k, "resources")
	for _, f := range files {
		for _, doc := range readYAML(t, filepath.Join("k8s", f)) {
			kind := str(t, doc, "kind")
			if _, ok := get(t, doc, "metadata").(map[string]any)["namespace"]; ok {
				t.Errorf("%s: %s names a namespace; the manifests are namespace-agnostic", f, kind)
			}
			for _, key := range []string{"apiVersion", "kind", "metadata"} {
				if doc[key] == nil {
					t.Errorf("%s: a document without %s", f, key)
				}
			}
			byKind[kind+"/"+str(t, doc, "metadata", "name")] = doc
		}
	}
	return byKind, files
}

func TestKubernetes(t *testing.T) {
	byKind, files := k8sDocs(t)
	entries, err := os.ReadDir("k8s")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() && e.Name() != "kustomization.yaml" && !slices.Contains(files, e.Name()) {
			t.Errorf("k8s/%s is not in kustomization.yaml", e.Name())
		}
	}
	for _, want := range []string{"ConfigMap/rostrum", "Secret/rostrum-credentials", "StatefulSet/rostrum", "Service/rostrum",
		"PodDisruptionBudget/rostrum", "Job/rostrum-topics", "ServiceMonitor/rostrum", "ServiceMonitor/rostrum-gateway", "PrometheusRule/rostrum", "Secret/rostrum-gateway",
		"ScaledObject/rostrum", "TriggerAuthentication/rostrum-kafka"} {
		if byKind[want] == nil {
			t.Errorf("no %s in the kustomization", want)
		}
	}

	// The config file: every key is a flag of the binary's run.
	cm := byKind["ConfigMap/rostrum"]
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(str(t, cm, "data", "rostrum.yaml")), &cfg); err != nil {
		t.Fatalf("configmap rostrum.yaml: %v", err)
	}
	runFlags := rostrumFlags(t, "run")
	for key := range cfg {
		if !runFlags[key] || key == "config" {
			t.Errorf("configmap rostrum.yaml: key %q is no flag of rostrum run", key)
		}
	}
	for _, key := range []string{"brokers", "redis", "env", "top-n", "http", "wal-dir", "log-format"} {
		if _, ok := cfg[key]; !ok {
			t.Errorf("configmap rostrum.yaml lacks %s", key)
		}
	}

	d := byKind["StatefulSet/rostrum"]
	// KEDA owns the replica count: a replicas in the StatefulSet would reset
	// it at every apply.
	if r, ok := get(t, d, "spec").(map[string]any)["replicas"]; ok {
		t.Errorf("replicas %v, but the ScaledObject owns the count", r)
	}
	podLabels := get(t, d, "spec", "template", "metadata", "labels").(map[string]any)
	selects := func(what string, sel any) {
		t.Helper()
		for k, v := range sel.(map[string]any) {
			if podLabels[k] != v {
				t.Errorf("%s selector %s=%v does not match the pod labels", what, k, v)
			}
		}
	}
	selects("statefulset", get(t, d, "spec", "selector", "matchLabels"))
	c := get(t, d, "spec", "template", "spec", "containers", 0)
	if args := strList(t, c, "args"); !slices.Equal(args, []string{"run", "--config", "/etc/rostrum/rostrum.yaml"}) {
		t.Errorf("args %q", args)
	}
	// Every ROSTRUM_ variable is a flag; the instance id is the pod's name.
	instanceID := false
	for _, e := range get(t, c, "env").([]any) {
		name := str(t, e, "name")
		if flag, ok := strings.CutPrefix(name, "ROSTRUM_"); ok {
			if !runFlags[strings.ReplaceAll(strings.ToLower(flag), "_", "-")] {
				t.Errorf("env %s is no flag of rostrum run", name)
			}
		}
		if name == "ROSTRUM_INSTANCE_ID" && str(t, e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name" {
			instanceID = true
		}
	}
	if !instanceID {
		t.Error("ROSTRUM_INSTANCE_ID is not the pod's name: a rolling restart would rebalance the group")
	}
	if p, _ := get(t, c, "ports", 0, "containerPort").(int); p != 8080 || str(t, c, "ports", 0, "name") != "http" {
		t.Errorf("container port %v", get(t, c, "ports", 0))
	}
	if cfg["http"] != ":8080" {
		t.Errorf("configmap http %v: the probes and Prometheus need :8080", cfg["http"])
	}
	// Serving (startup, liveness) is /healthz; doing its job is /readyz.
	for probe, want := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if p := str(t, c, probe, "httpGet", "path"); p != want {
			t.Errorf("%s %s, want %s", probe, p, want)
		}
	}
	if cpu, mem := str(t, c, "resources", "requests", "cpu"), str(t, c, "resources", "requests", "memory"); cpu != "500m" || mem != "256Mi" {
		t.Errorf("requests cpu %s memory %s", cpu, mem)
	}
	if _, ok := get(t, c, "resources", "limits").(map[string]any)["memory"]; !ok {
		t.Error("no memory limit")
	}
	if get(t, c, "securityContext", "readOnlyRootFilesystem") != true || get(t, c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext %v", get(t, c, "securityContext"))
	}
	if get(t, d, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("pod does not require runAsNonRoot")
	}

	// Volumes: the config at /etc/rostrum, the WAL a claim per pod at
	// wal-dir (never an emptyDir), the Secret where the password files are.
	vols := map[string]map[string]any{}
	for _, v := range get(t, d, "spec", "template", "spec", "volumes").([]any) {
		vols[str(t, v, "name")] = v.(map[string]any)
	}
	claims := map[string]bool{}
	for _, v := range get(t, d, "spec", "volumeClaimTemplates").([]any) {
		claims[str(t, v, "metadata", "name")] = true
	}
	mountOf := map[string]string{}
	for _, m := range get(t, c, "volumeMounts").([]any) {
		mountOf[str(t, m, "mountPath")] = str(t, m, "name")
	}
	cfgVol := vols[mountOf["/etc/rostrum"]]
	if cfgVol == nil || str(t, cfgVol, "configMap", "name") != str(t, cm, "metadata", "name") {
		t.Errorf("/etc/rostrum is not the ConfigMap %s", str(t, cm, "metadata", "name"))
	}
	walDir, _ := cfg["wal-dir"].(string)
	if name := mountOf[walDir]; !claims[name] || vols[name] != nil {
		t.Errorf("wal-dir %q is mounted from %q, want a volumeClaimTemplate (one PVC per pod) %v", walDir, name, claims)
	}
	secret := byKind["Secret/rostrum-credentials"]
	for _, key := range []string{"redis-password-file", "kafka-password-file"} {
		path, _ := cfg[key].(string)
		dir, file := filepath.Split(path)
		v := vols[mountOf[strings.TrimSuffix(dir, "/")]]
		if v == nil || str(t, v, "secret", "secretName") != "rostrum-credentials" {
			t.Errorf("%s %q is not in the mounted Secret rostrum-credentials", key, path)
		} else if _, ok := get(t, secret, "stringData").(map[string]any)[file]; !ok {
			t.Errorf("%s: the Secret has no key %q", key, file)
		}
	}

	s := byKind["Service/rostrum"]
	if str(t, d, "spec", "serviceName") != "rostrum" || get(t, s, "spec", "clusterIP") != "None" {
		t.Error("the StatefulSet's governing Service rostrum is not headless")
	}
	if get(t, s, "spec", "publishNotReadyAddresses") != true {
		t.Error("the Service hides not-ready pods from Prometheus")
	}
	if p, _ := get(t, s, "spec", "ports", 0, "port").(int); p != 8080 || str(t, s, "spec", "ports", 0, "name") != "http" {
		t.Errorf("service port %v", get(t, s, "spec", "ports", 0))
	}
	selects("service", get(t, s, "spec", "selector"))
	selects("pdb", get(t, byKind["PodDisruptionBudget/rostrum"], "spec", "selector", "matchLabels"))
	sm := byKind["ServiceMonitor/rostrum"]
	selects("servicemonitor", get(t, sm, "spec", "selector", "matchLabels"))
	if str(t, sm, "spec", "endpoints", 0, "port") != "http" || str(t, sm, "spec", "endpoints", 0, "path") != "/metrics" {
		t.Errorf("servicemonitor endpoint %v", get(t, sm, "spec", "endpoints", 0))
	}
	// The gateway's ServiceMonitor selects the gateway's Service (whose name
	// is the job the gateway alerts name), on its port.
	gsm, gsvc := byKind["ServiceMonitor/rostrum-gateway"], byKind["Service/rostrum-gateway"]
	if !reflect.DeepEqual(get(t, gsm, "spec", "selector", "matchLabels"), get(t, gsvc, "metadata", "labels")) {
		t.Errorf("the gateway's ServiceMonitor selects %v, its Service is labelled %v",
			get(t, gsm, "spec", "selector", "matchLabels"), get(t, gsvc, "metadata", "labels"))
	}
	if str(t, gsm, "spec", "endpoints", 0, "port") != str(t, gsvc, "spec", "ports", 0, "name") || str(t, gsm, "spec", "endpoints", 0, "path") != "/metrics" {
		t.Errorf("gateway servicemonitor endpoint %v", get(t, gsm, "spec", "endpoints", 0))
	}

	// The topic Job runs a command the binary has, with flags it takes.
	job := get(t, byKind["Job/rostrum-topics"], "spec", "template", "spec", "containers", 0)
	args := strList(t, job, "args")
	checkFlags := rostrumFlags(t, args[0])
	for _, a := range args[1:] {
		if f, ok := strings.CutPrefix(a, "--"); ok && !checkFlags[f] {
			t.Errorf("topic Job: rostrum %s has no %s", args[0], a)
		}
	}
	if !slices.Contains(args, "--create-topics") {
		t.Errorf("topic Job args %q do not create topics", args)
	}

	// KEDA scales the StatefulSet, never beyond the partitions of a topic.
	so := byKind["ScaledObject/rostrum"]
	if str(t, so, "spec", "scaleTargetRef", "kind") != "StatefulSet" || str(t, so, "spec", "scaleTargetRef", "name") != "rostrum" {
		t.Errorf("ScaledObject target %v", get(t, so, "spec", "scaleTargetRef"))
	}
	maxReplicas, _ := get(t, so, "spec", "maxReplicaCount").(int)
	parts, _ := cfg["topic-partitions"].(int)
	if maxReplicas < 1 || maxReplicas > parts {
		t.Errorf("maxReplicaCount %d, want 1..%d (topic-partitions): more would only be standbys", maxReplicas, parts)
	}
	trig := get(t, so, "spec", "triggers", 0, "metadata")
	if str(t, trig, "allowIdleConsumers") != "false" || str(t, trig, "consumerGroup") != "rostrum-"+cfg["env"].(string) {
		t.Errorf("kafka trigger %v", trig)
	}
}

// externalMetrics are the metrics alerts use that come from Kubernetes, not
// from rostrum.
var externalMetrics = map[string]bool{
	"kube_pod_status_ready":                     true, // kube-state-metrics
	"kubelet_volume_stats_available_bytes":      true, // kubelet
	"kubelet_volume_stats_capacity_bytes":       true,
	"kube_deployment_status_replicas_available": true, // kube-state-metrics
	"kube_deployment_spec_replicas":             true,
}

// TestPrometheusRule checks every alert: its expression's metrics exist,
// it has a summary, and its runbook link names a section of
// docs/operations.md.
func TestPrometheusRule(t *testing.T) {
	byKind, _ := k8sDocs(t)
	rule := byKind["PrometheusRule/rostrum"]
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(readme), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimLeft(h, "# ")
			a := strings.Map(func(r rune) rune {
				switch {
				case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
					return r
				case r == ' ':
					return '-'
				}
				return -1
			}, strings.ToLower(h))
			anchors[a] = true
		}
	}
	known := map[string]bool{}
	for _, n := range append(metrics.Names(), gateway.MetricNames()...) {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[n+suffix] = true
		}
	}
	metricRe := regexp.MustCompile(`\b(rostrum_[a-z_]+|kube[a-z_]+)\b`)
	var alerts []string
	for _, g := range get(t, rule, "spec", "groups").([]any) {
		for _, r := range get(t, g, "rules").([]any) {
			name := str(t, r, "alert")
			alerts = append(alerts, name)
			expr := str(t, r, "expr")
			if err := balanced(expr); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			used := metricRe.FindAllString(expr, -1)
			if len(used) == 0 {
				t.Errorf("%s: expression %q uses no metric", name, expr)
			}
			for _, m := range used {
				if !known[m] && !externalMetrics[m] {
					t.Errorf("%s: %s is no metric of metrics.Names()", name, m)
				}
			}
			if str(t, r, "annotations", "summary") == "" {
				t.Errorf("%s: no summary", name)
			}
			url := str(t, r, "annotations", "runbook_url")
			_, anchor, ok := strings.Cut(url, "docs/operations.md#")
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook %s names no section of docs/operations.md", name, url)
			}
		}
	}
	for _, want := range []string{"RostrumConsumerLagHigh", "RostrumPublishLatencyHigh", "RostrumDLQRate", "RostrumBatchRetries",
		"RostrumNotReady", "RostrumWALDiskFilling", "RostrumRedisRebuilt",
		"RostrumGatewayErrorsHigh", "RostrumGatewayLatencyHigh", "RostrumGatewayDown", "RostrumGatewayUnready"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}
