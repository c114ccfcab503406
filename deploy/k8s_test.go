package deploy

import (
	"encoding/base64"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/internal/service"
)

// secretName is the externally managed Secret every pod reads its secrets
// from (README: Operations, Kubernetes); secretKeys are its keys, each with
// a value LoadConfig accepts, standing in for the real one.
const secretName = "bpc-secrets"

var secretKeys = map[string]string{
	"DATABASE_URL":                           "postgres://bpc@postgres:5432/bpc",
	"BPC_ADMIN_TOKEN":                        strings.Repeat("t", 32),
	"BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64": base64.StdEncoding.EncodeToString(make([]byte, 32)),
	"BPC_KEY_ENCRYPTION_KEY":                 base64.StdEncoding.EncodeToString(make([]byte, 32)),
	"BPC_PUBLIC_BASE_URL":                    "https://passports.example.com",
	"BPC_DATABASE_READ_URL":                  "postgres://bpc@postgres-replica:5432/bpc",
}

// httpShutdown is how long the service waits for HTTP requests on SIGTERM,
// and cancelShutdown how long it then gives cancelled jobs to be snoozed
// back (service.App.Stop).
const (
	httpShutdown   = 10 * time.Second
	cancelShutdown = 10 * time.Second
)

// TestKubernetesBase and TestKubernetesProd build the kustomizations and
// check what a cluster would run: the commands, the configuration each
// container gets, its probes, resources and security context, the grace
// period against the shutdown timeout, disruption budgets, the export
// volume, autoscaling and scraping.
func TestKubernetesBase(t *testing.T) {
	t.Parallel()
	checkFleet(t, build(t, "k8s/base"))
}

// TestKubernetesProd also checks what the prod overlay adds: the namespace,
// BPC_ENV=prod with a required signing key, a pinned image, two api pods, a
// ReadWriteMany export claim and the query scoped to the namespace.
func TestKubernetesProd(t *testing.T) {
	t.Parallel()
	m := build(t, "k8s/overlays/prod")
	checkFleet(t, m)

	for _, o := range m.objects {
		if o.Kind != "Namespace" {
			require.Equal(t, "bpc", o.Metadata.Namespace, "%s/%s is not in the namespace bpc", o.Kind, o.Metadata.Name)
		}
	}
	api := m.deployment(t, "bpc-api")
	require.GreaterOrEqual(t, *api.Spec.Replicas, 2, "prod runs two api pods, so that a drain or a node loss leaves one")
	for _, name := range []string{"bpc-api", "bpc-worker"} {
		d := m.deployment(t, name)
		c := mainContainer(t, d)
		cfg, env := serveConfig(t, m, c)
		require.Equal(t, "prod", cfg.Env, "%s", name)
		required := map[string]bool{}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				// The platform's legacy key only signs versions compiled
				// before tenants had keys: a new deployment has none.
				// The read replica is optional everywhere.
				if e.Name == "BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64" || e.Name == "BPC_DATABASE_READ_URL" {
					continue
				}
				require.False(t, e.ValueFrom.SecretKeyRef.Optional, "%s: prod requires %s", name, e.Name)
				required[e.Name] = true
			}
		}
		// Every signing variable a production run needs (SPEC §16).
		for _, v := range []string{"BPC_KEY_ENCRYPTION_KEY", "BPC_PUBLIC_BASE_URL", "BPC_ADMIN_TOKEN", "DATABASE_URL"} {
			require.True(t, required[v], "%s: prod requires %s from the Secret", name, v)
		}
		// Without them, serve and doctor refuse to start.
		for _, v := range []string{"BPC_KEY_ENCRYPTION_KEY", "BPC_PUBLIC_BASE_URL"} {
			without := maps.Clone(env)
			delete(without, v)
			require.ErrorContains(t, service.CheckSigningConfig(func(k string) string { return without[k] }), v, "%s", name)
		}
		tag := imageTag(c.Image)
		require.NotContains(t, []string{"", "latest", "dev"}, tag, "%s: prod pins a release image, got %s", name, c.Image)
	}
	var pvc struct {
		Spec struct {
			AccessModes []string `yaml:"accessModes"`
		} `yaml:"spec"`
	}
	m.decode(t, "PersistentVolumeClaim", "bpc-exports", &pvc)
	require.Equal(t, []string{"ReadWriteMany"}, pvc.Spec.AccessModes, "api and worker pods on different nodes share the export files")
	so := m.scaledObject(t, "bpc-worker")
	require.GreaterOrEqual(t, *so.Spec.MinReplicaCount, 2)
	require.Contains(t, so.Spec.Triggers[0].Metadata["query"], `namespace="bpc"`, "the query counts this namespace's series only")
}

