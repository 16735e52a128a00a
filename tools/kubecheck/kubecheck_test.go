package kubecheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const (
	chartDir = "../../deployments/helm/rostrum"
	baseDir  = "../../deployments/k8s"
)

var rel = Release{Name: "rostrum", Namespace: "rostrum"}

// rendering is one way the repository's manifests are meant to be rendered.
type rendering struct {
	name     string
	release  string   // release name of a chart rendering; default rostrum
	helm     []string // values files, when a chart rendering
	kust     string   // kustomization directory
	external []string
	want     []string // Kind/name that must be in it
	absent   []string // Kind/name that must not
}

func renderings(t *testing.T) []rendering {
	t.Helper()
	rs := []rendering{
		{
			name: "helm defaults", helm: []string{},
			want:   []string{"ConfigMap/rostrum", "StatefulSet/rostrum", "Service/rostrum", "PodDisruptionBudget/rostrum", "Job/rostrum-topics-1"},
			absent: []string{"Secret/rostrum-credentials", "Deployment/rostrum-gateway", "ScaledObject/rostrum", "ServiceMonitor/rostrum", "PrometheusRule/rostrum"},
		},
		{
			name: "helm all", helm: []string{chartDir + "/ci/all-values.yaml"},
			external: []string{"Secret/rostrum-credentials"},
			want: []string{"StatefulSet/rostrum", "Deployment/rostrum-gateway", "Service/rostrum-gateway", "HorizontalPodAutoscaler/rostrum-gateway",
				"Secret/rostrum-gateway", "ServiceAccount/rostrum", "ServiceMonitor/rostrum", "ServiceMonitor/rostrum-gateway", "PrometheusRule/rostrum",
				"ScaledObject/rostrum", "TriggerAuthentication/rostrum-kafka"},
			absent: []string{"Secret/rostrum-credentials"},
		},
		{
			name: "helm gateway with an existing secret", helm: []string{chartDir + "/ci/gateway-existing-secret-values.yaml"},
			external: []string{"Secret/callback-credentials"},
			want:     []string{"StatefulSet/leaderboard", "Secret/leaderboard-credentials", "Deployment/leaderboard-gateway"},
			absent:   []string{"HorizontalPodAutoscaler/leaderboard-gateway", "Secret/leaderboard-gateway", "PodDisruptionBudget/leaderboard"},
		},
		{
			// Another release name: every name, reference and alert follows it.
			name: "helm all, another release", release: "leaderboard", helm: []string{chartDir + "/ci/all-values.yaml"},
			external: []string{"Secret/rostrum-credentials"},
			want: []string{"StatefulSet/leaderboard-rostrum", "Service/leaderboard-rostrum", "ScaledObject/leaderboard-rostrum",
				"Job/leaderboard-rostrum-topics-1", "PrometheusRule/leaderboard-rostrum"},
			absent: []string{"StatefulSet/rostrum"},
		},
		{
			name: "kustomize base", kust: baseDir,
			want: []string{"StatefulSet/rostrum", "Secret/rostrum-credentials", "Secret/rostrum-gateway", "ScaledObject/rostrum", "Deployment/rostrum-gateway"},
		},
	}
	overlays, err := filepath.Glob("../../deployments/overlays/*/kustomization.yaml")
	if err != nil || len(overlays) < 2 {
		t.Fatalf("overlays %v, %v: want at least two", overlays, err)
	}
	for _, k := range overlays {
		dir := filepath.Dir(k)
		rs = append(rs, rendering{name: "kustomize " + filepath.Base(dir), kust: dir, want: []string{"StatefulSet/rostrum", "ConfigMap/rostrum"}})
	}
	return rs
}

