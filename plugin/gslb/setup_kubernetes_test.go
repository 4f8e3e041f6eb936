package gslb

import (
	"reflect"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseKubernetesOptions(t *testing.T) {
	tests := []struct {
		name    string
		lines   string
		want    config.KubernetesOptions
		wantErr string
	}{
		{name: "none: in-cluster, every namespace", lines: "enable_txt", want: config.KubernetesOptions{}},
		{name: "kubeconfig, relative to the root", lines: "kubeconfig kube/config", want: config.KubernetesOptions{Kubeconfig: "/etc/meridian/kube/config"}},
		{name: "kubeconfig, absolute", lines: "kubeconfig /var/run/kubeconfig", want: config.KubernetesOptions{Kubeconfig: "/var/run/kubeconfig"}},
		{name: "namespaces, repeated", lines: "kubernetes_namespaces shop web\n kubernetes_namespaces shop api",
			want: config.KubernetesOptions{Namespaces: []string{"shop", "web", "api"}}},

		{name: "kubernetes, bare", lines: "kubernetes", want: config.KubernetesOptions{On: true}},
		{name: "k8gb with the other sites", lines: "k8gb eu us eu", want: config.KubernetesOptions{K8gb: true, K8gbSites: []string{"eu", "us"}}},
		{name: "k8gb alone", lines: "k8gb", want: config.KubernetesOptions{K8gb: true}},
		{name: "istio, default URL and interval", lines: "istio_sync_check",
			want: config.KubernetesOptions{IstioSyncURL: config.DefaultIstioSyncURL, IstioSyncInterval: config.DefaultIstioSyncInterval}},
		{name: "istio, a URL and an interval first", lines: "istio_sync_interval 3s\n istio_sync_check http://127.0.0.1:15014/debug/syncz",
			want: config.KubernetesOptions{IstioSyncURL: "http://127.0.0.1:15014/debug/syncz", IstioSyncInterval: 3 * time.Second}},

		{name: "k8gb bad site", lines: "k8gb EU_1", wantErr: `k8gb: site "EU_1"`},
		{name: "istio bad URL", lines: "istio_sync_check istiod:15014", wantErr: `istio_sync_check: "istiod:15014" is not an http or https URL`},
		{name: "istio two URLs", lines: "istio_sync_check http://a http://b", wantErr: "istio_sync_check: want at most one URL, got 2 arguments"},
		{name: "istio interval too short", lines: "istio_sync_interval 100ms", wantErr: "istio_sync_interval: 100ms is shorter than 1s"},
		{name: "kubeconfig arity", lines: "kubeconfig", wantErr: "Testfile:3 - Error during parsing: kubeconfig: want one argument, got 0"},
		{name: "no namespace", lines: "kubernetes_namespaces", wantErr: "Testfile:3 - Error during parsing: kubernetes_namespaces: want at least one NAMESPACE"},
		{name: "bad namespace", lines: "kubernetes_namespaces Shop", wantErr: `kubernetes_namespaces: namespace "Shop": a namespace name has lower-case letters, digits and hyphens only`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockPortWant(t, "gslb {\n zone example.org. a.yml\n "+tt.lines+"\n}", nil, "/etc/meridian", 0, tt.wantErr)
			if ok && !reflect.DeepEqual(b.Options.Kubernetes, tt.want) {
				t.Fatalf("kubernetes options %+v\nwant %+v", b.Options.Kubernetes, tt.want)
			}
		})
	}
}