// checkFleet checks what holds for every build.
func checkFleet(t *testing.T, m manifests) {
	t.Helper()
	require.Empty(t, m.names("Secret"), "secrets are created outside the repository (README), never generated from it")
	var sa struct {
		AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
	}
	m.decode(t, "ServiceAccount", "bpc", &sa)
	require.False(t, sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken, "the pods never call the Kubernetes API")

	apiDep, workerDep := m.deployment(t, "bpc-api"), m.deployment(t, "bpc-worker")
	var job workload
	m.decode(t, "Job", "bpc-migrate", &job)
	require.NotNil(t, job.Spec.BackoffLimit)
	require.Contains(t, []string{"Never", "OnFailure"}, job.Spec.Template.Spec.RestartPolicy)

	// Commands: the image's entrypoint is /bpc, so args alone choose it.
	require.Equal(t, []string{"serve", "--role=" + service.RoleAPI}, mainContainer(t, apiDep).Args)
	require.Equal(t, []string{"serve", "--role=" + service.RoleWorker}, mainContainer(t, workerDep).Args)
	require.Len(t, job.Spec.Template.Spec.Containers, 1)
	require.Equal(t, []string{"migrate"}, job.Spec.Template.Spec.Containers[0].Args)
	for _, d := range []workload{apiDep, workerDep} {
		// No pod starts `bpc serve`, which refuses a schema that is
		// behind, before the schema is migrated.
		require.Len(t, d.Spec.Template.Spec.InitContainers, 1, "%s", d.Metadata.Name)
		require.Equal(t, []string{"migrate"}, d.Spec.Template.Spec.InitContainers[0].Args, "%s", d.Metadata.Name)
	}

	images := map[string]bool{}
	exportClaims := map[string]bool{}
	for _, w := range []workload{apiDep, workerDep, job} {
		pod := w.Spec.Template.Spec
		require.Equal(t, "bpc", pod.ServiceAccountName, "%s: its own service account, without an API token", w.Metadata.Name)
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			where := w.Metadata.Name + "/" + c.Name
			images[c.Image] = true
			require.Empty(t, c.Command, "%s: the image's entrypoint /bpc runs", where)
			checkSecurity(t, where, pod, c)
			checkResources(t, where, c)
			if c.Args[0] == "migrate" {
				_, err := toolConfig(t, m, c)
				require.NoError(t, err, "%s", where)
			}
		}
		if w.Kind != "Deployment" {
			continue
		}

		c := mainContainer(t, w)
		cfg, env := serveConfig(t, m, c)
		// The grace period covers a whole stop; past it the kubelet kills
		// the process and its jobs come back only when their leases expire.
		stop := preStopSleep(c) + httpShutdown + cfg.ShutdownTimeout + cancelShutdown
		require.NotNil(t, pod.TerminationGracePeriodSeconds, w.Metadata.Name)
		require.Greater(t, time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, stop,
			"%s: terminationGracePeriodSeconds against BPC_WORKER_SHUTDOWN_TIMEOUT_MS=%s", w.Metadata.Name, env["BPC_WORKER_SHUTDOWN_TIMEOUT_MS"])

		_, port, err := net.SplitHostPort(cfg.HTTPAddr)
		require.NoError(t, err)
		checkProbe(t, w.Metadata.Name+" liveness", c, c.LivenessProbe, "/v1/health/live", port)
		checkProbe(t, w.Metadata.Name+" readiness", c, c.ReadinessProbe, "/v1/health/ready", port)

		claim := ""
		for _, vm := range c.VolumeMounts {
			if vm.MountPath == cfg.ExportDir {
				for _, v := range pod.Volumes {
					if v.Name == vm.Name && v.PersistentVolumeClaim != nil {
						claim = v.PersistentVolumeClaim.ClaimName
					}
				}
			}
		}
		require.NotEmpty(t, claim, "%s: BPC_EXPORT_DIR %s is not on a persistent volume", w.Metadata.Name, cfg.ExportDir)
		require.Contains(t, m.names("PersistentVolumeClaim"), claim)
		exportClaims[claim] = true

		require.True(t, isSubset(w.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels), "%s selects its own pods", w.Metadata.Name)
		checkDisruptionBudget(t, m, w, []workload{apiDep, workerDep, job})
	}
	require.Len(t, images, 1, "every container runs the one image")
	require.Len(t, exportClaims, 1, "api and workers see the same export files")
	require.Nil(t, workerDep.Spec.Replicas, "the ScaledObject owns the worker count; a replicas field would reset it on every apply")

	checkServices(t, m, apiDep, workerDep, job)
	checkAutoscaling(t, m, workerDep)
	checkServiceMonitor(t, m)
}

