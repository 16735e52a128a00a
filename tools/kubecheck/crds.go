package kubecheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// crdModule is a Go module that ships CustomResourceDefinitions as YAML
// files, pinned by version and by the go.sum hash of its zip: the files are
// read from the module cache, where `go mod download` puts them from the
// module proxy. Bump Version and Sum together (`go mod download -json
// Path@Version` prints the Sum).
type crdModule struct {
	Path, Version, Sum string
	Files              []string
}

// CRDModules are the operators whose custom resources rostrum's manifests
// create.
var CRDModules = []crdModule{
	{
		Path:    "github.com/prometheus-operator/prometheus-operator",
		Version: "v0.85.0",
		Sum:     "h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s=",
		Files: []string{
			"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
			"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
			"example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
		},
	},
	{
		Path:    "github.com/kedacore/keda/v2",
		Version: "v2.21.0",
		Sum:     "h1:R6z2HZvstK4RLUMxroNACzBj74xGxt3kG59b5Xc+Xps=",
		Files: []string{
			"config/crd/bases/keda.sh_scaledobjects.yaml",
			"config/crd/bases/keda.sh_triggerauthentications.yaml",
		},
	},
}

// moduleDir downloads m (a no-op when it is in the module cache), checks its
// hash and returns its directory.
func moduleDir(m crdModule) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", m.Path+"@"+m.Version)
	// Outside any module, so that the GOFLAGS of a build (-mod=readonly)
	// and this module's go.mod play no part.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on")
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go mod download %s@%s: %v %s", m.Path, m.Version, err, info.Error)
	}
	if info.Sum != m.Sum {
		return "", fmt.Errorf("go mod download %s@%s: hash %s, want %s", m.Path, m.Version, info.Sum, m.Sum)
	}
	return info.Dir, nil
}

// crdSchema is the schema of one served version of a custom resource.
type crdSchema struct {
	source string // module@version/file
	schema *jsonschema.Schema
}

// CRDs holds the schemas of the custom resources, by "apiVersion kind".
type CRDs struct {
	byKind map[string]crdSchema
}

var (
	crdsOnce sync.Once
	crds     *CRDs
	crdsErr  error
)

// LoadCRDs reads the CRDs of CRDModules (once per process).
func LoadCRDs() (*CRDs, error) {
	crdsOnce.Do(func() {
		c := &CRDs{byKind: map[string]crdSchema{}}
		for _, m := range CRDModules {
			dir, err := moduleDir(m)
			if err != nil {
				crdsErr = err
				return
			}
			for _, f := range m.Files {
				b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
				if err != nil {
					crdsErr = err
					return
				}
				if err := c.add(fmt.Sprintf("%s@%s/%s", m.Path, m.Version, f), b); err != nil {
					crdsErr = err
					return
				}
			}
		}
		crds = c
	})
	return crds, crdsErr
}

// add compiles every served version of one CRD file.
func (c *CRDs) add(source string, b []byte) error {
	var crd struct {
		Kind string `json:"kind"`
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Spec.Names.Kind == "" {
		return fmt.Errorf("%s: not a CustomResourceDefinition", source)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		s := toJSONSchema(v.Schema.OpenAPIV3Schema)
		s["$schema"] = "http://json-schema.org/draft-04/schema#"
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("%s %s: %w", source, v.Name, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s %s: %w", source, v.Name, err)
		}
		comp := jsonschema.NewCompiler()
		url := "mem://" + strings.ReplaceAll(source, "/", "_") + "/" + v.Name
		if err := comp.AddResource(url, doc); err != nil {
			return fmt.Errorf("%s %s: %w", source, v.Name, err)
		}
		sch, err := comp.Compile(url)
		if err != nil {
			return fmt.Errorf("%s %s: %w", source, v.Name, err)
		}
		c.byKind[crd.Spec.Group+"/"+v.Name+" "+crd.Spec.Names.Kind] = crdSchema{source: source, schema: sch}
	}
	return nil
}

// toJSONSchema turns a structural openAPIV3Schema into a JSON Schema
// (draft 4, whose exclusiveMinimum and exclusiveMaximum are booleans, as
// OpenAPI 3.0's) that refuses what the API server's strict field validation
// refuses:
//
//   - an object schema with properties and neither additionalProperties nor
//     x-kubernetes-preserve-unknown-fields allows no other field (the
//     server prunes or, strictly, reports them);
//   - nullable: true admits null;
//   - x-kubernetes-int-or-string: true admits an integer or a string;
//   - format is dropped (the server checks only a few, loosely).
func toJSONSchema(v any) map[string]any {
	in, ok := v.(map[string]any)
	if !ok {
		return map[string]any{}
	}
	out := map[string]any{}
	for k, val := range in {
		switch k {
		case "properties", "patternProperties", "definitions":
			props := map[string]any{}
			for name, p := range val.(map[string]any) {
				props[name] = toJSONSchema(p)
			}
			out[k] = props
		case "items", "not":
			out[k] = toJSONSchema(val)
		case "additionalProperties":
			if b, ok := val.(bool); ok {
				out[k] = b
			} else {
				out[k] = toJSONSchema(val)
			}
		case "allOf", "anyOf", "oneOf":
			var list []any
			for _, s := range val.([]any) {
				list = append(list, toJSONSchema(s))
			}
			out[k] = list
		case "format", "nullable", "description", "example", "externalDocs":
		default:
			if !strings.HasPrefix(k, "x-") {
				out[k] = val
			}
		}
	}
	if in["x-kubernetes-int-or-string"] == true {
		delete(out, "type")
		out["anyOf"] = append(asList(out["anyOf"]), map[string]any{"type": "integer"}, map[string]any{"type": "string"})
	}
	if t, ok := out["type"].(string); ok && in["nullable"] == true {
		out["type"] = []any{t, "null"}
	}
	_, hasProps := in["properties"]
	_, hasAdditional := in["additionalProperties"]
	if hasProps && !hasAdditional && in["x-kubernetes-preserve-unknown-fields"] != true {
		out["additionalProperties"] = false
	}
	return out
}

// oneLine keeps the causes of a validation error, one after the other,
// without the first line, which names the schema's in-memory URL.
func oneLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	if len(lines) > 1 {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	return strings.Join(lines, "; ")
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// validate checks o against its CRD's schema, and its metadata as the API
// server's strict decoding does. It reports false when no CRD is known for
// o's apiVersion and kind.
func (c *CRDs) validate(o *Object) (bool, error) {
	s, ok := c.byKind[o.APIVersion+" "+o.Kind]
	if !ok {
		return false, nil
	}
	var errs []error
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(o.JSON))
	if err != nil {
		return true, err
	}
	if err := s.schema.Validate(doc); err != nil {
		errs = append(errs, fmt.Errorf("schema of %s: %s", s.source, oneLine(err)))
	}
	if md, ok := o.Map["metadata"]; ok {
		b, _ := json.Marshal(md)
		var meta metav1.ObjectMeta
		strict, err := kjson.UnmarshalStrict(b, &meta, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
		if err != nil {
			errs = append(errs, fmt.Errorf("metadata: %w", err))
		}
		for _, e := range strict {
			errs = append(errs, fmt.Errorf("metadata: %w", e))
		}
	}
	return true, errors.Join(errs...)
}
