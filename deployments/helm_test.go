package deployments_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The chart and the overlays are rendered, and every object validated, by
// tools/kubecheck (a module of its own, so that rostrum's go.mod carries no
// Helm, kustomize or Kubernetes API dependency); its own tests break each
// check. Here the renderings are cross-checked against rostrum itself, as
// deployments_test.go checks the kustomize base: config keys and flags the
// binary has, the same alerts as the base, and the base's choices.

const chart = "helm/rostrum"

var (
	kubecheckOnce sync.Once
	kubecheckBin  string
	kubecheckErr  error
)

// render runs tools/kubecheck with args (-helm or -kustomize and their
// options), which fails on any object that does not validate, and returns
// the rendered objects by "Kind/name".
func render(t *testing.T, args ...string) map[string]map[string]any {
	t.Helper()
	kubecheckOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubecheck")
		if err != nil {
			kubecheckErr = err
			return
		}
		kubecheckBin = filepath.Join(dir, "kubecheck")
		cmd := exec.Command("go", "build", "-o", kubecheckBin, "./cmd/kubecheck")
		cmd.Dir = "../tools/kubecheck"
		if out, err := cmd.CombinedOutput(); err != nil {
			kubecheckErr = errors.New("go build tools/kubecheck: " + err.Error() + "\n" + string(out))
		}
	})
	if kubecheckErr != nil {
		t.Fatal(kubecheckErr)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubecheckBin, append(args, "-o", "-")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubecheck %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	objs := map[string]map[string]any{}
	dec := yaml.NewDecoder(&stdout)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if doc != nil {
			objs[str(t, doc, "kind")+"/"+str(t, doc, "metadata", "name")] = doc
		}
	}
	return objs
}

func helmRender(t *testing.T, values ...string) map[string]map[string]any {
	t.Helper()
	args := []string{"-helm", chart}
	for _, v := range values {
		args = append(args, "-f", chart+"/"+v)
	}
	return render(t, append(args, "-external", "Secret/rostrum-credentials", "-external", "Secret/callback-credentials")...)
}

// containers returns every container of every pod template, by "Kind/name
// container".
func containers(t *testing.T, objs map[string]map[string]any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for id, o := range objs {
		var spec any
		switch str(t, o, "kind") {
		case "StatefulSet", "Deployment", "Job":
			spec = get(t, o, "spec", "template", "spec")
		default:
			continue
		}
		for _, c := range get(t, spec, "containers").([]any) {
			out[id+" "+str(t, c, "name")] = c
		}
	}
	return out
}

// checkAgainstBinary checks what rostrum reads in a rendering: the config
// file's keys are flags of run, every ROSTRUM_ variable is a flag of the
// command its container runs, the flags in args exist, and the processors'
// instance id is the pod's name.
func checkAgainstBinary(t *testing.T, objs map[string]map[string]any) {
	t.Helper()
	flagsOf := map[string]map[string]bool{}
	flags := func(cmd string) map[string]bool {
		if flagsOf[cmd] == nil {
			flagsOf[cmd] = rostrumFlags(t, cmd)
		}
		return flagsOf[cmd]
	}
	processors := 0
	for id, c := range containers(t, objs) {
		args := strList(t, c, "args")
		cmd := args[0]
		for _, a := range args[1:] {
			if f, ok := strings.CutPrefix(a, "--"); ok && !flags(cmd)[f] {
				t.Errorf("%s: rostrum %s has no %s", id, cmd, a)
			}
		}
		instanceID := false
		envs, _ := c.(map[string]any)["env"].([]any)
		for _, e := range envs {
			name := str(t, e, "name")
			if f, ok := envFlag(name); ok && !flags(cmd)[f] {
				t.Errorf("%s: %s is no flag of rostrum %s", id, name, cmd)
			}
			if name == "ROSTRUM_INSTANCE_ID" && str(t, e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name" {
				instanceID = true
			}
		}
		if cmd == "run" {
			processors++
			if !instanceID {
				t.Errorf("%s: ROSTRUM_INSTANCE_ID is not the pod's name: a rolling restart would rebalance the group", id)
			}
		}
	}
	if processors != 1 {
		t.Errorf("%d containers run rostrum run, want 1", processors)
	}
	for id, o := range objs {
		if !strings.HasPrefix(id, "ConfigMap/") {
			continue
		}
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(str(t, o, "data", "rostrum.yaml")), &cfg); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for key := range cfg {
			if !flags("run")[key] || key == "config" {
				t.Errorf("%s: rostrum.yaml key %q is no flag of rostrum run", id, key)
			}
		}
	}
}

