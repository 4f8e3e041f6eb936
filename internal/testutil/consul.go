package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// ConsulVersion is the release of HashiCorp Consul the tests run, built from its Go module.
const ConsulVersion = "v1.22.0"

// consulStartTimeout bounds a dev agent's start, leader election included.
const consulStartTimeout = 30 * time.Second

// Consul is a real `consul agent -dev` on free loopback ports: one server, its catalog in
// memory, no DNS or gRPC listener, and no update check.
type Consul struct {
	// URL is the agent's HTTP API, http://127.0.0.1:PORT.
	URL  string
	proc *process

	mu    sync.Mutex
	nodes map[string]string // the node of each registered instance, by instance id
}

// StartConsul starts a Consul dev agent for the test and waits until it has elected itself
// leader. The binary is ConsulBinary's: the first test run on a machine builds it (about ten
// minutes on two cores; `make test` does it before the tests start).
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	bin, err := ConsulBinary()
	if err != nil {
		t.Fatalf("consul: %v", err)
	}
	ports := FreePorts(t, 4)
	httpPort, serfLAN, serfWAN, server := ports[0], ports[1], ports[2], ports[3]
	cmd := exec.Command(bin, "agent", "-dev", "-bind=127.0.0.1", "-client=127.0.0.1",
		"-node=meridian-test", "-http-port="+strconv.Itoa(httpPort), "-dns-port=-1", "-grpc-port=-1",
		"-grpc-tls-port=-1", "-serf-lan-port="+strconv.Itoa(serfLAN),
		"-serf-wan-port="+strconv.Itoa(serfWAN), "-server-port="+strconv.Itoa(server),
		"-log-level=error", "-hcl=disable_update_check = true")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	c := &Consul{URL: fmt.Sprintf("http://127.0.0.1:%d", httpPort), proc: startProcess(t, cmd), nodes: make(map[string]string)}
	c.proc.waitFor(t, "consul agent at "+c.URL+" (electing itself leader)", consulStartTimeout, c.hasLeader)
	return c
}

// hasLeader reports whether the agent answers and knows its leader.
func (c *Consul) hasLeader() bool {
	resp, err := http.Get(c.URL + "/v1/status/leader")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var leader string
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&leader) == nil && leader != ""
}

// Register registers (or replaces, by id) an instance of service in the catalog, on a node of
// its own: the node has nodeAddr, the instance addr (empty: the node's), port and tags.
func (c *Consul) Register(t testing.TB, id, service, nodeAddr, addr string, port int, tags ...string) {
	t.Helper()
	node := "node-" + id
	c.put(t, "/v1/catalog/register", map[string]any{
		"Node": node, "Address": nodeAddr,
		"Service": map[string]any{"ID": id, "Service": service, "Address": addr, "Port": port, "Tags": tags},
	})
	c.mu.Lock()
	c.nodes[id] = node
	c.mu.Unlock()
}

// Deregister removes the instance id, and its node.
func (c *Consul) Deregister(t testing.TB, id string) {
	t.Helper()
	c.mu.Lock()
	node := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	c.put(t, "/v1/catalog/deregister", map[string]any{"Node": node})
}

// put sends body to the agent's path, failing the test unless the agent accepts it.
func (c *Consul) put(t testing.TB, path string, body any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, c.URL+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("consul %s: %v", path, err)
	}
	defer resp.Body.Close()
	if out, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("consul %s: %s %s", path, resp.Status, out)
	}
}

// Stop ends the agent: its port refuses connections from then on. It may be called more than
// once.
func (c *Consul) Stop() { c.proc.stop() }

// ConsulBinary returns the path of a consul binary of ConsulVersion: $MERIDIAN_CONSUL when set,
// else the one cached under the user's cache directory, which it builds there first when it is
// missing, from the module github.com/hashicorp/consul through the Go module proxy. Builds of
// concurrent test processes wait for each other.
func ConsulBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_CONSUL"); bin != "" {
		return bin, nil
	}
	return cachedBinary("consul", ConsulVersion, buildConsul)
}

// buildConsul builds consul into bin, in a module of its own under dir that requires the
// release. The release's go.mod replaces its nested modules (api, sdk, ...) with directories of
// its repository, which a module download does not hold: as a dependency those replacements do
// not apply, and the nested modules come from the proxy at the versions it requires. Their
// checksums are not in the checksum database, hence GONOSUMDB.
func buildConsul(dir, bin string) error {
	gomod := "module meridian.test/consul\n\ngo 1.26\n\nrequire github.com/hashicorp/consul " + ConsulVersion + "\n"
	return buildGoMain(dir, bin, "github.com/hashicorp/consul", gomod, []string{"GONOSUMDB=github.com/hashicorp/*"})
}
