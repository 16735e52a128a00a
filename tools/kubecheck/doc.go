// Package kubecheck renders rostrum's Kubernetes manifests — the Helm chart
// (deployments/helm/rostrum) and the kustomize base and overlays
// (deployments/k8s, deployments/overlays) — and validates every object they
// make, offline:
//
//   - Helm: the chart is linted as `helm lint` does (its values checked
//     against values.schema.json) and rendered as `helm template` does, both
//     with Helm's own packages; a lint warning fails like an error.
//   - kustomize: built with kustomize's own API (krusty), as `kubectl
//     apply -k` builds it.
//   - Built-in kinds (ConfigMap, Secret, Service, StatefulSet, Deployment,
//     Job, PodDisruptionBudget, HorizontalPodAutoscaler, …) are decoded into
//     the k8s.io/api types the API server decodes them into, case-sensitive,
//     with unknown and duplicate fields refused: what `kubectl apply
//     --validate=strict` reports. An apiVersion or kind not in the list of
//     built-in kinds fails.
//   - Custom resources (ServiceMonitor, PrometheusRule, ScaledObject,
//     TriggerAuthentication) are validated against the openAPIV3Schema of
//     their CustomResourceDefinition, as published by the Prometheus
//     Operator and KEDA in their Go modules; the modules come from the Go
//     module proxy (or the module cache) at the pinned versions and hashes
//     of crds.go, never from the operators' web sites. As with strict field
//     validation, a field the schema does not declare is an error.
//   - Cross-object checks: selectors match the pod labels of their
//     workloads, Services and probes name container ports that exist,
//     ConfigMaps, Secrets and their keys that the pods and KEDA reference
//     exist (or are declared external), every volume mount has its volume, a
//     StatefulSet that runs `rostrum run` keeps its WAL on a claim template,
//     and a workload scaled by KEDA or an HPA sets no replicas of its own.
//
// Nothing here talks to a cluster. The command cmd/kubecheck renders and
// validates from the command line; the tests of this module run it over the
// repository's chart and kustomizations, and show that each check fails on
// a broken manifest.
package kubecheck
