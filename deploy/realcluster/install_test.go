package realcluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// testInstall: `helm install --wait` with the chart's default values. Both pods become Ready
// through the chart's readiness probe, and the kubelet's liveness probe passes on them; the
// DNS Service answers the default record over UDP and TCP, the admin API's Service answers
// with the release's token (and refuses without), and `meridian ctl status` runs in a pod.
func (e *env) testInstall(t *testing.T) {
	const ns, release, fullname = "install", "gslb", "gslb-meridian"
	took := e.install(t, ns, release, "")
	t.Logf("helm install --wait: %s", took.Round(time.Millisecond))

	pods := e.releasePods(t, ns, release)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want the default 2 replicas", len(pods))
	}
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if !p.ready() || c.Image != e.repo+":"+e.tag || len(c.ReadinessProbe) == 0 || len(c.LivenessProbe) == 0 {
			t.Errorf("pod %s: ready %t, image %s, probes %s %s; want ready, %s:%s, both probes",
				p.Metadata.Name, p.ready(), c.Image, c.ReadinessProbe, c.LivenessProbe, e.repo, e.tag)
		}
	}

	// kube-proxy programs the Service's new endpoints within a second or two of the pods
	// turning ready, after helm returned.
	dnsIP := e.serviceIP(t, ns, fullname)
	took = waitAnswer(t, []string{dnsIP}, "www.example.test", "192.0.2.10")
	t.Logf("the DNS Service answers %s after helm returned", took.Round(time.Millisecond))
	for _, network := range []string{"udp", "tcp"} {
		r, err := query(dnsIP, network, "www.example.test", dns.TypeA)
		if got := addresses(r, err); err != nil || !r.Authoritative || !slices.Equal(got, []string{"192.0.2.10"}) {
			t.Errorf("%s query of www.example.test through the Service %s: %v (authoritative: %t), error %v; want 192.0.2.10",
				network, dnsIP, got, err == nil && r.Authoritative, err)
		}
	}

	e.checkAPI(t, ns, fullname)
	out := e.c.Kubectl(t, "exec", "--namespace", ns, "deploy/"+fullname, "--", "/meridian", "ctl", "status")
	if !strings.Contains(out, "www.example.test.") || !strings.Contains(out, "192.0.2.10") {
		t.Errorf("meridian ctl status in the pod:\n%s\nwant the record www.example.test. and its backend 192.0.2.10", out)
	}

	// The liveness probe starts after its initial delay (10 s): wait for the kubelet to have
	// run it on each pod; no liveness probe may fail (a readiness probe does, before Meridian
	// listens: the probes start with the container).
	testutil.Eventually(t, 40*time.Second, func() bool {
		probes := e.probeCounts(t, ns)
		for _, p := range pods {
			if probes[probeKey{p.Metadata.Name, "Liveness", "successful"}] == 0 || probes[probeKey{p.Metadata.Name, "Readiness", "successful"}] == 0 {
				return false
			}
		}
		return true
	}, "the kubelet did not run both probes on every pod: %v", func() string { return fmt.Sprint(e.probeCounts(t, ns)) })
	for k, n := range e.probeCounts(t, ns) {
		switch {
		case k.result == "successful":
		case k.probe == "Readiness": // the first, before Meridian listens
			t.Logf("pod %s: %d readiness probes %s (before the pod was ready)", k.pod, n, k.result)
		default:
			t.Errorf("pod %s: %d %s probes %s", k.pod, n, k.probe, k.result)
		}
	}
	for _, p := range e.releasePods(t, ns, release) {
		if r := p.Status.ContainerStatuses[0].RestartCount; r != 0 {
			t.Errorf("pod %s restarted %d times", p.Metadata.Name, r)
		}
	}
}

// checkAPI asks the admin API's Service of the release fullname for its zones, with the token
// of the Secret the chart made and without it.
func (e *env) checkAPI(t *testing.T, ns, fullname string) {
	t.Helper()
	var secret struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(e.c.Get(t, "/api/v1/namespaces/"+ns+"/secrets/"+fullname+"-api"), &secret); err != nil {
		t.Fatal(err)
	}
	token, err := base64.StdEncoding.DecodeString(secret.Data["token"])
	if err != nil || len(token) == 0 {
		t.Fatalf("the API Secret's token: %q, %v", secret.Data["token"], err)
	}
	url := "http://" + net.JoinHostPort(e.serviceIP(t, ns, fullname+"-api"), "8053") + "/api/v1/zones"
	for _, tc := range []struct {
		token  string
		status int
	}{{string(token), http.StatusOK}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.status == http.StatusOK && !strings.Contains(string(body), "www.example.test.")) {
			t.Errorf("GET %s (token %t): %s %s, want %d with the record www.example.test.", url, tc.token != "", resp.Status, body, tc.status)
		}
	}
}

// probeKey is a pod's count of probes of a kind (Readiness, Liveness) with a result
// (successful, failed, unknown).
type probeKey struct{ pod, probe, result string }

// probeLine matches a sample of the kubelet's prober_probe_total.
var probeLine = regexp.MustCompile(`^prober_probe_total\{([^}]*)\} ([0-9.e+]+)$`)

// probeCounts returns the kubelet's counts of the probes it ran on the pods of namespace
// (its /metrics/probes).
func (e *env) probeCounts(t *testing.T, namespace string) map[probeKey]int {
	t.Helper()
	out := map[probeKey]int{}
	for _, line := range strings.Split(string(e.c.Kubelet(t, "/metrics/probes")), "\n") {
		m := probeLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range strings.Split(m[1], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				labels[k] = strings.Trim(v, `"`)
			}
		}
		if labels["namespace"] != namespace {
			continue
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		out[probeKey{labels["pod"], labels["probe_type"], labels["result"]}] += int(n)
	}
	return out
}