func TestHelmChartAgainstBinary(t *testing.T) {
	for _, values := range chartValues(t) {
		t.Run(strings.Join(append([]string{"defaults"}, values...), "+"), func(t *testing.T) {
			checkAgainstBinary(t, helmRender(t, values...))
		})
	}
}

func TestOverlaysAgainstBinary(t *testing.T) {
	dirs, _ := filepath.Glob("overlays/*/kustomization.yaml")
	if len(dirs) < 2 {
		t.Fatalf("overlays %v: want two environments at least", dirs)
	}
	for _, k := range dirs {
		dir := filepath.Dir(k)
		t.Run(dir, func(t *testing.T) {
			objs := render(t, "-kustomize", dir)
			checkAgainstBinary(t, objs)
			ns := ""
			for id, o := range objs {
				n, _ := get(t, o, "metadata").(map[string]any)["namespace"].(string)
				if n == "" || ns != "" && n != ns {
					t.Errorf("%s: namespace %q: an overlay puts every object in one namespace", id, n)
				}
				ns = n
			}
			// KEDA owns the replicas where it runs; elsewhere the overlay sets them.
			_, keda := objs["ScaledObject/rostrum"]
			_, replicas := get(t, objs["StatefulSet/rostrum"], "spec").(map[string]any)["replicas"]
			if keda == replicas {
				t.Errorf("ScaledObject %v, StatefulSet replicas %v: want exactly one of them", keda, replicas)
			}
		})
	}
}

// chartValues are the value sets the chart is rendered with: the defaults
// and each file of its ci/.
func chartValues(t *testing.T) [][]string {
	t.Helper()
	files, _ := filepath.Glob(chart + "/ci/*.yaml")
	if len(files) == 0 {
		t.Fatal("no values file in the chart's ci/")
	}
	out := [][]string{nil}
	for _, f := range files {
		out = append(out, []string{"ci/" + filepath.Base(f)})
	}
	return out
}

