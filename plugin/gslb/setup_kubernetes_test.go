package gslb

import (
	"reflect"
	"testing"

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
