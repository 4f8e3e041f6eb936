package testutil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ConsulVersion is the Consul release the tests run, built from its Go module.
const ConsulVersion = "v1.22.0"

var (
	consulOnce sync.Once
	consulBin  string
	consulErr  error
)

// ConsulBinary returns the path of a consul binary built from the github.com/hashicorp/consul
// module at ConsulVersion, through the Go module proxy. It is built once per machine into
// $HOME/.cache/meridian-test/consul-VERSION (the user cache directory), under a file lock so
// that test processes running in parallel build it once; the first build takes a few minutes.
// The module's own replace directives point at its nested modules, which a module download
// does not contain, so it is built as a dependency of a small main module instead, which takes
// the nested modules at the versions the release requires. The checksum database does not
// know those nested versions, so they are verified against go.sum only (GONOSUMDB). A failed
// build fails the test.
func ConsulBinary(t testing.TB) string {
	t.Helper()
	consulOnce.Do(func() { consulBin, consulErr = buildConsul() })
	if consulErr != nil {
		t.Fatalf("consul %s: %v", ConsulVersion, consulErr)
	}
	return consulBin
}

func buildConsul() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "meridian-test", "consul-"+ConsulVersion)
	bin := filepath.Join(dir, "consul")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module meridian-test/consul\n\ngo 1.25\n"), 0o644); err != nil {
		return "", err
	}
	env := append(os.Environ(), "GONOSUMDB=github.com/hashicorp/consul", "GOFLAGS=-mod=mod")
	for _, args := range [][]string{
		{"get", "github.com/hashicorp/consul@" + ConsulVersion},
		{"build", "-trimpath", "-o", bin + ".tmp", "github.com/hashicorp/consul"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, tail(out, 4000))
		}
	}
	return bin, os.Rename(bin+".tmp", bin)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Consul is a Consul agent in development mode (one server, state in memory) on loopback.
type Consul struct {
	// URL is the agent's HTTP API, http://127.0.0.1:PORT.
	URL  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

// StartConsul runs `consul agent -dev` bound to 127.0.0.1 with its HTTP API, serf and server
// ports on free loopback ports, and its DNS and gRPC listeners off. It is stopped when the
// test ends.
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	bin := ConsulBinary(t)
	var lastLogs string
	for attempt := 0; attempt < 3; attempt++ {
		port := func() string { return strconv.Itoa(FreePort(t)) }
		httpPort := port()
		c := &Consul{URL: "http://127.0.0.1:" + httpPort, logs: &syncBuffer{}, done: make(chan struct{})}
		c.cmd = exec.Command(bin, "agent", "-dev", "-bind", "127.0.0.1", "-client", "127.0.0.1",
			"-node", "meridian-test", "-log-level", "warn",
			"-http-port", httpPort, "-dns-port", "-1", "-grpc-port", "-1", "-grpc-tls-port", "-1",
			"-serf-lan-port", port(), "-serf-wan-port", port(), "-server-port", port())
		c.cmd.Dir = t.TempDir()
		c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
		if err := c.cmd.Start(); err != nil {
			t.Fatalf("start consul: %v", err)
		}
		go func() { _ = c.cmd.Wait(); close(c.done) }()
		if c.waitLeader(30 * time.Second) {
			t.Cleanup(c.Stop)
			return c
		}
		c.Stop()
		lastLogs = c.logs.String()
	}
	t.Fatalf("consul did not start:\n%s", lastLogs)
	return nil
}

// waitLeader polls the agent until it has elected itself leader, it exits, or timeout passes.
func (c *Consul) waitLeader(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return false
		default:
		}
		if resp, err := client.Get(c.URL + "/v1/status/leader"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && len(bytes.Trim(body, `"`+"\n")) > 0 {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// Register adds an instance of service to the catalog, on an external node of its own named
// after id: the node has nodeAddr, the instance addr (empty: the node's), port and tags.
func (c *Consul) Register(t testing.TB, id, service, nodeAddr, addr string, port int, tags ...string) {
	t.Helper()
	c.put(t, "/v1/catalog/register", map[string]any{
		"Node": "node-" + id, "Address": nodeAddr,
		"Service": map[string]any{"ID": id, "Service": service, "Address": addr, "Port": port, "Tags": tags},
	})
}

// Deregister removes the instance id that Register added, with its node.
func (c *Consul) Deregister(t testing.TB, id string) {
	t.Helper()
	c.put(t, "/v1/catalog/deregister", map[string]any{"Node": "node-" + id})
}

func (c *Consul) put(t testing.TB, path string, body any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, c.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("consul %s: %v", path, err)
	}
	defer resp.Body.Close()
	if out, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(out) != "true" {
		t.Fatalf("consul %s: %s %s", path, resp.Status, out)
	}
}

// Stop stops the agent and waits for it to exit.
func (c *Consul) Stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}
