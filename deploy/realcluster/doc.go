// Package realcluster holds the tests of Meridian's Kubernetes deliverables on running pods:
// the image (`make image`) and the Helm chart in deploy/helm/meridian, installed into a real
// one-node cluster (testutil.StartCluster), with the chart's default values plus what each
// case needs. They run with `make test-k8s` (root, containerd); `go test ./...` skips them,
// saying so.
package realcluster
