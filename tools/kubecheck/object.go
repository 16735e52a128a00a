package kubecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one Kubernetes object of a rendered manifest.
type Object struct {
	// Source names where it came from: a template or a file.
	Source     string
	APIVersion string
	Kind       string
	Name       string
	// JSON is the object as the API server would receive it.
	JSON []byte
	// Map is JSON decoded into maps and slices.
	Map map[string]any
	// Typed is the k8s.io/api value of a built-in kind (a pointer), nil for a
	// custom resource.
	Typed any
}

// ID is "Kind/name", how errors name an object.
func (o *Object) ID() string { return o.Kind + "/" + o.Name }

// Split decodes a multi-document YAML stream into objects. source names the
// stream in errors; a "# Source: path" comment, as `helm template` writes,
// names the document it heads. Empty documents are skipped; a document that
// is not a mapping with apiVersion, kind and metadata.name is an error, and
// so is a duplicate key, as the API server refuses it.
func Split(source string, stream []byte) ([]*Object, error) {
	var objs []*Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		src := source
		for _, line := range strings.Split(string(doc), "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(line), "# Source: "); ok {
				src = s
				break
			}
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			// One line: the YAML error lists its causes on lines of their own.
			return nil, fmt.Errorf("%s: document %d: %s", src, i, strings.Join(strings.Fields(err.Error()), " "))
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue
		}
		o := &Object{Source: src, JSON: js}
		if err := json.Unmarshal(js, &o.Map); err != nil || o.Map == nil {
			return nil, fmt.Errorf("%s: document %d is not a mapping", src, i)
		}
		o.APIVersion, _ = o.Map["apiVersion"].(string)
		o.Kind, _ = o.Map["kind"].(string)
		if md, ok := o.Map["metadata"].(map[string]any); ok {
			o.Name, _ = md["name"].(string)
		}
		if o.APIVersion == "" || o.Kind == "" || o.Name == "" {
			return nil, fmt.Errorf("%s: document %d lacks apiVersion, kind or metadata.name", src, i)
		}
		objs = append(objs, o)
	}
	return objs, nil
}
