package testutil

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"
)

// TestKube runs a real kube-apiserver and etcd and round-trips what a Kubernetes source reads:
// a LoadBalancer Service with the ingress address its status reports, and an EndpointSlice with
// a ready and a not-ready endpoint.
func TestKube(t *testing.T) {
	for _, binary := range []func() (string, error){EtcdBinary, KubeAPIServerBinary} {
		if _, err := binary(); err != nil { // a first build is not start-up time
			t.Fatal(err)
		}
	}
	start := time.Now()
	k := StartKube(t)
	t.Logf("etcd and kube-apiserver %s ready in %s", KubeVersion, time.Since(start))

	const ns = "gslb"
	k.Apply(t, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	meta := map[string]any{"name": "web", "namespace": ns}
	lbStatus := map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "192.0.2.10"}}}}
	// The status in the main resource is ignored: only the status subresource sets it.
	k.Apply(t, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta,
		"spec":   map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{"port": 80, "protocol": "TCP"}}},
		"status": lbStatus})
	var svc struct {
		Spec   struct{ Type string }
		Status struct {
			LoadBalancer struct{ Ingress []struct{ IP string } }
		}
	}
	decode(t, k.Get(t, "/api/v1/namespaces/gslb/services/web"), &svc)
	if svc.Spec.Type != "LoadBalancer" || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("service after apply: %+v, want a LoadBalancer without ingress", svc)
	}
	k.ApplyStatus(t, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta, "status": lbStatus})
	decode(t, k.Get(t, "/api/v1/namespaces/gslb/services/web"), &svc)
	if ing := svc.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != "192.0.2.10" {
		t.Fatalf("service ingress after the status apply: %+v, want 192.0.2.10", ing)
	}

	k.Apply(t, map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": "web-1", "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": "web"}},
		"addressType": "IPv4",
		"ports":       []any{map[string]any{"name": "http", "port": 8080, "protocol": "TCP"}},
		"endpoints": []any{
			map[string]any{"addresses": []any{"10.1.0.1"}, "conditions": map[string]any{"ready": true}},
			map[string]any{"addresses": []any{"10.1.0.2"}, "conditions": map[string]any{"ready": false}},
		}})
	var epSlices struct {
		Items []struct {
			Endpoints []struct {
				Addresses  []string
				Conditions struct{ Ready *bool }
			}
		}
	}
	decode(t, k.Get(t, "/apis/discovery.k8s.io/v1/namespaces/gslb/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb"), &epSlices)
	ready := map[string]bool{}
	for _, s := range epSlices.Items {
		for _, e := range s.Endpoints {
			if len(e.Addresses) != 1 || e.Conditions.Ready == nil {
				t.Fatalf("endpoint %+v: want one address and a readiness", e)
			}
			ready[e.Addresses[0]] = *e.Conditions.Ready
		}
	}
	if len(ready) != 2 || !ready["10.1.0.1"] || ready["10.1.0.2"] {
		t.Fatalf("endpoint readiness %v, want 10.1.0.1 ready and 10.1.0.2 not", ready)
	}

	t.Run("kubeconfig", func(t *testing.T) { testKubeconfig(t, k) })
	t.Run("authentication", func(t *testing.T) {
		stranger := *k
		stranger.Token = "not-the-token"
		if status, _, err := stranger.do(http.MethodGet, "/api/v1/namespaces", "", nil); err != nil || status != http.StatusUnauthorized {
			t.Fatalf("a wrong token: %d %v, want 401", status, err)
		}
	})
	t.Run("watch list", func(t *testing.T) { testWatchList(t, k) })
	t.Run("stop", func(t *testing.T) {
		k.Stop()
		if _, _, err := k.do(http.MethodGet, "/readyz", "", nil); err == nil {
			t.Fatal("the API server still answers after Stop")
		}
	})
}

// testWatchList asks for a streaming list, as client-go's informers do by default: the
// server sends the objects as ADDED events, then a bookmark that ends the initial events (and
// maybe progress bookmarks, which say nothing here). It does so only on an etcd with
// RequestWatchProgress (3.4.31, 3.5.13 and later).
func testWatchList(t *testing.T, k *Kube) {
	body := k.Get(t, "/api/v1/namespaces/gslb/services?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"+
		"&resourceVersionMatch=NotOlderThan&timeoutSeconds=1")
	var events []string
	for dec := json.NewDecoder(bytes.NewReader(body)); dec.More(); {
		var e struct {
			Type   string
			Object struct {
				Metadata struct {
					Name        string
					Annotations map[string]string
				}
			}
		}
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("watch events %s: %v", body, err)
		}
		if e.Type == "BOOKMARK" {
			if e.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
				continue // a progress bookmark, which the server may send at any time
			}
			e.Object.Metadata.Name = "initial-events-end"
		}
		events = append(events, e.Type+" "+e.Object.Metadata.Name)
	}
	if want := []string{"ADDED web", "BOOKMARK initial-events-end"}; !slices.Equal(events, want) {
		t.Fatalf("watch list events %q, want %q: %s", events, want, body)
	}
}

// testKubeconfig reads the server, CA and token from k's kubeconfig and reads the API with them.
func testKubeconfig(t *testing.T, k *Kube) {
	data, err := os.ReadFile(k.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		CurrentContext string `json:"current-context"`
		Clusters       []struct {
			Cluster struct {
				Server string
				CA     string `json:"certificate-authority-data"`
			}
		}
		Users []struct{ User struct{ Token string } }
	}
	decode(t, data, &config)
	if config.CurrentContext == "" || len(config.Clusters) != 1 || len(config.Users) != 1 {
		t.Fatalf("kubeconfig %s: want a current context, one cluster and one user", data)
	}
	ca, err := base64.StdEncoding.DecodeString(config.Clusters[0].Cluster.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("kubeconfig CA %q is no PEM certificate", ca)
	}
	req, err := http.NewRequest(http.MethodGet, config.Clusters[0].Cluster.Server+"/api/v1/namespaces/gslb", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+config.Users[0].User.Token)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("with the kubeconfig: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the kubeconfig: GET namespace: %s", resp.Status)
	}
}

// decode unmarshals data into v, failing the test when it is not JSON of that shape.
func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}
