package testutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// GatewayAPIVersion is the Gateway API release whose standard-channel CRDs InstallGatewayAPI
// installs, read from the published Go module sigs.k8s.io/gateway-api (its
// config/crd/standard/*.yaml), which the tests download into the module cache rather than
// require in go.mod.
const GatewayAPIVersion = "v1.4.1"

// crdServedTimeout bounds the wait for the API server to serve the kinds of CRDs just applied.
const crdServedTimeout = 30 * time.Second

// gatewayAPIDir returns the directory of sigs.k8s.io/gateway-api@GatewayAPIVersion in the
// module cache, downloading it the first time (`go mod download`, run outside any module so
// that no go.mod or go.sum changes). It is computed once per test process.
var gatewayAPIDir = sync.OnceValues(func() (string, error) {
	outside, err := os.MkdirTemp("", "meridian-gateway-api")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(outside)
	out, err := runGo(outside, nil, "mod", "download", "-json", "sigs.k8s.io/gateway-api@"+GatewayAPIVersion)
	if err != nil {
		return "", err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download sigs.k8s.io/gateway-api: %w", err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download sigs.k8s.io/gateway-api: no directory: %s", mod.Error)
	}
	return mod.Dir, nil
})

// InstallGatewayAPI installs the Gateway API's standard-channel CRDs of GatewayAPIVersion
// (GatewayClass, Gateway, HTTPRoute, GRPCRoute, ReferenceGrant, BackendTLSPolicy) into k, and
// waits until the server serves each of their kinds, gateway.networking.k8s.io/v1 among them.
func InstallGatewayAPI(t testing.TB, k *Kube) {
	t.Helper()
	dir, err := gatewayAPIDir()
	if err != nil {
		t.Fatalf("the Gateway API %s: %v", GatewayAPIVersion, err)
	}
	names := installCRDs(t, k, filepath.Join(dir, "config", "crd", "standard"))
	for _, want := range []string{"gatewayclasses", "gateways", "httproutes"} {
		if !slices.Contains(names, want+".gateway.networking.k8s.io") {
			t.Fatalf("the Gateway API %s's standard CRDs have no %s: %v", GatewayAPIVersion, want, names)
		}
	}
}

// InstallGslbCRDs installs the CRDs of k8gb's Gslb in dir (the chart's
// deploy/helm/meridian/crds), which must define it in both its groups, k8gb.io and the legacy
// k8gb.absa.oss, and waits until the server serves both.
func InstallGslbCRDs(t testing.TB, k *Kube, dir string) {
	t.Helper()
	names := installCRDs(t, k, dir)
	for _, want := range []string{"gslbs.k8gb.io", "gslbs.k8gb.absa.oss"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s defines no CRD %s: %v", dir, want, names)
		}
	}
}

// installCRDs applies every object of the YAML files (one or more documents each) in dir, and
// waits until the discovery document of each served version of each CustomResourceDefinition
// among them lists its resource. It returns the names of those definitions.
func installCRDs(t testing.TB, k *Kube, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("CRDs in %s: no YAML files (%v)", dir, err)
	}
	var names []string
	wait := map[string][]string{} // group version path -> resources
	for _, f := range files {
		objs, err := yamlObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			k.Apply(t, obj)
			crd, err := crdOf(obj)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if crd.Metadata.Name == "" {
				continue // not a CustomResourceDefinition
			}
			names = append(names, crd.Metadata.Name)
			for _, v := range crd.Spec.Versions {
				if v.Served {
					gv := "/apis/" + crd.Spec.Group + "/" + v.Name
					wait[gv] = append(wait[gv], crd.Spec.Names.Plural)
				}
			}
		}
	}
	for gv, resources := range wait {
		Eventually(t, crdServedTimeout, func() bool { return k.servesAll(gv, resources) },
			"%s does not serve %v", gv, resources)
	}
	return names
}

// crd is what installCRDs reads of a CustomResourceDefinition.
type crd struct {
	Metadata struct{ Name string }
	Spec     struct {
		Group string
		Names struct{ Plural string }
		// Versions are the definition's versions, those the server serves and the others.
		Versions []struct {
			Name   string
			Served bool
		}
	}
}

// crdOf returns the definition obj is, or a zero crd when obj is of another kind.
func crdOf(obj map[string]any) (crd, error) {
	var c crd
	if obj["apiVersion"] != "apiextensions.k8s.io/v1" || obj["kind"] != "CustomResourceDefinition" {
		return c, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("a CustomResourceDefinition: %w", err)
	}
	if c.Metadata.Name == "" || c.Spec.Group == "" || c.Spec.Names.Plural == "" {
		return c, fmt.Errorf("a CustomResourceDefinition without a name, group or plural: %s", data)
	}
	return c, nil
}

// servesAll reports whether the discovery document at path (/apis/GROUP/VERSION) lists every
// one of resources.
func (k *Kube) servesAll(path string, resources []string) bool {
	status, body, err := k.do(http.MethodGet, path, "", nil)
	if err != nil || status != http.StatusOK {
		return false
	}
	var list struct {
		Resources []struct{ Name string } `json:"resources"`
	}
	if json.Unmarshal(body, &list) != nil {
		return false
	}
	for _, want := range resources {
		if !slices.ContainsFunc(list.Resources, func(r struct{ Name string }) bool { return r.Name == want }) {
			return false
		}
	}
	return true
}