func render(t *testing.T, r rendering) []byte {
	t.Helper()
	var out []byte
	var err error
	if r.kust != "" {
		out, err = Kustomize(r.kust)
	} else {
		rel := rel
		if r.release != "" {
			rel.Name = r.release
		}
		if err := HelmLint(chartDir, rel, r.helm...); err != nil {
			t.Fatalf("helm lint: %v", err)
		}
		out, err = HelmTemplate(chartDir, rel, r.helm...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRepositoryManifests lints and renders the chart with each values file
// of deployments/helm/rostrum/ci (and the defaults), builds the kustomize
// base and each overlay, and validates every object.
func TestRepositoryManifests(t *testing.T) {
	for _, r := range renderings(t) {
		t.Run(r.name, func(t *testing.T) {
			out := render(t, r)
			objs, err := Split(r.name, out)
			if err != nil {
				t.Fatal(err)
			}
			// The alerts name this release's pods and claims.
			if r.release != "" && (!strings.Contains(string(out), `pod=~"`+r.release+`-rostrum-[0-9]+"`) ||
				!strings.Contains(string(out), `persistentvolumeclaim=~"wal-`+r.release+`-rostrum-[0-9]+"`)) {
				t.Errorf("the alerts do not name the pods and claims of release %s", r.release)
			}
			if err := Check(objs, Options{External: r.external}); err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for _, o := range objs {
				ids[o.ID()] = true
			}
			for _, w := range r.want {
				if !ids[w] {
					t.Errorf("no %s", w)
				}
			}
			for _, a := range r.absent {
				if ids[a] {
					t.Errorf("%s, which these values leave out", a)
				}
			}
			t.Logf("%d objects valid", len(objs))
		})
	}
}

// TestEveryValuesFileRendered: a values file added to the chart's ci/ is
// rendered by TestRepositoryManifests.
func TestEveryValuesFileRendered(t *testing.T) {
	files, _ := filepath.Glob(chartDir + "/ci/*.yaml")
	var used []string
	for _, r := range renderings(t) {
		used = append(used, r.helm...)
	}
	for _, f := range files {
		if !slices.Contains(used, f) {
			t.Errorf("%s is rendered by no test", f)
		}
	}
}

var (
	allOnce sync.Once
	allYAML []byte
	allErr  error
)

// allValues is the chart rendered with every part on: the good manifest
// the failure cases below break one thing of.
func allValues(t *testing.T) string {
	t.Helper()
	allOnce.Do(func() { allYAML, allErr = HelmTemplate(chartDir, rel, chartDir+"/ci/all-values.yaml") })
	if allErr != nil {
		t.Fatal(allErr)
	}
	return string(allYAML)
}

// TestChecksFail breaks the good rendering in one place per case and
// expects the check that guards that place to fail, naming the object.
func TestChecksFail(t *testing.T) {
	cases := []struct {
		name, old, new, wantObj, wantErr string
	}{
		{"unknown field of a built-in kind",
			"          imagePullPolicy: IfNotPresent\n          args: [\"run\"", "          imagePullPolicy: IfNotPresent\n          imagePullPolicyy: Always\n          args: [\"run\"",
			"StatefulSet/rostrum", `unknown field "spec.template.spec.containers[0].imagePullPolicyy"`},
		{"field in the wrong case",
			"  serviceName: rostrum\n", "  ServiceName: rostrum\n",
			"StatefulSet/rostrum", `unknown field "spec.ServiceName"`},
		{"duplicate field",
			"  podManagementPolicy: Parallel\n", "  podManagementPolicy: Parallel\n  podManagementPolicy: OrderedReady\n",
			"statefulset.yaml", `key "podManagementPolicy" already set`},
		{"wrong type",
			"  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: processor\n  updateStrategy:",
			"  revisionHistoryLimit: five\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: processor\n  updateStrategy:",
			"StatefulSet/rostrum", "revisionHistoryLimit"},
		{"removed apiVersion",
			"apiVersion: policy/v1\nkind: PodDisruptionBudget", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget",
			"PodDisruptionBudget/rostrum", "neither a built-in kind"},
		{"invalid label value",
			"    app.kubernetes.io/component: topics\nspec:", "    app.kubernetes.io/component: topics!\nspec:",
			"Job/rostrum-topics-1", "label app.kubernetes.io/component"},
		{"workload selector that misses its pods",
			"  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: processor\n  updateStrategy:",
			"  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: procesor\n  updateStrategy:",
			"StatefulSet/rostrum", "does not match the pod template's labels"},
		{"Service selector that selects nothing",
			"  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/name: rostrum\n", "  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/name: rostrom\n",
			"Service/rostrum", "selects no pods"},
		{"Service port named as no container port",
			"  clusterIP: None\n  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/name: rostrum\n    app.kubernetes.io/instance: rostrum\n    app.kubernetes.io/component: processor\n  ports:\n    - name: http\n      port: 8080\n      targetPort: http",
			"  clusterIP: None\n  publishNotReadyAddresses: true\n  selector:\n    app.kubernetes.io/name: rostrum\n    app.kubernetes.io/instance: rostrum\n    app.kubernetes.io/component: processor\n  ports:\n    - name: http\n      port: 8080\n      targetPort: metrics",
			"Service/rostrum", "targetPort metrics is no container port"},
		{"probe on a port the container lacks",
			"          readinessProbe:\n            httpGet:\n              path: /readyz\n              port: http\n            periodSeconds: 5\n            timeoutSeconds: 2",
			"          readinessProbe:\n            httpGet:\n              path: /readyz\n              port: 8081\n            periodSeconds: 5\n            timeoutSeconds: 2",
			"StatefulSet/rostrum", "readinessProbe: port 8081"},
		{"WAL on a pod volume instead of a claim template",
			"  volumeClaimTemplates:\n    - metadata:\n        name: wal\n", "  volumeClaimTemplates:\n    - metadata:\n        name: wal-unused\n",
			"StatefulSet/rostrum", "without a volumeClaimTemplate"},
		{"mount of a missing volume",
			"            - name: tmp\n              mountPath: /tmp\n", "            - name: scratch\n              mountPath: /tmp\n",
			"StatefulSet/rostrum", "mounts scratch, which is no volume"},
		{"replicas where KEDA owns them",
			"  serviceName: rostrum\n", "  replicas: 3\n  serviceName: rostrum\n",
			"ScaledObject/rostrum", "sets spec.replicas, which KEDA owns"},
		{"replicas where the HPA owns them",
			"  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: gateway",
			"  replicas: 2\n  revisionHistoryLimit: 5\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: rostrum\n      app.kubernetes.io/instance: rostrum\n      app.kubernetes.io/component: gateway",
			"HorizontalPodAutoscaler/rostrum-gateway", "which a HorizontalPodAutoscaler owns"},
		{"reference to a Secret key that does not exist",
			"              value: /etc/rostrum-gateway/tokens", "              value: /etc/rostrum-gateway/tokens\n            - name: X_TOKEN\n              valueFrom:\n                secretKeyRef:\n                  name: rostrum-gateway\n                  key: token",
			"Deployment/rostrum-gateway", `has no key "token"`},
		{"unknown field of a custom resource",
			"      path: /metrics\n      interval: 15s", "      path: /metrics\n      intervall: 15s",
			"ServiceMonitor/rostrum", "additional properties 'intervall' not allowed"},
		{"wrong type in a custom resource",
			"  minReplicaCount: 3\n", "  minReplicaCount: \"3\"\n",
			"ScaledObject/rostrum", "minReplicaCount"},
		{"missing required field of a custom resource",
			"        - alert: RostrumConsumerLagHigh\n          expr:", "        - alert: RostrumConsumerLagHigh\n          exp:",
			"PrometheusRule/rostrum", "expr"},
		{"unknown metadata field of a custom resource",
			"kind: ScaledObject\nmetadata:\n", "kind: ScaledObject\nmetadata:\n  label: {}\n",
			"ScaledObject/rostrum", `unknown field "label"`},
		{"ServiceMonitor on a port the Service lacks",
			"    - port: http\n      path: /metrics\n      interval: 15s", "    - port: metrics\n      path: /metrics\n      interval: 15s",
			"ServiceMonitor/rostrum", `port "metrics" is no port`},
		{"KEDA scaling a workload that does not exist",
			"    kind: StatefulSet\n    name: rostrum\n", "    kind: StatefulSet\n    name: rostrum-processor\n",
			"ScaledObject/rostrum", "no StatefulSet/rostrum-processor"},
	}
	good := allValues(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.old) {
				t.Fatalf("the rendering no longer contains %q: update the case", c.old)
			}
			broken := strings.Replace(good, c.old, c.new, 1)
			objs, err := Split("broken", []byte(broken))
			if err == nil {
				err = Check(objs, Options{External: []string{"Secret/rostrum-credentials"}})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.Contains(line, c.wantObj) && strings.Contains(line, c.wantErr) {
					return
				}
			}
			t.Fatalf("want an error on %s with %q, got:\n%v", c.wantObj, c.wantErr, err)
		})
	}
}

// TestChartValuesRefused: values.schema.json refuses unknown keys and wrong
// types at lint and at render time, and the templates refuse what the schema
// cannot express.
func TestChartValuesRefused(t *testing.T) {
	cases := []struct {
		name, values, want string
		lint               bool // helm lint fails too (it only logs required and fail)
	}{
		{"unknown key", "processor:\n  replica: 3\n", "replica", true},
		{"wrong type", "processor:\n  replicas: \"3\"\n", "replicas", true},
		{"bad enum", "kafka:\n  sasl: scram\n", "sasl", true},
		{"gateway without a credential", "gateway:\n  enabled: true\n", "gateway.enabled needs", false},
		{"SASL without a password", "kafka:\n  sasl: plain\n", "credentials.kafkaPassword", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(f, []byte(c.values), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := HelmTemplate(chartDir, rel, f); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("helm template: %v, want an error naming %s", err, c.want)
			}
			if err := HelmLint(chartDir, rel, f); c.lint && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("helm lint: %v, want an error naming %s", err, c.want)
			}
		})
	}
}
