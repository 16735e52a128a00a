package kubecheck

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Release names a Helm release as `helm template NAME -n NAMESPACE` does.
type Release struct {
	Name, Namespace string
}

// KubeVersion is the Kubernetes version the chart is linted and rendered
// for (`helm template --kube-version`): Helm built from source otherwise
// assumes v1.20.
var KubeVersion = chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}

// values reads and merges values files as `helm -f a.yaml -f b.yaml` does:
// later files win, maps merge key by key.
func values(files []string) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, err
		}
		out = mergeMaps(out, v)
	}
	return out, nil
}

func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// HelmLint lints the chart in dir as `helm lint --strict -f files…` does:
// the Chart.yaml, the values (against values.schema.json) and the templates
// rendered with them. Every message of warning severity or above is an
// error.
func HelmLint(dir string, rel Release, files ...string) error {
	vals, err := values(files)
	if err != nil {
		return err
	}
	kv := KubeVersion
	l := lint.AllWithKubeVersion(dir, vals, rel.Namespace, &kv)
	var errs []error
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			errs = append(errs, m)
		}
	}
	return errors.Join(errs...)
}

// HelmTemplate renders the chart in dir as `helm template NAME dir -n
// NAMESPACE -f files…` does: the values are checked against the chart's
// values.schema.json and its kubeVersion against KubeVersion, NOTES.txt and partials are left out, and each document is
// headed by a "# Source:" comment.
func HelmTemplate(dir string, rel Release, files ...string) ([]byte, error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	vals, err := values(files)
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = KubeVersion
	if kv := chrt.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion %s, which %s does not meet", kv, caps.KubeVersion.String())
	}
	opts := chartutil.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(chrt, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, name := range names {
		base := path.Base(name)
		if base == "NOTES.txt" || strings.HasPrefix(base, "_") || strings.TrimSpace(out[name]) == "" {
			continue
		}
		for _, doc := range strings.Split(out[name], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, strings.TrimPrefix(strings.TrimPrefix(doc, "\n"), "---\n"))
		}
	}
	return b.Bytes(), nil
}

// stripComments drops the comment lines of a YAML document.
func stripComments(doc string) string {
	var keep []string
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// Kustomize builds the kustomization in dir as `kustomize build dir` (and
// `kubectl apply -k dir`) does.
func Kustomize(dir string) ([]byte, error) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}
