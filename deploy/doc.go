// Package deploy holds no code: it is where the deployment files live
// (Prometheus rules, the Grafana dashboard, the Kubernetes manifests under
// k8s/) and the tests that build the Kubernetes manifests with kustomize and
// check them against the service's configuration and metrics.
package deploy
