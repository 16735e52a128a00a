package kubecheck

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Options tune Check.
type Options struct {
	// External lists the objects, as "Kind/name", that the manifests
	// reference but that are made out of band (an existing Secret, a
	// ServiceAccount): a reference to one of them is not an error.
	External []string
}

// Check validates one set of rendered objects — what one `helm template` or
// one `kustomize build` makes — and returns every problem it finds, each
// prefixed with the object's source and "Kind/name"; nil when there is none.
func Check(objs []*Object, opts Options) error {
	crds, err := LoadCRDs()
	if err != nil {
		return fmt.Errorf("loading the CRDs: %w", err)
	}
	var errs []error
	fail := func(o *Object, err error) {
		errs = append(errs, fmt.Errorf("%s: %s: %w", o.Source, o.ID(), err))
	}
	seen := map[string]bool{}
	for _, o := range objs {
		if seen[o.APIVersion+" "+o.ID()] {
			fail(o, errors.New("defined twice"))
		}
		seen[o.APIVersion+" "+o.ID()] = true
		for _, e := range checkMeta(o) {
			fail(o, e)
		}
		if ok, err := decodeBuiltin(o); ok {
			if err != nil {
				fail(o, err)
			}
			continue
		}
		if ok, err := crds.validate(o); ok {
			if err != nil {
				fail(o, err)
			}
			continue
		}
		fail(o, fmt.Errorf("apiVersion %s kind %s is neither a built-in kind kubecheck knows nor a custom resource of its CRDs", o.APIVersion, o.Kind))
	}
	if len(errs) > 0 {
		// The cross-object checks need every object decoded.
		return errors.Join(errs...)
	}
	s := newSet(objs, opts)
	for _, o := range objs {
		for _, e := range s.check(o) {
			fail(o, e)
		}
	}
	return errors.Join(errs...)
}

// set indexes the objects of one rendering for the cross-object checks.
type set struct {
	byID     map[string]*Object
	external map[string]bool
	pods     []podOwner
}

// podOwner is a workload and the pods it makes.
type podOwner struct {
	obj *Object
	tpl *corev1.PodTemplateSpec
}

func newSet(objs []*Object, opts Options) *set {
	s := &set{byID: map[string]*Object{}, external: map[string]bool{}}
	for _, e := range opts.External {
		s.external[e] = true
	}
	for _, o := range objs {
		s.byID[o.ID()] = o
		if tpl := podTemplate(o); tpl != nil {
			s.pods = append(s.pods, podOwner{o, tpl})
		}
	}
	return s
}

func podTemplate(o *Object) *corev1.PodTemplateSpec {
	switch t := o.Typed.(type) {
	case *appsv1.StatefulSet:
		return &t.Spec.Template
	case *appsv1.Deployment:
		return &t.Spec.Template
	case *batchv1.Job:
		return &t.Spec.Template
	case *batchv1.CronJob:
		return &t.Spec.JobTemplate.Spec.Template
	}
	return nil
}

