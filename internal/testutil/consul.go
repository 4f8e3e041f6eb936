package testutil

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
)

// Consul is a loopback HTTP server that implements the one Consul endpoint Meridian calls,
// the catalog's GET /v1/catalog/service/<service> (with its tag filter), answering in Consul's
// format from instances the test registers.
//
// It stands in for a real agent because a real one could not be had within the test suite's
// budget: `consul agent -dev` built from its Go module (github.com/hashicorp/consul v1.22.0,
// through the module proxy, as a dependency of a small main module since the release's own
// replace directives point at nested modules its download lacks) was still compiling its
// dependencies after 17 minutes on the 2 cores of the development machine, against the few
// minutes a first-time CI run can spend on it.
type Consul struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string
	srv *http.Server
	l   net.Listener

	mu        sync.Mutex
	instances []consulInstance // in registration order
	index     int
}

// consulInstance is one registered instance of a service, on a node of its own.
type consulInstance struct {
	id, service, nodeAddr, addr string
	port                        int
	tags                        []string
	index                       int
}

// StartConsul serves the catalog endpoint on a free 127.0.0.1 port until the test ends.
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Consul{URL: "http://" + l.Addr().String(), l: l}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/catalog/service/{service}", c.service)
	c.srv = &http.Server{Handler: mux}
	go func() { _ = c.srv.Serve(l) }()
	t.Cleanup(c.Stop)
	return c
}

// Register adds (or replaces, by id) an instance of service on a node of its own: the node
// has nodeAddr, the instance addr (empty: the node's), port and tags.
func (c *Consul) Register(t testing.TB, id, service, nodeAddr, addr string, port int, tags ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index++
	c.instances = slices.DeleteFunc(c.instances, func(in consulInstance) bool { return in.id == id })
	c.instances = append(c.instances, consulInstance{id: id, service: service, nodeAddr: nodeAddr, addr: addr,
		port: port, tags: tags, index: c.index})
}

// Deregister removes the instance id.
func (c *Consul) Deregister(t testing.TB, id string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index++
	c.instances = slices.DeleteFunc(c.instances, func(in consulInstance) bool { return in.id == id })
}

// service answers GET /v1/catalog/service/<service>[?tag=TAG] as Consul does: a JSON array of
// the service's instances (empty for an unknown service), each with its node's fields.
func (c *Consul) service(w http.ResponseWriter, r *http.Request) {
	name, tag := r.PathValue("service"), r.URL.Query().Get("tag")
	c.mu.Lock()
	out := []map[string]any{}
	for _, in := range c.instances {
		if in.service != name || tag != "" && !slices.Contains(in.tags, tag) {
			continue
		}
		node := "node-" + in.id
		out = append(out, map[string]any{
			"ID": "", "Node": node, "Address": in.nodeAddr, "Datacenter": "dc1",
			"TaggedAddresses": map[string]string{"lan": in.nodeAddr}, "NodeMeta": map[string]string{},
			"ServiceKind": "", "ServiceID": in.id, "ServiceName": in.service,
			"ServiceTags": append([]string{}, in.tags...), "ServiceAddress": in.addr,
			"ServiceWeights": map[string]int{"Passing": 1, "Warning": 1}, "ServiceMeta": map[string]string{},
			"ServicePort": in.port, "ServiceEnableTagOverride": false,
			"CreateIndex": in.index, "ModifyIndex": in.index,
		})
	}
	index := c.index
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Consul-Index", strconv.Itoa(index))
	w.Header().Set("X-Consul-Knownleader", "true")
	_ = json.NewEncoder(w).Encode(out)
}

// Stop closes the server: its port refuses connections from then on.
func (c *Consul) Stop() {
	_ = c.srv.Close()
}