// TestHelmChartMirrorsBase: with the release named rostrum, the chart makes
// what the kustomize base makes, with the same probes, resources, security
// settings and WAL claim; the same alerts; and no replicas where KEDA or the
// HPA owns them.
func TestHelmChartMirrorsBase(t *testing.T) {
	base, _ := k8sDocs(t)
	def := helmRender(t)
	all := helmRender(t, "ci/all-values.yaml")

	same := func(what string, chartV, baseV any) {
		t.Helper()
		if !reflect.DeepEqual(chartV, baseV) {
			a, _ := json.Marshal(chartV)
			b, _ := json.Marshal(baseV)
			t.Errorf("%s differs from the base:\nchart %s\nbase  %s", what, a, b)
		}
	}
	for _, pair := range []struct{ id, container string }{{"StatefulSet/rostrum", "rostrum"}, {"Deployment/rostrum-gateway", "gateway"}} {
		c := containers(t, all)[pair.id+" "+pair.container]
		b := containers(t, base)[pair.id+" "+pair.container]
		if c == nil || b == nil {
			t.Fatalf("no container %s in the chart (%v) or the base (%v)", pair.id, c != nil, b != nil)
		}
		for _, k := range []string{"args", "ports", "startupProbe", "livenessProbe", "readinessProbe", "resources", "securityContext"} {
			same(pair.id+" "+k, c.(map[string]any)[k], b.(map[string]any)[k])
		}
		for _, k := range []string{"terminationGracePeriodSeconds", "automountServiceAccountToken", "topologySpreadConstraints"} {
			cv := get(t, all[pair.id], "spec", "template", "spec").(map[string]any)[k]
			bv := get(t, base[pair.id], "spec", "template", "spec").(map[string]any)[k]
			if k == "topologySpreadConstraints" {
				// The chart's selectors add the release's instance label.
				cv, bv = len(cv.([]any)), len(bv.([]any))
			}
			same(pair.id+" "+k, cv, bv)
		}
	}
	same("the WAL claim", get(t, def["StatefulSet/rostrum"], "spec", "volumeClaimTemplates", 0, "spec", "resources"),
		get(t, base["StatefulSet/rostrum"], "spec", "volumeClaimTemplates", 0, "spec", "resources"))
	same("the Job's args", containers(t, def)["Job/rostrum-topics-1 topics"].(map[string]any)["args"],
		containers(t, base)["Job/rostrum-topics topics"].(map[string]any)["args"])
	same("the alerts", get(t, all["PrometheusRule/rostrum"], "spec"), get(t, base["PrometheusRule/rostrum"], "spec"))

	// Replicas: the chart's own without KEDA, none with it; the same for the
	// gateway and its HPA.
	if r := get(t, def["StatefulSet/rostrum"], "spec", "replicas"); r != 3 {
		t.Errorf("default replicas %v, want 3", r)
	}
	if _, ok := get(t, all["StatefulSet/rostrum"], "spec").(map[string]any)["replicas"]; ok {
		t.Error("the StatefulSet sets replicas although keda.enabled")
	}
	if _, ok := get(t, all["Deployment/rostrum-gateway"], "spec").(map[string]any)["replicas"]; ok {
		t.Error("the gateway sets replicas although its HPA owns them")
	}
	so := all["ScaledObject/rostrum"]
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(str(t, all["ConfigMap/rostrum"], "data", "rostrum.yaml")), &cfg); err != nil {
		t.Fatal(err)
	}
	if g := str(t, so, "spec", "triggers", 0, "metadata", "consumerGroup"); g != "rostrum-"+cfg["env"].(string) {
		t.Errorf("KEDA watches the group %s, rostrum joins rostrum-%s", g, cfg["env"])
	}
	if m, _ := get(t, so, "spec", "maxReplicaCount").(int); m > cfg["topic-partitions"].(int) {
		t.Errorf("maxReplicaCount %d beyond topic-partitions %v: the rest would be standbys", m, cfg["topic-partitions"])
	}

	// The image's tag defaults to the chart's appVersion.
	meta := readYAML1(t, chart+"/Chart.yaml")
	img := str(t, containers(t, def)["StatefulSet/rostrum rostrum"], "image")
	if img != "rostrum:"+str(t, meta, "appVersion") {
		t.Errorf("default image %s, want rostrum:%s (the appVersion)", img, str(t, meta, "appVersion"))
	}
}

// TestHelmChartAlertsFile: the chart's alerts are deployments/k8s's, word
// for word; TestHelmChartMirrorsBase checks them rendered.
func TestHelmChartAlertsFile(t *testing.T) {
	chartAlerts := readYAML1(t, chart+"/files/alerts.yaml")
	base := readYAML1(t, "k8s/prometheusrule.yaml")
	if !reflect.DeepEqual(chartAlerts, get(t, base, "spec")) {
		t.Error("helm/rostrum/files/alerts.yaml differs from the spec of k8s/prometheusrule.yaml: change both")
	}
}

// TestHelmValuesDocumented: every key of values.yaml is in the README's
// table, and every key of the table is a value.
func TestHelmValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(chart + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	re := regexp.MustCompile("^\\| `([A-Za-z0-9.]+)` \\|")
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			documented[m[1]] = true
		}
	}
	var keys []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		m, ok := v.(map[string]any)
		// A map documented as a whole (resources, config) or empty is a leaf.
		if !ok || len(m) == 0 || documented[prefix] {
			keys = append(keys, prefix)
			return
		}
		for k, sub := range m {
			walk(strings.TrimPrefix(prefix+"."+k, "."), sub)
		}
	}
	walk("", readYAML1(t, chart+"/values.yaml"))
	for _, k := range keys {
		if !documented[k] {
			t.Errorf("value %s is not in the table of %s/README.md", k, chart)
		}
		delete(documented, k)
	}
	for k := range documented {
		t.Errorf("%s/README.md documents %s, which values.yaml lacks", chart, k)
	}
	slices.Sort(keys)
	if len(keys) < 50 {
		t.Errorf("%d values, want at least 50: %v", len(keys), keys)
	}
}