func (s *set) check(o *Object) []error {
	var errs []error
	switch t := o.Typed.(type) {
	case *appsv1.StatefulSet:
		errs = append(errs, s.checkSelector("spec.selector", t.Spec.Selector, &t.Spec.Template)...)
		errs = append(errs, s.checkPod(&t.Spec.Template, t.Spec.VolumeClaimTemplates)...)
		errs = append(errs, s.checkStatefulSet(t)...)
	case *appsv1.Deployment:
		errs = append(errs, s.checkSelector("spec.selector", t.Spec.Selector, &t.Spec.Template)...)
		errs = append(errs, s.checkPod(&t.Spec.Template, nil)...)
	case *batchv1.Job:
		if t.Spec.Selector != nil {
			errs = append(errs, s.checkSelector("spec.selector", t.Spec.Selector, &t.Spec.Template)...)
		}
		errs = append(errs, s.checkPod(&t.Spec.Template, nil)...)
	case *batchv1.CronJob:
		errs = append(errs, s.checkPod(&t.Spec.JobTemplate.Spec.Template, nil)...)
	case *corev1.Service:
		errs = append(errs, s.checkService(t)...)
	case *policyv1.PodDisruptionBudget:
		if sel, err := metav1.LabelSelectorAsSelector(t.Spec.Selector); err != nil {
			errs = append(errs, fmt.Errorf("spec.selector: %w", err))
		} else if len(s.selected(sel)) == 0 {
			errs = append(errs, fmt.Errorf("spec.selector %s selects no pods of these manifests", sel))
		}
	case *autoscalingv2.HorizontalPodAutoscaler:
		errs = append(errs, s.checkScaleTarget("spec.scaleTargetRef", t.Spec.ScaleTargetRef.Kind, t.Spec.ScaleTargetRef.Name, "a HorizontalPodAutoscaler")...)
	}
	switch o.Kind {
	case "ScaledObject":
		kind, _ := dig(o.Map, "spec", "scaleTargetRef", "kind").(string)
		if kind == "" {
			kind = "Deployment"
		}
		name, _ := dig(o.Map, "spec", "scaleTargetRef", "name").(string)
		errs = append(errs, s.checkScaleTarget("spec.scaleTargetRef", kind, name, "KEDA")...)
		triggers, _ := dig(o.Map, "spec", "triggers").([]any)
		for i, tr := range triggers {
			ref, _ := dig(tr, "authenticationRef", "name").(string)
			kind, _ := dig(tr, "authenticationRef", "kind").(string)
			if kind == "" {
				kind = "TriggerAuthentication"
			}
			if ref != "" && !s.exists(kind+"/"+ref) {
				errs = append(errs, fmt.Errorf("spec.triggers[%d].authenticationRef: no %s/%s", i, kind, ref))
			}
		}
	case "TriggerAuthentication":
		refs, _ := dig(o.Map, "spec", "secretTargetRef").([]any)
		for i, r := range refs {
			name, _ := dig(r, "name").(string)
			key, _ := dig(r, "key").(string)
			if err := s.hasKey("Secret", name, key, false); err != nil {
				errs = append(errs, fmt.Errorf("spec.secretTargetRef[%d]: %w", i, err))
			}
		}
	case "ServiceMonitor":
		errs = append(errs, s.checkServiceMonitor(o)...)
	}
	return errs
}

// checkSelector: a workload's selector must select its own pods.
func (s *set) checkSelector(field string, ls *metav1.LabelSelector, tpl *corev1.PodTemplateSpec) []error {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", field, err)}
	}
	if sel.Empty() {
		return []error{fmt.Errorf("%s is empty", field)}
	}
	if !sel.Matches(labels.Set(tpl.Labels)) {
		return []error{fmt.Errorf("%s %s does not match the pod template's labels %v", field, sel, tpl.Labels)}
	}
	return nil
}

