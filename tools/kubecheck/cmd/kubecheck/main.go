// Command kubecheck renders rostrum's Helm chart or a kustomization (or
// reads rendered manifests) and validates every object offline, as package
// kubecheck describes. It prints the rendered manifests with -o, and exits
// 1 on the first rendering that fails to lint, render or validate.
//
//	cd tools/kubecheck
//	go run ./cmd/kubecheck -helm ../../deployments/helm/rostrum -f values.yaml
//	go run ./cmd/kubecheck -kustomize ../../deployments/overlays/prod
//	helm template … | go run ./cmd/kubecheck -
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rostrumhq/rostrum/tools/kubecheck"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubecheck:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("kubecheck", flag.ContinueOnError)
	chart := fs.String("helm", "", "chart directory: lint it and render it as helm template does")
	kust := fs.String("kustomize", "", "kustomization directory: build it as kustomize build does")
	var valuesFiles, external list
	fs.Var(&valuesFiles, "f", "values file of -helm (repeatable; later files win)")
	fs.Var(&external, "external", "Kind/name of an object made out of band that the manifests may reference (repeatable)")
	release := fs.String("release", "rostrum", "release name of -helm")
	namespace := fs.String("namespace", "rostrum", "release namespace of -helm")
	out := fs.String("o", "", "write the rendered manifests to this file (- for standard output)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rendered []byte
	var source string
	var err error
	switch {
	case *chart != "" && *kust == "" && fs.NArg() == 0:
		rel := kubecheck.Release{Name: *release, Namespace: *namespace}
		if err := kubecheck.HelmLint(*chart, rel, valuesFiles...); err != nil {
			return fmt.Errorf("helm lint %s: %w", *chart, err)
		}
		source = *chart
		rendered, err = kubecheck.HelmTemplate(*chart, rel, valuesFiles...)
	case *kust != "" && *chart == "" && fs.NArg() == 0:
		source = *kust
		rendered, err = kubecheck.Kustomize(*kust)
	case *chart == "" && *kust == "" && fs.NArg() == 1:
		source = fs.Arg(0)
		if source == "-" {
			rendered, err = io.ReadAll(stdin)
		} else {
			rendered, err = os.ReadFile(source)
		}
	default:
		return fmt.Errorf("give one of -helm DIR, -kustomize DIR or a file (- for standard input)")
	}
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if *out == "-" {
		if _, err := stdout.Write(rendered); err != nil {
			return err
		}
	} else if *out != "" {
		if err := os.WriteFile(*out, rendered, 0o644); err != nil {
			return err
		}
	}
	objs, err := kubecheck.Split(source, rendered)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("%s: no object", source)
	}
	if err := kubecheck.Check(objs, kubecheck.Options{External: external}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kubecheck: %s: %d objects valid\n", source, len(objs))
	return nil
}
