package deployments_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// gatewayFlags are the flags of `rostrum gateway` as its contract lists them
// (docs/DESIGN.md §11, "Settings").
func gatewayFlags(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	b := doc[bytes.Index(doc, []byte("## 11. ")):bytes.Index(doc, []byte("## 12. "))]
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile("`--([a-z0-9-]+)").FindAllStringSubmatch(string(b), -1) {
		flags[m[1]] = true
	}
	for _, f := range []string{"brokers", "http", "route", "route-default", "gateway-token-file", "gateway-insecure", "max-inflight"} {
		if !flags[f] {
			t.Fatalf("docs/DESIGN.md §11 lacks --%s; cannot check flag names", f)
		}
	}
	return flags
}

// envFlag turns ROSTRUM_GATEWAY_TOKEN_FILE into gateway-token-file.
func envFlag(name string) (string, bool) {
	f, ok := strings.CutPrefix(name, "ROSTRUM_")
	return strings.ToLower(strings.ReplaceAll(f, "_", "-")), ok
}

func TestKubernetesGateway(t *testing.T) {
	byKind := map[string]map[string]any{}
	for _, doc := range readYAML(t, "k8s/gateway.yaml") {
		if _, ok := get(t, doc, "metadata").(map[string]any)["namespace"]; ok {
			t.Errorf("gateway.yaml: %s names a namespace", str(t, doc, "kind"))
		}
		byKind[str(t, doc, "kind")] = doc
	}
	if !slices.Contains(strList(t, readYAML1(t, "k8s/kustomization.yaml"), "resources"), "gateway.yaml") {
		t.Error("kustomization does not list gateway.yaml")
	}
	d, s, h := byKind["Deployment"], byKind["Service"], byKind["HorizontalPodAutoscaler"]
	if d == nil || s == nil || h == nil {
		t.Fatalf("gateway.yaml holds %v, want a Deployment, a Service and a HorizontalPodAutoscaler", byKind)
	}
	podLabels := get(t, d, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range get(t, d, "spec", "selector", "matchLabels").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("deployment selector %s=%v does not match the pod labels", k, v)
		}
	}
	if podLabels["app.kubernetes.io/component"] != "gateway" {
		t.Errorf("gateway pods labelled %v: the processors' Service would select them", podLabels)
	}
	c := get(t, d, "spec", "template", "spec", "containers", 0)
	if args := strList(t, c, "args"); !slices.Equal(args, []string{"gateway"}) {
		t.Errorf("args %q", args)
	}
	// The flags of docs/DESIGN.md §11, and the Kafka security flags of
	// rostrum run that it names as a group, from the binary itself.
	flags := gatewayFlags(t)
	for f := range rostrumFlags(t, "gateway") {
		if strings.HasPrefix(f, "kafka-") {
			flags[f] = true
		}
	}
	env := map[string]string{}
	for _, e := range get(t, c, "env").([]any) {
		name := str(t, e, "name")
		if f, ok := envFlag(name); ok {
			if !flags[f] {
				t.Errorf("env %s sets --%s, which rostrum gateway does not have", name, f)
			}
			env[f], _ = get(t, e, "value").(string)
		}
	}
	if env["http"] != ":8081" {
		t.Errorf("ROSTRUM_HTTP %q, want :8081 (the container port)", env["http"])
	}
	if env["gateway-token-file"] == "" || env["gateway-insecure"] != "" {
		t.Errorf("the gateway must run with a token file and without --gateway-insecure: %v", env)
	}
	if p, _ := get(t, c, "ports", 0, "containerPort").(int); p != 8081 || str(t, c, "ports", 0, "name") != "http" {
		t.Errorf("container port %v", get(t, c, "ports", 0))
	}
	if p := str(t, c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe %s", p)
	}
	if p := str(t, c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe %s", p)
	}
	if get(t, c, "securityContext", "readOnlyRootFilesystem") != true {
		t.Error("root file system not read-only")
	}
	if _, ok := get(t, c, "resources", "requests").(map[string]any)["cpu"]; !ok {
		t.Error("no CPU request: the HPA scales on CPU utilisation of the request")
	}
	mounted := false
	for _, m := range get(t, c, "volumeMounts").([]any) {
		if strings.HasPrefix(env["gateway-token-file"], str(t, m, "mountPath")+"/") {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the token file %s is on no mounted volume", env["gateway-token-file"])
	}
	// The Secret is in the base, with a key for each file the gateway reads.
	byID, _ := k8sDocs(t)
	secret := byID["Secret/rostrum-gateway"]
	if secret == nil {
		t.Fatal("no Secret rostrum-gateway in the kustomization")
	}
	for _, f := range []string{"gateway-token-file", "gateway-hmac-secret-file"} {
		if env[f] == "" {
			continue
		}
		if _, ok := get(t, secret, "stringData").(map[string]any)[filepath.Base(env[f])]; !ok {
			t.Errorf("--%s %s: the Secret rostrum-gateway has no key %s", f, env[f], filepath.Base(env[f]))
		}
	}

	for k, v := range get(t, s, "spec", "selector").(map[string]any) {
		if podLabels[k] != v {
			t.Errorf("service selector %s=%v does not match the pod labels", k, v)
		}
	}
	if str(t, s, "spec", "ports", 0, "targetPort") != "http" {
		t.Errorf("service targetPort %v", get(t, s, "spec", "ports", 0))
	}

	if str(t, h, "spec", "scaleTargetRef", "kind") != "Deployment" || str(t, h, "spec", "scaleTargetRef", "name") != str(t, d, "metadata", "name") {
		t.Errorf("HPA targets %v, not the gateway Deployment", get(t, h, "spec", "scaleTargetRef"))
	}
	lo, _ := get(t, h, "spec", "minReplicas").(int)
	hi, _ := get(t, h, "spec", "maxReplicas").(int)
	if lo < 2 || hi < lo {
		t.Errorf("HPA replicas %d..%d", lo, hi)
	}
}

func TestComposeGateway(t *testing.T) {
	compose := readYAML1(t, "docker-compose.yml")
	g := get(t, compose, "services", "gateway")
	if cmd := strList(t, g, "command"); !slices.Equal(cmd, []string{"gateway"}) {
		t.Errorf("gateway command %q", cmd)
	}
	flags := gatewayFlags(t)
	for name, v := range get(t, g, "environment").(map[string]any) {
		f, ok := envFlag(name)
		if !ok || !flags[f] {
			t.Errorf("gateway environment %s=%v is no flag of rostrum gateway", name, v)
		}
	}
	if got := strList(t, g, "ports"); !slices.Equal(got, []string{"8081:8081"}) {
		t.Errorf("gateway ports %q", got)
	}
	b, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"gateway:8081"`) {
		t.Error("prometheus does not scrape gateway:8081")
	}
}