// selected returns the workloads whose pods sel selects.
func (s *set) selected(sel labels.Selector) []podOwner {
	var out []podOwner
	for _, p := range s.pods {
		if !sel.Empty() && sel.Matches(labels.Set(p.tpl.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

func (s *set) exists(id string) bool { return s.byID[id] != nil || s.external[id] }

// hasKey checks that the ConfigMap or Secret name exists and, when key is
// not empty, holds it. A reference to an external object is not checked
// further; an optional one may be missing.
func (s *set) hasKey(kind, name, key string, optional bool) error {
	id := kind + "/" + name
	if s.external[id] {
		return nil
	}
	o := s.byID[id]
	if o == nil {
		if optional {
			return nil
		}
		return fmt.Errorf("no %s in these manifests (declare it external if it is made out of band)", id)
	}
	if key == "" {
		return nil
	}
	var keys []string
	switch t := o.Typed.(type) {
	case *corev1.Secret:
		for k := range t.Data {
			keys = append(keys, k)
		}
		for k := range t.StringData {
			keys = append(keys, k)
		}
	case *corev1.ConfigMap:
		for k := range t.Data {
			keys = append(keys, k)
		}
		for k := range t.BinaryData {
			keys = append(keys, k)
		}
	}
	if !slices.Contains(keys, key) && !optional {
		sort.Strings(keys)
		return fmt.Errorf("%s has no key %q (it has %v)", id, key, keys)
	}
	return nil
}

// checkPod checks the references of a pod template: volumes and their
// ConfigMaps and Secrets, mounts, environment, probe ports, the service
// account, and the topology spread's selector.
func (s *set) checkPod(tpl *corev1.PodTemplateSpec, claims []corev1.PersistentVolumeClaim) []error {
	var errs []error
	spec := &tpl.Spec
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
		switch {
		case v.ConfigMap != nil:
			opt := v.ConfigMap.Optional != nil && *v.ConfigMap.Optional
			if err := s.hasKey("ConfigMap", v.ConfigMap.Name, "", opt); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
				continue
			}
			for _, it := range v.ConfigMap.Items {
				if err := s.hasKey("ConfigMap", v.ConfigMap.Name, it.Key, opt); err != nil {
					errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
				}
			}
		case v.Secret != nil:
			opt := v.Secret.Optional != nil && *v.Secret.Optional
			if err := s.hasKey("Secret", v.Secret.SecretName, "", opt); err != nil {
				errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
				continue
			}
			for _, it := range v.Secret.Items {
				if err := s.hasKey("Secret", v.Secret.SecretName, it.Key, opt); err != nil {
					errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
				}
			}
		}
	}
	for _, c := range claims {
		if vols[c.Name] {
			errs = append(errs, fmt.Errorf("volume %s is both a pod volume and a volumeClaimTemplate", c.Name))
		}
		vols[c.Name] = true
	}
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" && !s.exists("ServiceAccount/"+sa) {
		errs = append(errs, fmt.Errorf("serviceAccountName %s: no ServiceAccount/%s", sa, sa))
	}
	for _, tsc := range spec.TopologySpreadConstraints {
		if tsc.LabelSelector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil || !sel.Matches(labels.Set(tpl.Labels)) {
			errs = append(errs, fmt.Errorf("topologySpreadConstraints selector %v does not match the pod's own labels %v", tsc.LabelSelector, tpl.Labels))
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		mounted := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				errs = append(errs, fmt.Errorf("container %s mounts %s, which is no volume of the pod", c.Name, m.Name))
			}
			if mounted[m.MountPath] {
				errs = append(errs, fmt.Errorf("container %s mounts two volumes at %s", c.Name, m.MountPath))
			}
			mounted[m.MountPath] = true
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				if err := s.hasKey("Secret", r.Name, r.Key, r.Optional != nil && *r.Optional); err != nil {
					errs = append(errs, fmt.Errorf("container %s env %s: %w", c.Name, e.Name, err))
				}
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				if err := s.hasKey("ConfigMap", r.Name, r.Key, r.Optional != nil && *r.Optional); err != nil {
					errs = append(errs, fmt.Errorf("container %s env %s: %w", c.Name, e.Name, err))
				}
			}
		}
		for _, e := range c.EnvFrom {
			if r := e.SecretRef; r != nil {
				if err := s.hasKey("Secret", r.Name, "", r.Optional != nil && *r.Optional); err != nil {
					errs = append(errs, fmt.Errorf("container %s envFrom: %w", c.Name, err))
				}
			}
			if r := e.ConfigMapRef; r != nil {
				if err := s.hasKey("ConfigMap", r.Name, "", r.Optional != nil && *r.Optional); err != nil {
					errs = append(errs, fmt.Errorf("container %s envFrom: %w", c.Name, err))
				}
			}
		}
		for name, p := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
			if p == nil {
				continue
			}
			var port *intstr.IntOrString
			switch {
			case p.HTTPGet != nil:
				port = &p.HTTPGet.Port
			case p.TCPSocket != nil:
				port = &p.TCPSocket.Port
			}
			if port != nil && !hasPort(c, *port) {
				errs = append(errs, fmt.Errorf("container %s %s: port %s is no port of the container", c.Name, name, port.String()))
			}
		}
	}
	return errs
}

func hasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if port.Type == intstr.String && p.Name == port.StrVal || port.Type == intstr.Int && p.ContainerPort == port.IntVal {
			return true
		}
	}
	return false
}