// yamlObjects returns the non-empty documents of the YAML file path, as objects that encode to
// JSON (for Kube.Apply).
func yamlObjects(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var objs []map[string]any
	for dec := yaml.NewDecoder(f); ; {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, len(objs)+1, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

// KubeGatewayClassName is the GatewayClass of the Gateways KubeGateway returns.
const KubeGatewayClassName = "meridian-test"

// KubeGatewayClass returns the cluster-scoped GatewayClass name, of the controller
// example.net/gateway-controller (nothing runs it: the tests write the Gateways' status).
func KubeGatewayClass(name string) map[string]any {
	return map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"controllerName": "example.net/gateway-controller"},
	}
}

// kubeConditionTime is the lastTransitionTime of the conditions the builders write.
const kubeConditionTime = "2025-01-01T00:00:00Z"

// KubeGateway returns the Gateway name in namespace, of the GatewayClass KubeGatewayClassName,
// with one HTTP listener on port 80, and as its status what its controller would write once
// done: addresses (IP addresses, of type IPAddress, or host names, of type Hostname) in
// status.addresses, and the conditions Accepted and Programmed True (without an
// observedGeneration). Apply it with Kube.Apply, then Kube.ApplyStatus for the status;
// KubeGatewayProgrammed changes the Programmed condition.
func KubeGateway(namespace, name string, addresses ...string) map[string]any {
	addrs := []any{}
	for _, a := range addresses {
		typ := "Hostname"
		if _, err := netip.ParseAddr(a); err == nil {
			typ = "IPAddress"
		}
		addrs = append(addrs, map[string]any{"type": typ, "value": a})
	}
	return map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{"gatewayClassName": KubeGatewayClassName,
			"listeners": []any{map[string]any{"name": "http", "protocol": "HTTP", "port": 80}}},
		"status": map[string]any{"addresses": addrs, "conditions": []any{
			kubeCondition("Accepted", true, "Accepted", ""),
			kubeCondition("Programmed", true, "Programmed", ""),
		}},
	}
}

// KubeGatewayProgrammed sets the Programmed condition of gateway, a KubeGateway, to True
// (reason Programmed) or False (reason Pending), and returns gateway.
func KubeGatewayProgrammed(gateway map[string]any, programmed bool) map[string]any {
	conditions := gateway["status"].(map[string]any)["conditions"].([]any)
	for i, c := range conditions {
		if c.(map[string]any)["type"] == "Programmed" {
			reason, message := "Programmed", ""
			if !programmed {
				reason, message = "Pending", "waiting for the controller"
			}
			conditions[i] = kubeCondition("Programmed", programmed, reason, message)
		}
	}
	return gateway
}

// kubeCondition returns a status condition (metav1.Condition) of type typ.
func kubeCondition(typ string, status bool, reason, message string) map[string]any {
	s := "False"
	if status {
		s = "True"
	}
	return map[string]any{"type": typ, "status": s, "reason": reason, "message": message,
		"lastTransitionTime": kubeConditionTime}
}

// KubeHTTPRoute returns the HTTPRoute name in namespace, attached to the Gateway gateway of the
// same namespace, for hostnames (none: every host name of the Gateway's listeners), with one
// rule sending everything to services (port 80, as KubeService serves, an equal weight each).
func KubeHTTPRoute(namespace, name, gateway string, hostnames []string, services ...string) map[string]any {
	backends := []any{}
	for _, s := range services {
		backends = append(backends, map[string]any{"name": s, "port": 80})
	}
	spec := map[string]any{
		"parentRefs": []any{map[string]any{"name": gateway}},
		"rules":      []any{map[string]any{"backendRefs": backends}},
	}
	if len(hostnames) > 0 { // none: every host name of the Gateway's listeners
		spec["hostnames"] = hostnames
	}
	return map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}
}

// KubeIngress returns the Ingress (networking.k8s.io/v1) name in namespace with one rule per
// host of hosts, in host order ("" for a rule without a host, matching every host), sending
// the path /SERVICE (a Prefix) to each of the host's backend services, port 80 (KubeService's);
// and with ingress (IP addresses or host names) as its status.loadBalancer.ingress, the same
// shape as a Service's. Apply it with Kube.Apply, then Kube.ApplyStatus for the status, as an
// ingress controller would set it. The server refuses an Ingress without rules (no hosts).
func KubeIngress(namespace, name string, hosts map[string][]string, ingress ...string) map[string]any {
	rules := []any{}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		paths := []any{}
		for _, s := range hosts[h] {
			paths = append(paths, map[string]any{"path": "/" + s, "pathType": "Prefix",
				"backend": map[string]any{"service": map[string]any{"name": s, "port": map[string]any{"number": 80}}}})
		}
		rule := map[string]any{"http": map[string]any{"paths": paths}}
		if h != "" {
			rule["host"] = h
		}
		rules = append(rules, rule)
	}
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"rules": rules},
		"status":   KubeService(namespace, name, ingress...)["status"],
	}
}