// checkSecurity checks a container's effective security context: its own
// settings over the pod's.
func checkSecurity(t *testing.T, where string, pod podSpec, c container) {
	t.Helper()
	s := c.SecurityContext
	require.NotNil(t, s, "%s has no securityContext", where)
	p := pod.SecurityContext
	if p == nil {
		p = &securityContext{}
	}
	runAsNonRoot := cmpOr(s.RunAsNonRoot, p.RunAsNonRoot)
	require.True(t, runAsNonRoot != nil && *runAsNonRoot, "%s: runAsNonRoot", where)
	runAsUser := cmpOr(s.RunAsUser, p.RunAsUser)
	require.True(t, runAsUser != nil && *runAsUser == 65532, "%s: runAsUser 65532 (the image's nonroot)", where)
	require.True(t, s.ReadOnlyRootFilesystem != nil && *s.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", where)
	require.True(t, s.AllowPrivilegeEscalation != nil && !*s.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation false", where)
	require.NotNil(t, s.Capabilities, "%s: capabilities", where)
	require.Equal(t, []string{"ALL"}, s.Capabilities.Drop, "%s drops all capabilities", where)
	require.Empty(t, s.Capabilities.Add, "%s adds none", where)
	seccomp := cmpOr(s.SeccompProfile, p.SeccompProfile)
	require.True(t, seccomp != nil && seccomp.Type == "RuntimeDefault", "%s: seccompProfile RuntimeDefault", where)
	require.False(t, s.Privileged != nil && *s.Privileged, "%s: privileged", where)
}

// checkResources checks that a container requests and limits CPU and
// memory, requests no more than it limits.
func checkResources(t *testing.T, where string, c container) {
	t.Helper()
	for _, r := range []string{"cpu", "memory"} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		require.NotEmpty(t, req, "%s: requests.%s", where, r)
		require.NotEmpty(t, lim, "%s: limits.%s", where, r)
		require.LessOrEqual(t, quantity(t, req), quantity(t, lim), "%s: %s request %s above its limit %s", where, r, req, lim)
	}
}

// checkProbe checks an HTTP probe's path and that its port is the one the
// service listens on.
func checkProbe(t *testing.T, what string, c container, p *probe, path, listenPort string) {
	t.Helper()
	require.NotNil(t, p, what)
	require.NotNil(t, p.HTTPGet, what)
	require.Equal(t, path, p.HTTPGet.Path, what)
	require.Equal(t, listenPort, strconv.Itoa(containerPort(t, c, p.HTTPGet.Port)), "%s: port", what)
}

// checkDisruptionBudget checks that a Deployment has a PodDisruptionBudget
// that selects its pods and no other workload's, and lets a drain evict at
// least one of them.
func checkDisruptionBudget(t *testing.T, m manifests, d workload, all []workload) {
	t.Helper()
	var found []string
	for _, name := range m.names("PodDisruptionBudget") {
		var pdb struct {
			Spec struct {
				Selector       labelSelector `yaml:"selector"`
				MaxUnavailable any           `yaml:"maxUnavailable"`
				MinAvailable   any           `yaml:"minAvailable"`
			} `yaml:"spec"`
		}
		m.decode(t, "PodDisruptionBudget", name, &pdb)
		if !isSubset(pdb.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
			continue
		}
		found = append(found, name)
		for _, other := range all {
			if other.Metadata.Name != d.Metadata.Name {
				require.False(t, isSubset(pdb.Spec.Selector.MatchLabels, other.Spec.Template.Metadata.Labels),
					"PodDisruptionBudget %s also selects the pods of %s", name, other.Metadata.Name)
			}
		}
		replicas := 1
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		switch {
		case pdb.Spec.MaxUnavailable != nil:
			n, isInt := pdb.Spec.MaxUnavailable.(int)
			pct, isPct := pdb.Spec.MaxUnavailable.(string)
			require.True(t, (isInt && n >= 1) || (isPct && pct != "0%"), "PodDisruptionBudget %s: maxUnavailable %v blocks every drain", name, pdb.Spec.MaxUnavailable)
		case pdb.Spec.MinAvailable != nil:
			n, ok := pdb.Spec.MinAvailable.(int)
			require.True(t, ok && n < replicas, "PodDisruptionBudget %s: minAvailable %v of %d replicas blocks every drain", name, pdb.Spec.MinAvailable, replicas)
		default:
			t.Fatalf("PodDisruptionBudget %s sets neither maxUnavailable nor minAvailable", name)
		}
	}
	require.Len(t, found, 1, "Deployment %s: one PodDisruptionBudget selects its pods", d.Metadata.Name)
}

// checkServices checks that each Service selects exactly one workload's pods
// and targets a port its container declares.
func checkServices(t *testing.T, m manifests, all ...workload) {
	t.Helper()
	for _, name := range m.names("Service") {
		var svc struct {
			Spec struct {
				Selector map[string]string `yaml:"selector"`
				Ports    []struct {
					TargetPort any `yaml:"targetPort"`
				} `yaml:"ports"`
			} `yaml:"spec"`
		}
		m.decode(t, "Service", name, &svc)
		var selected []workload
		for _, w := range all {
			if isSubset(svc.Spec.Selector, w.Spec.Template.Metadata.Labels) {
				selected = append(selected, w)
			}
		}
		require.Len(t, selected, 1, "Service %s selects the pods of one workload", name)
		for _, p := range svc.Spec.Ports {
			containerPort(t, mainContainer(t, selected[0]), p.TargetPort)
		}
	}
}

// checkAutoscaling checks the ScaledObject: it scales the worker Deployment,
// keeps at least one worker (River's leader runs the maintenance jobs) and
// asks Prometheus for metrics the service exports.
func checkAutoscaling(t *testing.T, m manifests, workers workload) {
	t.Helper()
	require.Len(t, m.names("ScaledObject"), 1)
	require.Empty(t, m.names("HorizontalPodAutoscaler"), "KEDA makes the HPA")
	so := m.scaledObject(t, m.names("ScaledObject")[0])
	require.Equal(t, "Deployment", cmp(so.Spec.ScaleTargetRef.Kind, "Deployment"))
	require.Equal(t, workers.Metadata.Name, so.Spec.ScaleTargetRef.Name)
	require.NotNil(t, so.Spec.MinReplicaCount)
	require.GreaterOrEqual(t, *so.Spec.MinReplicaCount, 1, "River's leader runs the maintenance jobs: never scale workers to zero")
	require.NotNil(t, so.Spec.MaxReplicaCount)
	require.GreaterOrEqual(t, *so.Spec.MaxReplicaCount, *so.Spec.MinReplicaCount)
	require.LessOrEqual(t, *so.Spec.MaxReplicaCount, 20, "each worker holds up to 20 Postgres connections")
	if so.Spec.Fallback != nil {
		require.GreaterOrEqual(t, so.Spec.Fallback.Replicas, *so.Spec.MinReplicaCount)
	}

	exported := queueMetricNames(t)
	require.NotEmpty(t, so.Spec.Triggers)
	for _, tr := range so.Spec.Triggers {
		require.Equal(t, "prometheus", tr.Type)
		query := tr.Metadata["query"]
		names := regexp.MustCompile(`\bbpc_[a-z0-9_]+`).FindAllString(query, -1)
		require.NotEmpty(t, names, "the query %q names no metric of the service", query)
		for _, n := range names {
			require.Contains(t, exported, n, "the query %q names a metric the service does not export", query)
		}
		threshold, err := strconv.ParseFloat(tr.Metadata["threshold"], 64)
		require.NoError(t, err, "threshold")
		require.Greater(t, threshold, 0.0)
		require.NotEmpty(t, tr.Metadata["serverAddress"])
	}
}

// checkServiceMonitor checks that Prometheus scrapes /v1/metrics of the api
// and worker Services with the platform token from the Secret.
func checkServiceMonitor(t *testing.T, m manifests) {
	t.Helper()
	require.Len(t, m.names("ServiceMonitor"), 1)
	var sm struct {
		Spec struct {
			Selector  labelSelector `yaml:"selector"`
			Endpoints []struct {
				Port          string `yaml:"port"`
				Path          string `yaml:"path"`
				Authorization struct {
					Type        string    `yaml:"type"`
					Credentials secretRef `yaml:"credentials"`
				} `yaml:"authorization"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	m.decode(t, "ServiceMonitor", m.names("ServiceMonitor")[0], &sm)
	require.Len(t, sm.Spec.Endpoints, 1)
	ep := sm.Spec.Endpoints[0]
	require.Equal(t, "/v1/metrics", ep.Path)
	require.Equal(t, "Bearer", ep.Authorization.Type)
	require.Equal(t, secretRef{Name: secretName, Key: "BPC_ADMIN_TOKEN"}, ep.Authorization.Credentials)
	for _, name := range []string{"bpc-api", "bpc-worker"} {
		var svc struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				Ports []struct {
					Name string `yaml:"name"`
				} `yaml:"ports"`
			} `yaml:"spec"`
		}
		m.decode(t, "Service", name, &svc)
		require.True(t, isSubset(sm.Spec.Selector.MatchLabels, svc.Metadata.Labels), "the ServiceMonitor selects Service %s", name)
		require.True(t, slices.ContainsFunc(svc.Spec.Ports, func(p struct {
			Name string `yaml:"name"`
		}) bool {
			return p.Name == ep.Port
		}), "Service %s has the port %q the ServiceMonitor scrapes", name, ep.Port)
	}
}

// queueMetricNames returns the names of the metrics the queue collector
// exports, from its descriptions.
func queueMetricNames(t *testing.T) []string {
	t.Helper()
	ch := make(chan *prometheus.Desc, 16)
	api.NewQueueCollector(nil, nil).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var names []string
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		require.NotNil(t, m, "%s", d)
		names = append(names, m[1])
	}
	require.Contains(t, names, "bpc_queue_depth")
	return names
}

// serveConfig returns the configuration `bpc serve` loads from a
// container's environment, and that environment. Every variable set must
// be one LoadConfig reads: a misspelt name would be ignored silently.
func serveConfig(t *testing.T, m manifests, c container) (service.Config, map[string]string) {
	t.Helper()
	env := containerEnv(t, m, c)
	read := map[string]bool{}
	getenv := func(k string) string {
		read[k] = true
		return env[k]
	}
	cfg, err := service.LoadConfig(getenv)
	require.NoError(t, err, "container %s: its environment is not a valid configuration", c.Name)
	// What bpc doctor checks of a production run's signing variables.
	require.NoError(t, service.CheckSigningConfig(getenv), "container %s", c.Name)
	for k := range env {
		require.True(t, read[k], "container %s sets %s, which the service does not read", c.Name, k)
	}
	return cfg, env
}

// toolConfig is serveConfig for `bpc migrate`.
func toolConfig(t *testing.T, m manifests, c container) (service.Config, error) {
	t.Helper()
	env := containerEnv(t, m, c)
	read := map[string]bool{}
	cfg, err := service.ToolConfig(func(k string) string {
		read[k] = true
		return env[k]
	})
	for k := range env {
		require.True(t, read[k], "container %s sets %s, which bpc migrate does not read", c.Name, k)
	}
	return cfg, err
}

// containerEnv resolves a container's environment: ConfigMaps of the build
// (envFrom), literal values, and the Secret's keys as stand-ins.
func containerEnv(t *testing.T, m manifests, c container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		require.NotNil(t, from.ConfigMapRef, "container %s: envFrom only from ConfigMaps (secrets are named one by one)", c.Name)
		var cm struct {
			Data map[string]string `yaml:"data"`
		}
		m.decode(t, "ConfigMap", from.ConfigMapRef.Name, &cm)
		maps.Copy(env, cm.Data)
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			require.Equal(t, secretName, ref.Name, "container %s: %s", c.Name, e.Name)
			value, ok := secretKeys[ref.Key]
			require.True(t, ok, "container %s: %s reads the key %s, which the README does not list", c.Name, e.Name, ref.Key)
			env[e.Name] = value
		default:
			t.Fatalf("container %s: %s is set from neither a value nor the Secret", c.Name, e.Name)
		}
	}
	return env
}

func mainContainer(t *testing.T, w workload) container {
	t.Helper()
	require.Len(t, w.Spec.Template.Spec.Containers, 1, "%s runs one container", w.Metadata.Name)
	return w.Spec.Template.Spec.Containers[0]
}

// containerPort resolves a probe's or Service's port, a number or a port
// name, to a port the container declares.
func containerPort(t *testing.T, c container, port any) int {
	t.Helper()
	for _, p := range c.Ports {
		if port == p.Name || port == p.ContainerPort {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s declares no port %v", c.Name, port)
	return 0
}

func preStopSleep(c container) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	return time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

// quantity parses the Kubernetes quantities the manifests use (cores,
// millicores, binary-suffixed bytes) into one comparable unit.
func quantity(t *testing.T, q string) float64 {
	t.Helper()
	units := []struct {
		suffix string
		factor float64
	}{{"m", 1e-3}, {"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"", 1}}
	for _, u := range units {
		if s, ok := strings.CutSuffix(q, u.suffix); ok {
			n, err := strconv.ParseFloat(s, 64)
			require.NoError(t, err, "quantity %q", q)
			return n * u.factor
		}
	}
	panic("unreachable: the empty suffix matches")
}

func isSubset(sub, set map[string]string) bool {
	if len(sub) == 0 {
		return false
	}
	for k, v := range sub {
		if set[k] != v {
			return false
		}
	}
	return true
}

// cmpOr returns a if set, else b (a container's setting over its pod's).
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func cmp(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// manifests is the output of one kustomize build.
type manifests struct {
	objects []object
	yaml    map[string][]byte // by "Kind/name"
}

// object is what every manifest has.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
}

// kustomizeMu serialises kustomize builds: two at once race on state
// inside kustomize's api (seen by the race detector on a loaded machine).
var kustomizeMu sync.Mutex

// build runs kustomize on dir, as `kubectl kustomize dir` does.
func build(t *testing.T, dir string) manifests {
	t.Helper()
	kustomizeMu.Lock()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	kustomizeMu.Unlock()
	require.NoError(t, err, "kustomize build %s", dir)
	m := manifests{yaml: map[string][]byte{}}
	for _, r := range res.Resources() {
		y, err := r.AsYAML()
		require.NoError(t, err)
		var o object
		require.NoError(t, yaml.Unmarshal(y, &o))
		key := o.Kind + "/" + o.Metadata.Name
		require.NotContains(t, m.yaml, key, "two objects %s", key)
		m.objects = append(m.objects, o)
		m.yaml[key] = y
	}
	return m
}

// names returns the names of the objects of a kind, sorted.
func (m manifests) names(kind string) []string {
	var names []string
	for _, o := range m.objects {
		if o.Kind == kind {
			names = append(names, o.Metadata.Name)
		}
	}
	slices.Sort(names)
	return names
}

// decode decodes the object kind/name into v, failing if there is none.
func (m manifests) decode(t *testing.T, kind, name string, v any) {
	t.Helper()
	y, ok := m.yaml[kind+"/"+name]
	require.True(t, ok, "no %s %s in %s", kind, name, slices.Collect(maps.Keys(m.yaml)))
	require.NoError(t, yaml.Unmarshal(y, v), "%s %s", kind, name)
}

func (m manifests) deployment(t *testing.T, name string) workload {
	t.Helper()
	var w workload
	m.decode(t, "Deployment", name, &w)
	return w
}

func (m manifests) scaledObject(t *testing.T, name string) scaledObject {
	t.Helper()
	var so scaledObject
	m.decode(t, "ScaledObject", name, &so)
	return so
}

// workload is a Deployment or a Job, as far as the checks read them.
type workload struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas     *int          `yaml:"replicas"`
		BackoffLimit *int          `yaml:"backoffLimit"`
		Selector     labelSelector `yaml:"selector"`
		Template     struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type podSpec struct {
	RestartPolicy                 string           `yaml:"restartPolicy"`
	TerminationGracePeriodSeconds *int64           `yaml:"terminationGracePeriodSeconds"`
	ServiceAccountName            string           `yaml:"serviceAccountName"`
	SecurityContext               *securityContext `yaml:"securityContext"`
	InitContainers                []container      `yaml:"initContainers"`
	Containers                    []container      `yaml:"containers"`
	Volumes                       []struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
		} `yaml:"persistentVolumeClaim"`
	} `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				secretRef `yaml:",inline"`
				Optional  bool `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *securityContext `yaml:"securityContext"`
	VolumeMounts    []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type secretRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

// securityContext holds the fields of a pod's and a container's security
// context the checks read.
type securityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	RunAsUser                *int  `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	Privileged               *bool `yaml:"privileged"`
	Capabilities             *struct {
		Drop []string `yaml:"drop"`
		Add  []string `yaml:"add"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type scaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicaCount *int `yaml:"minReplicaCount"`
		MaxReplicaCount *int `yaml:"maxReplicaCount"`
		Fallback        *struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"fallback"`
		Triggers []struct {
			Type     string            `yaml:"type"`
			Metadata map[string]string `yaml:"metadata"`
		} `yaml:"triggers"`
	} `yaml:"spec"`
}
