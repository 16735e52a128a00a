package kubecheck

import (
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
)

// builtin maps "apiVersion kind" of the built-in kinds rostrum's manifests
// may use to a constructor of their k8s.io/api type. Only versions a current
// API server serves are listed: a removed one (policy/v1beta1,
// autoscaling/v2beta2) fails as an unknown kind.
var builtin = map[string]func() any{
	"v1 ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1 Secret":                     func() any { return new(corev1.Secret) },
	"v1 Service":                    func() any { return new(corev1.Service) },
	"v1 ServiceAccount":             func() any { return new(corev1.ServiceAccount) },
	"v1 PersistentVolumeClaim":      func() any { return new(corev1.PersistentVolumeClaim) },
	"v1 Namespace":                  func() any { return new(corev1.Namespace) },
	"apps/v1 StatefulSet":           func() any { return new(appsv1.StatefulSet) },
	"apps/v1 Deployment":            func() any { return new(appsv1.Deployment) },
	"batch/v1 Job":                  func() any { return new(batchv1.Job) },
	"batch/v1 CronJob":              func() any { return new(batchv1.CronJob) },
	"policy/v1 PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
	"autoscaling/v2 HorizontalPodAutoscaler": func() any {
		return new(autoscalingv2.HorizontalPodAutoscaler)
	},
	"networking.k8s.io/v1 Ingress":       func() any { return new(networkingv1.Ingress) },
	"networking.k8s.io/v1 NetworkPolicy": func() any { return new(networkingv1.NetworkPolicy) },
	"rbac.authorization.k8s.io/v1 Role":  func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1 RoleBinding": func() any {
		return new(rbacv1.RoleBinding)
	},
}

// decodeBuiltin decodes o into its k8s.io/api type, as the API server does
// with strict field validation: field names are case-sensitive, and an
// unknown or duplicate field is an error. It reports false when o is not a
// built-in kind.
func decodeBuiltin(o *Object) (bool, error) {
	mk, ok := builtin[o.APIVersion+" "+o.Kind]
	if !ok {
		return false, nil
	}
	v := mk()
	strict, err := kjson.UnmarshalStrict(o.JSON, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return true, fmt.Errorf("decode: %w", err)
	}
	if len(strict) > 0 {
		return true, errors.Join(strict...)
	}
	o.Typed = v
	return true, nil
}

// checkMeta checks the name, labels and annotations of any object as the
// API server's metadata validation does.
func checkMeta(o *Object) []error {
	var errs []error
	md, _ := o.Map["metadata"].(map[string]any)
	nameErrs := validation.IsDNS1123Subdomain(o.Name)
	if o.Kind == "Service" {
		nameErrs = validation.IsDNS1035Label(o.Name)
	}
	for _, e := range nameErrs {
		errs = append(errs, fmt.Errorf("metadata.name %q: %s", o.Name, e))
	}
	labels, _ := md["labels"].(map[string]any)
	for k, v := range labels {
		for _, e := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("label key %q: %s", k, e))
		}
		s, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("label %s: value %v is not a string", k, v))
			continue
		}
		for _, e := range validation.IsValidLabelValue(s) {
			errs = append(errs, fmt.Errorf("label %s=%q: %s", k, s, e))
		}
	}
	annotations, _ := md["annotations"].(map[string]any)
	for k, v := range annotations {
		for _, e := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, fmt.Errorf("annotation key %q: %s", k, e))
		}
		if _, ok := v.(string); !ok {
			errs = append(errs, fmt.Errorf("annotation %s: value %v is not a string", k, v))
		}
	}
	return errs
}
