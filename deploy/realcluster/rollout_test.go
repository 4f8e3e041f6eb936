package realcluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// loadInterval is the pause between two queries of each of the load's two clients (UDP, TCP):
// about 100 queries a second in all.
const loadInterval = 20 * time.Millisecond

// load queries a DNS server without pause over UDP and over TCP, each query from a socket of
// its own (as many clients would: kube-proxy balances each new flow), and counts the queries
// that fail: an error (a timeout, a refused connection), a response code other than NOERROR,
// or an answer other than the one wanted.
type load struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	failures     []string
	stop         chan struct{}
	wg           sync.WaitGroup
}

// startLoad starts the load on server for name, whose answer must be want.
func startLoad(server, name, want string) *load {
	l := &load{stop: make(chan struct{})}
	for _, network := range []string{"udp", "tcp"} {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			tick := time.NewTicker(loadInterval)
			defer tick.Stop()
			for {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				r, err := query(server, network, name, dns.TypeA)
				l.sent.Add(1)
				if got := addresses(r, err); err != nil || r.Rcode != dns.RcodeSuccess || !slices.Equal(got, []string{want}) {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.failures) < 10 {
						l.failures = append(l.failures, fmt.Sprintf("%s %s: %v %v", time.Now().Format("15:04:05.000"), network, got, err))
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

// end stops the load and fails the test unless every query succeeded, logging what it did
// during what.
func (l *load) end(t *testing.T, what string) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	sent, failed := l.sent.Load(), l.failed.Load()
	t.Logf("%s: %d queries, %d failed", what, sent, failed)
	if sent < 100 {
		t.Errorf("%s: only %d queries sent", what, sent)
	}
	if failed > 0 {
		t.Errorf("%s: %d of %d queries failed, the first: %s", what, failed, sent, strings.Join(l.failures, "; "))
	}
}

// testRolloutUnderLoad: a steady query load on the DNS Service through `helm upgrade` to a new
// image and through a drain of the node, with no failed query. The upgrade replaces both pods
// one at a time (the chart's RollingUpdate strategy: one extra pod, none unavailable; each old
// pod answers for shutdownDelaySeconds after it leaves the Service's endpoints). The drain is
// `kubectl drain` of the one node, limited to the release's pods: it cordons the node and
// evicts them; the PodDisruptionBudget (minAvailable 1) lets one go and refuses the other, whose
// replacement cannot be scheduled on the cordoned node, until the drain's timeout; the
// remaining pod answers all along; uncordoned, the node takes the replacement.
func (e *env) testRolloutUnderLoad(t *testing.T) {
	const ns, release, fullname = "rollout", "rollout", "rollout-meridian"
	e.install(t, ns, release, "")
	dnsIP := e.serviceIP(t, ns, fullname)
	waitAnswer(t, []string{dnsIP}, "www.example.test", "192.0.2.10") // kube-proxy has the endpoints
	old := e.releasePods(t, ns, release)

	l := startLoad(dnsIP, "www.example.test", "192.0.2.10")
	time.Sleep(2 * time.Second) // some load before the change
	start := time.Now()
	e.helm(t, "upgrade", release, chartDir, "--namespace", ns, "--reuse-values", "--wait", "--timeout", helmTimeout,
		"--set", "image.tag="+e.upgradeTag)
	e.waitRollout(t, ns, release, e.repo+":"+e.upgradeTag, 2)
	t.Logf("helm upgrade --wait to %s: %s", e.upgradeTag, time.Since(start).Round(time.Millisecond))
	for _, p := range e.releasePods(t, ns, release) {
		for _, o := range old {
			if p.Metadata.Name == o.Metadata.Name {
				t.Errorf("pod %s was not replaced", p.Metadata.Name)
			}
		}
	}
	time.Sleep(3 * time.Second) // the old pods are gone: some load after
	l.end(t, "helm upgrade")

	t.Cleanup(func() { _, _ = e.c.TryKubectl("uncordon", testutil.ClusterNode) })
	l = startLoad(dnsIP, "www.example.test", "192.0.2.10")
	time.Sleep(2 * time.Second)
	before := e.releasePods(t, ns, release)
	out, err := e.c.TryKubectl("drain", testutil.ClusterNode, "--pod-selector=app.kubernetes.io/instance="+release,
		"--delete-emptydir-data", "--ignore-daemonsets", "--timeout=40s")
	t.Logf("kubectl drain: %v\n%s", err, out)
	if err == nil || !strings.Contains(err.Error(), "disruption budget") {
		t.Errorf("kubectl drain: %v, want the PodDisruptionBudget to refuse the second eviction until the timeout", err)
	}
	after := e.releasePods(t, ns, release)
	var survivors, pending int
	for _, p := range after {
		switch {
		case p.Status.Phase == "Pending":
			pending++
		case p.ready() && p.Metadata.DeletionTimestamp == nil && slices.ContainsFunc(before, func(b pod) bool { return b.Metadata.Name == p.Metadata.Name }):
			survivors++
		}
	}
	if survivors != 1 || pending != 1 {
		t.Errorf("after the drain: %d of the pods still ready, %d pending, want 1 and 1 (one evicted, its replacement unschedulable)\n%s",
			survivors, pending, e.describe(ns))
	}
	var pdb struct {
		Status struct {
			DisruptionsAllowed int `json:"disruptionsAllowed"`
			CurrentHealthy     int `json:"currentHealthy"`
		} `json:"status"`
	}
	if err := json.Unmarshal(e.c.Get(t, "/apis/policy/v1/namespaces/"+ns+"/poddisruptionbudgets/"+fullname), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Status.CurrentHealthy != 1 {
		t.Errorf("the PodDisruptionBudget's status during the drain: %+v, want 1 healthy and no disruption allowed", pdb.Status)
	}
	e.c.Kubectl(t, "uncordon", testutil.ClusterNode)
	e.waitRollout(t, ns, release, e.repo+":"+e.upgradeTag, 2)
	time.Sleep(2 * time.Second)
	l.end(t, "kubectl drain")
}

// waitRollout waits until the release has exactly n pods, all ready and running image.
func (e *env) waitRollout(t *testing.T, ns, release, image string, n int) {
	t.Helper()
	testutil.Eventually(t, answerTimeout, func() bool {
		ps := e.releasePods(t, ns, release)
		for _, p := range ps {
			if !p.ready() || p.Metadata.DeletionTimestamp != nil || p.Spec.Containers[0].Image != image {
				return false
			}
		}
		return len(ps) == n
	}, "the release %s has not %d ready pods of %s\n%s", release, n, image, func() string { return e.describe(ns) })
}
