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

// GatewayAPIVersion is the Gateway API release whose CRDs InstallGatewayAPI and
// InstallGatewayAPIExperimental install, read from the published Go module
// sigs.k8s.io/gateway-api (its config/crd/standard and config/crd/experimental), which the tests
// download into the module cache rather than require in go.mod. Its experimental channel
// serves the route versions k8gb reads: TLSRoute v1, v1alpha3 and v1alpha2, TCPRoute and
// UDPRoute v1alpha2.
const GatewayAPIVersion = "v1.5.1"

// IstioAPIVersion is the release of Istio's API module (istio.io/api) whose CRDs of
// VirtualService and Gateway InstallIstioCRDs installs (its kubernetes/customresourcedefinitions.gen.yaml).
const IstioAPIVersion = "v1.32.0"

// crdServedTimeout bounds the wait for the API server to serve the kinds of CRDs just applied.
const crdServedTimeout = 30 * time.Second

// moduleDirs caches moduleDir's answers, by module path and version.
var moduleDirs sync.Map

// moduleDir returns the directory of module@version in the module cache, downloading it the
// first time (`go mod download`, run outside any module so that no go.mod or go.sum changes).
func moduleDir(module, version string) (string, error) {
	key := module + "@" + version
	if dir, ok := moduleDirs.Load(key); ok {
		return dir.(string), nil
	}
	outside, err := os.MkdirTemp("", "meridian-module")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(outside)
	out, err := runGo(outside, nil, "mod", "download", "-json", key)
	if err != nil {
		return "", err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", key, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("go mod download %s: no directory: %s", key, mod.Error)
	}
	moduleDirs.Store(key, mod.Dir)
	return mod.Dir, nil
}

// InstallGatewayAPI installs the Gateway API's standard-channel CRDs of GatewayAPIVersion
// (GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, ReferenceGrant, BackendTLSPolicy) into
// k, and waits until the server serves each of their kinds, gateway.networking.k8s.io/v1 among
// them.
func InstallGatewayAPI(t testing.TB, k *Kube) {
	t.Helper()
	installGatewayAPI(t, k, "standard", "gatewayclasses", "gateways", "httproutes")
}

// InstallGatewayAPIExperimental installs the Gateway API's experimental-channel CRDs of
// GatewayAPIVersion (the standard kinds, TCPRoute, UDPRoute, and older versions of TLSRoute)
// into k, and waits until the server serves each of their kinds.
func InstallGatewayAPIExperimental(t testing.TB, k *Kube) {
	t.Helper()
	installGatewayAPI(t, k, "experimental", "gateways", "httproutes", "grpcroutes", "tlsroutes", "tcproutes", "udproutes")
}

// installGatewayAPI installs the CRDs of the Gateway API's channel, which must define the
// resources want.
func installGatewayAPI(t testing.TB, k *Kube, channel string, want ...string) {
	t.Helper()
	dir, err := moduleDir("sigs.k8s.io/gateway-api", GatewayAPIVersion)
	if err != nil {
		t.Fatalf("the Gateway API %s: %v", GatewayAPIVersion, err)
	}
	names := installCRDs(t, k, filepath.Join(dir, "config", "crd", channel), nil)
	for _, w := range want {
		if !slices.Contains(names, w+".gateway.networking.k8s.io") {
			t.Fatalf("the Gateway API %s's %s CRDs have no %s: %v", GatewayAPIVersion, channel, w, names)
		}
	}
}

// InstallIstioCRDs installs Istio's CRDs of VirtualService and Gateway (networking.istio.io)
// from Istio's API module at IstioAPIVersion into k, and waits until the server serves them.
func InstallIstioCRDs(t testing.TB, k *Kube) {
	t.Helper()
	dir, err := moduleDir("istio.io/api", IstioAPIVersion)
	if err != nil {
		t.Fatalf("Istio's API %s: %v", IstioAPIVersion, err)
	}
	want := []string{"virtualservices.networking.istio.io", "gateways.networking.istio.io"}
	names := installCRDs(t, k, filepath.Join(dir, "kubernetes"), func(c crd) bool { return slices.Contains(want, c.Metadata.Name) })
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Fatalf("Istio's API %s defines no CRD %s: %v", IstioAPIVersion, w, names)
		}
	}
}

// InstallGslbCRDs installs the CRDs of k8gb in dir (the chart's deploy/helm/meridian/crds),
// which must define its Gslb in both its groups, k8gb.io and the legacy k8gb.absa.oss, and its
// ZoneDelegation, and waits until the server serves them.
func InstallGslbCRDs(t testing.TB, k *Kube, dir string) {
	t.Helper()
	names := installCRDs(t, k, dir, nil)
	for _, want := range []string{"gslbs.k8gb.io", "gslbs.k8gb.absa.oss", "zonedelegations.k8gb.io"} {
		if !slices.Contains(names, want) {
			t.Fatalf("%s defines no CRD %s: %v", dir, want, names)
		}
	}
}

// installCRDs applies every object of the YAML files (one or more documents each) in dir (with
// only, those CustomResourceDefinitions only holds for), and waits until the discovery document
// of each served version of each CustomResourceDefinition among them lists its resource. It
// returns the names of those definitions.
func installCRDs(t testing.TB, k *Kube, dir string, only func(crd) bool) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("CRDs in %s: no YAML files (%v)", dir, err)
	}
	var names []string
	wait := map[string][]string{} // group version path -> resources
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" { // kustomize's list of the files, not an object
			continue
		}
		objs, err := yamlObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			crd, err := crdOf(obj)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if only != nil && !only(crd) {
				continue
			}
			k.Apply(t, obj)
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
	return KubeRoute("gateway.networking.k8s.io/v1", "HTTPRoute", namespace, name, gateway, hostnames, services...)
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
