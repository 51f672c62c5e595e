// Package helm tests the Helm chart in toolrouter/: it renders it with Helm's own packages for
// each values file in testdata/, decodes every manifest strictly into its Kubernetes API type
// (an unknown field fails), and checks the probes, the security context, the resources and the
// rule that replicas share their rate limits and usage records.
package helm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const (
	release   = "tr"
	namespace = "ai"
	fullname  = "tr-toolrouter"
)

// rendered is one render's objects, decoded.
type rendered struct {
	kinds      []string
	deployment *appsv1.Deployment
	service    *corev1.Service
	configMap  *corev1.ConfigMap
	pdb        *policyv1.PodDisruptionBudget
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	monitor    *monitoringv1.ServiceMonitor
	policy     *networkingv1.NetworkPolicy
}

// render renders the chart with the values file (none: the chart's defaults) as helm install
// would, and decodes every manifest strictly.
func render(t *testing.T, valuesFile string) (*rendered, error) {
	t.Helper()
	chrt, err := loader.Load("toolrouter")
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	vals := chartutil.Values{}
	if valuesFile != "" {
		if vals, err = chartutil.ReadValuesFile(filepath.Join("testdata", valuesFile)); err != nil {
			t.Fatal(err)
		}
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(chrt, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(chrt, top)
	if err != nil {
		return nil, err
	}
	r := &rendered{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[name], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			if err := r.decode([]byte(doc)); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
		}
	}
	return r, nil
}

// decode decodes one manifest into the type of its apiVersion and kind, refusing unknown fields.
func (r *rendered) decode(doc []byte) error {
	var meta struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "apps/v1 Deployment":
		r.deployment = &appsv1.Deployment{}
		obj = r.deployment
	case "v1 Service":
		r.service = &corev1.Service{}
		obj = r.service
	case "v1 ConfigMap":
		r.configMap = &corev1.ConfigMap{}
		obj = r.configMap
	case "policy/v1 PodDisruptionBudget":
		r.pdb = &policyv1.PodDisruptionBudget{}
		obj = r.pdb
	case "autoscaling/v2 HorizontalPodAutoscaler":
		r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
		obj = r.hpa
	case "monitoring.coreos.com/v1 ServiceMonitor":
		r.monitor = &monitoringv1.ServiceMonitor{}
		obj = r.monitor
	case "networking.k8s.io/v1 NetworkPolicy":
		r.policy = &networkingv1.NetworkPolicy{}
		obj = r.policy
	default:
		return fmt.Errorf("unexpected %s %s", meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return fmt.Errorf("%s: %w", meta.Kind, err)
	}
	r.kinds = append(r.kinds, meta.Kind)
	return nil
}

func TestChart(t *testing.T) {
	for _, tc := range []struct {
		values string
		// wantErr, when set, is a part of the message the render must fail with.
		wantErr string
		// optional are the kinds beyond Deployment, Service, ConfigMap and PodDisruptionBudget.
		optional    []string
		replicas    int32 // the Deployment's; 0: none, an HPA sets them
		maxReplicas string
		shared      bool // the Redis and PostgreSQL URLs come from Secrets
	}{
		{values: "", wantErr: "config.auth: toolrouter listens on every interface"},
		{values: "single.yaml", replicas: 1, maxReplicas: "1"},
		{values: "anonymous-sqlite-pvc.yaml", replicas: 1, maxReplicas: "1"},
		{values: "shared.yaml", replicas: 3, maxReplicas: "3", shared: true},
		{values: "replicas-config-urls.yaml", replicas: 2, maxReplicas: "2"},
		{values: "everything.yaml", optional: []string{"HorizontalPodAutoscaler", "NetworkPolicy", "ServiceMonitor"}, maxReplicas: "5", shared: true},
		{values: "replicas-without-redis.yaml", wantErr: "limits and usage must be shared, or each replica enforces its own rate limits and keeps its own usage records (missing: redis)"},
		{values: "autoscaling-without-postgres.yaml", wantErr: "4 replicas (replicaCount, or autoscaling.maxReplicas) need redis.urlSecret.name and postgres.urlSecret.name: limits and usage must be shared"},
	} {
		name := tc.values
		if name == "" {
			name = "chart defaults"
		}
		t.Run(name, func(t *testing.T) {
			r, err := render(t, tc.values)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("render: got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			want := append([]string{"ConfigMap", "Deployment", "PodDisruptionBudget", "Service"}, tc.optional...)
			if got := sorted(r.kinds); !slices.Equal(got, sorted(want)) {
				t.Errorf("kinds: got %v, want %v", got, sorted(want))
			}
			checkDeployment(t, r, tc.replicas, tc.maxReplicas)
			checkConfig(t, r)
			checkSelectors(t, r)
			checkShared(t, r, tc.shared)
			if r.monitor != nil {
				checkMetrics(t, r)
			}
		})
	}
}

// checkDeployment checks the pod: probes, security, resources, writable paths, replicas.
func checkDeployment(t *testing.T, r *rendered, replicas int32, maxReplicas string) {
	t.Helper()
	d := r.deployment
	if d == nil {
		t.Fatal("no Deployment")
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("containers: got %d, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	psc, sc := pod.SecurityContext, c.SecurityContext
	gotReplicas := int32(0)
	if d.Spec.Replicas != nil {
		gotReplicas = *d.Spec.Replicas
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"replicas", gotReplicas, replicas},
		{"liveness probe", probe(c.LivenessProbe), "GET /healthz http"},
		{"readiness probe", probe(c.ReadinessProbe), "GET /readyz http Host=localhost:8090"},
		{"startup probe", probe(c.StartupProbe), "GET /healthz http"},
		{"container port", fmt.Sprint(c.Ports[0].Name, " ", c.Ports[0].ContainerPort), "http 8090"},
		{"runAsNonRoot", psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot, true},
		{"runAsUser non-root", psc != nil && psc.RunAsUser != nil && *psc.RunAsUser != 0, true},
		{"read-only root filesystem", sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, true},
		{"no privilege escalation", sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, true},
		{"capabilities dropped", sc != nil && sc.Capabilities != nil && slices.Contains(sc.Capabilities.Drop, "ALL"), true},
		{"seccomp", psc != nil && psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault, true},
		{"cpu request", !c.Resources.Requests.Cpu().IsZero(), true},
		{"memory request", !c.Resources.Requests.Memory().IsZero(), true},
		{"memory limit", !c.Resources.Limits.Memory().IsZero(), true},
		{"writable mounts", writableMounts(c), "/data /tmp"},
		{"args", c.Args, []string{"-config", "/etc/toolrouter/config.json", "serve"}},
		{"config mounted", mountOf(c, "/etc/toolrouter"), "config"},
		{"limits.replicas", envValue(c, "TOOLROUTER_LIMITS__REPLICAS"), maxReplicas},
		{"listen", envValue(c, "TOOLROUTER_LISTEN"), ":8090"},
		{"grace period longer than the 10 s drain", pod.TerminationGracePeriodSeconds != nil && *pod.TerminationGracePeriodSeconds > 10, true},
		{"config checksum annotation", len(d.Spec.Template.Annotations["checksum/config"]), 64},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// checkConfig checks config.json: JSON toolrouter reads, that allows the Host the readiness
// probe sends (localhost on an every-interface listen, as set) and the Service's names.
func checkConfig(t *testing.T, r *rendered) {
	t.Helper()
	var cfg struct {
		HTTP struct {
			AllowedHosts []string `json:"allowed_hosts"`
		} `json:"http"`
	}
	raw := r.configMap.Data["config.json"]
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("config.json: %v\n%s", err, raw)
	}
	for _, host := range []string{fullname, fullname + "." + namespace + ".svc", fullname + "." + namespace + ".svc.cluster.local"} {
		if !slices.Contains(cfg.HTTP.AllowedHosts, host) {
			t.Errorf("http.allowed_hosts: got %v, want it to hold the Service's name %s", cfg.HTTP.AllowedHosts, host)
		}
	}
	if r.configMap.Name != volumeConfigMap(r.deployment) {
		t.Errorf("the pod mounts ConfigMap %q, want %q", volumeConfigMap(r.deployment), r.configMap.Name)
	}
}

// checkSelectors checks that the Service, the PDB and the optional objects select the pods.
func checkSelectors(t *testing.T, r *rendered) {
	t.Helper()
	pods := r.deployment.Spec.Template.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if pods[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(r.service.Spec.Selector) {
		t.Errorf("Service selector %v does not select the pods %v", r.service.Spec.Selector, pods)
	}
	if r.pdb.Spec.Selector == nil || !matches(r.pdb.Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods %v", r.pdb.Spec.Selector, pods)
	}
	if r.pdb.Spec.MaxUnavailable == nil && r.pdb.Spec.MinAvailable == nil {
		t.Error("PodDisruptionBudget sets neither maxUnavailable nor minAvailable")
	}
	if r.service.Spec.Ports[0].TargetPort.String() != "http" {
		t.Errorf("Service targets %s, want the pod's port http", r.service.Spec.Ports[0].TargetPort.String())
	}
	if r.hpa != nil {
		if r.hpa.Spec.ScaleTargetRef.Name != r.deployment.Name || r.hpa.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("HPA scales %+v, want Deployment %s", r.hpa.Spec.ScaleTargetRef, r.deployment.Name)
		}
	}
	if r.policy != nil && !matches(r.policy.Spec.PodSelector.MatchLabels) {
		t.Errorf("NetworkPolicy selects %v, not the pods %v", r.policy.Spec.PodSelector.MatchLabels, pods)
	}
}

// checkShared checks that the shared URLs and the password come from Secrets, never values.
func checkShared(t *testing.T, r *rendered, shared bool) {
	t.Helper()
	c := r.deployment.Spec.Template.Spec.Containers[0]
	for _, name := range []string{"TOOLROUTER_LIMITS__REDIS_URL", "TOOLROUTER_USAGE__POSTGRES_URL", "PGPASSWORD"} {
		e := envVar(c, name)
		switch {
		case !shared && e != nil:
			t.Errorf("%s set without a Secret in the values", name)
		case shared && (e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.Value != ""):
			t.Errorf("%s: got %+v, want it from a Secret", name, e)
		}
	}
	for _, e := range c.Env {
		if e.Name == "TOOLROUTER_KEY_COUNCIL" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("%s: got %+v, want it from a Secret", e.Name, e)
		}
	}
}

// checkMetrics checks that the ServiceMonitor scrapes a port the Service has, which the pod
// serves /metrics on (config.json's metrics.listen), and that the NetworkPolicy lets it in.
func checkMetrics(t *testing.T, r *rendered) {
	t.Helper()
	var cfg struct {
		Metrics struct{ Listen string } `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(r.configMap.Data["config.json"]), &cfg); err != nil {
		t.Fatal(err)
	}
	var svcPort, podPort string
	for _, p := range r.service.Spec.Ports {
		if p.Name == "metrics" {
			svcPort = p.TargetPort.String()
		}
	}
	for _, p := range r.deployment.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == "metrics" {
			podPort = fmt.Sprint(":", p.ContainerPort)
		}
	}
	ep := r.monitor.Spec.Endpoints
	if len(ep) != 1 || ep[0].Port != "metrics" || ep[0].Path != "/metrics" || svcPort != "metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, Service's metrics port %q: want port metrics, path /metrics", ep, svcPort)
	}
	if cfg.Metrics.Listen == "" || cfg.Metrics.Listen != podPort {
		t.Errorf("metrics.listen %q, pod's metrics port %q: want the same port", cfg.Metrics.Listen, podPort)
	}
	if r.policy != nil {
		var ports []string
		for _, in := range r.policy.Spec.Ingress {
			for _, p := range in.Ports {
				ports = append(ports, p.Port.String())
			}
		}
		if !slices.Equal(sorted(ports), []string{"http", "metrics"}) {
			t.Errorf("NetworkPolicy admits ports %v, want http and metrics", ports)
		}
	}
}

func probe(p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return "none"
	}
	s := "GET " + p.HTTPGet.Path + " " + p.HTTPGet.Port.String()
	for _, h := range p.HTTPGet.HTTPHeaders {
		s += " " + h.Name + "=" + h.Value
	}
	return s
}

// writableMounts are the mount paths not read-only, sorted.
func writableMounts(c corev1.Container) string {
	var out []string
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			out = append(out, m.MountPath)
		}
	}
	return strings.Join(sorted(out), " ")
}

func mountOf(c corev1.Container, path string) string {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path && m.ReadOnly {
			return m.Name
		}
	}
	return ""
}

func volumeConfigMap(d *appsv1.Deployment) string {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "config" && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return ""
}

func envVar(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

func envValue(c corev1.Container, name string) string {
	if e := envVar(c, name); e != nil {
		return e.Value
	}
	return ""
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