// checkStatefulSet: its governing Service is a headless Service of the
// manifests, every claim template is mounted, and a container running
// `rostrum run` keeps its WAL on a claim template (one per pod, surviving
// restarts), never on a pod volume.
func (s *set) checkStatefulSet(ss *appsv1.StatefulSet) []error {
	var errs []error
	svc, _ := s.typedService(ss.Spec.ServiceName)
	if svc == nil {
		errs = append(errs, fmt.Errorf("spec.serviceName %q: no such Service", ss.Spec.ServiceName))
	} else if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		errs = append(errs, fmt.Errorf("spec.serviceName %q is not headless (clusterIP: None)", ss.Spec.ServiceName))
	}
	claims := map[string]bool{}
	for _, c := range ss.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
	}
	mounted := map[string]bool{}
	for _, c := range ss.Spec.Template.Spec.Containers {
		onClaim := false
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = true
			if claims[m.Name] {
				onClaim = true
			}
		}
		if len(c.Args) > 0 && c.Args[0] == "run" && !onClaim {
			errs = append(errs, fmt.Errorf("container %s runs `rostrum run` without a volumeClaimTemplate mounted: its WAL would not survive a restart", c.Name))
		}
	}
	for name := range claims {
		if !mounted[name] {
			errs = append(errs, fmt.Errorf("volumeClaimTemplate %s is mounted by no container", name))
		}
	}
	return errs
}

func (s *set) typedService(name string) (*corev1.Service, *Object) {
	o := s.byID["Service/"+name]
	if o == nil {
		return nil, nil
	}
	svc, _ := o.Typed.(*corev1.Service)
	return svc, o
}

// checkService: the selector selects pods of the manifests, and each port's
// targetPort is a port of their containers.
func (s *set) checkService(svc *corev1.Service) []error {
	if len(svc.Spec.Selector) == 0 {
		return nil // endpoints managed by hand
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	pods := s.selected(sel)
	if len(pods) == 0 {
		return []error{fmt.Errorf("spec.selector %s selects no pods of these manifests", sel)}
	}
	var errs []error
	for _, p := range svc.Spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		for _, pod := range pods {
			found := false
			for _, c := range pod.tpl.Spec.Containers {
				if hasPort(c, target) {
					found = true
				}
			}
			if !found {
				errs = append(errs, fmt.Errorf("port %s: targetPort %s is no container port of %s", p.Name, target.String(), pod.obj.ID()))
			}
		}
	}
	return errs
}

// checkScaleTarget: an autoscaler's target exists and leaves its replica
// count to the autoscaler.
func (s *set) checkScaleTarget(field, kind, name, owner string) []error {
	o := s.byID[kind+"/"+name]
	if o == nil {
		return []error{fmt.Errorf("%s: no %s/%s in these manifests", field, kind, name)}
	}
	spec, _ := dig(o.Map, "spec").(map[string]any)
	if _, set := spec["replicas"]; set {
		return []error{fmt.Errorf("%s: %s sets spec.replicas, which %s owns: every apply would reset the replica count", field, o.ID(), owner)}
	}
	return nil
}

// checkServiceMonitor: the selector selects Services of the manifests, each
// with the endpoints' named ports.
func (s *set) checkServiceMonitor(o *Object) []error {
	ml, _ := dig(o.Map, "spec", "selector", "matchLabels").(map[string]any)
	want := labels.Set{}
	for k, v := range ml {
		want[k], _ = v.(string)
	}
	var svcs []*corev1.Service
	for _, x := range s.byID {
		if svc, ok := x.Typed.(*corev1.Service); ok && len(want) > 0 && labels.SelectorFromSet(want).Matches(labels.Set(svc.Labels)) {
			svcs = append(svcs, svc)
		}
	}
	if len(svcs) == 0 {
		return []error{fmt.Errorf("spec.selector %v selects no Service of these manifests", want)}
	}
	var errs []error
	eps, _ := dig(o.Map, "spec", "endpoints").([]any)
	for i, ep := range eps {
		port, _ := dig(ep, "port").(string)
		if port == "" {
			continue
		}
		for _, svc := range svcs {
			if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
				errs = append(errs, fmt.Errorf("spec.endpoints[%d].port %q is no port of Service/%s", i, port, svc.Name))
			}
		}
	}
	return errs
}

// dig walks maps by key; nil when a step is missing.
func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
