package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/testutil"
)

// parentRecords returns what the parent zone (BIND) holds of the delegation of
// gslb.example.com.: its name servers and, for each, the addresses of its glue.
func parentRecords(t *testing.T, srv *testutil.UpdateServer) map[string][]string {
	t.Helper()
	return delegationOf(t, srv, "gslb.example.com.")
}

// delegationOf returns what the parent zone (BIND) holds of the delegation of zone: its name
// servers and, for each, the addresses of its glue.
func delegationOf(t *testing.T, srv *testutil.UpdateServer, zone string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	m := srv.Query(t, zone, dns.TypeNS)
	for _, rr := range append(m.Answer, m.Ns...) {
		ns, ok := rr.(*dns.NS)
		if !ok || ns.Hdr.Name != zone {
			continue
		}
		glue := []string{}
		for _, a := range srv.Query(t, ns.Ns, dns.TypeA).Answer {
			if a, ok := a.(*dns.A); ok {
				glue = append(glue, a.A.String())
			}
		}
		slices.Sort(glue)
		out[ns.Ns] = glue
	}
	return out
}

// TestExternalDNSDelegation is the delegation of k8gb's users through ExternalDNS, with the real
// parts: two clusters (eu and us, each a real API server with ExternalDNS's DNSEndpoint CRD),
// each with a Meridian that keeps the delegation of gslb.example.com. in a DNSEndpoint of its
// cluster, and a real ExternalDNS (built from its Go module) that watches eu's DNSEndpoints and
// writes them through its RFC 2136 provider, with TSIG, into the parent zone example.com. of a
// real BIND. The parent gains both clusters' name servers and glue; a stop of us shorter than
// the stale threshold changes nothing; a longer one removes us's name server and glue, and us
// back adds them again. A ZoneDelegation (k8gb's) in each cluster makes both serve its zone,
// whose delegation the parent gains too, and whose status lists both name servers.
func TestExternalDNSDelegation(t *testing.T) {
	t.Parallel()
	const threshold = 3 * time.Second
	srv := testutil.StartBIND(t, hbKey, map[string][]string{"example.com.": nil})
	names, hosts := []string{"eu", "us"}, []string{"127.0.6.1", "127.0.6.2"}
	kubes := make([]*testutil.Kube, len(names))
	for i := range names {
		kubes[i] = testutil.StartKube(t)
		kubes[i].Apply(t, testutil.KubeNamespace("meridian"))
		testutil.InstallDNSEndpointCRD(t, kubes[i])
		testutil.InstallGslbCRDs(t, kubes[i], "../../deploy/helm/meridian/crds")
		kubes[i].Apply(t, map[string]any{"apiVersion": "k8gb.io/v1beta1", "kind": "ZoneDelegation", "metadata": map[string]any{"name": "cloud-example-com"},
			"spec": map[string]any{"loadBalancedZone": "cloud.example.com", "parentZone": "example.com", "dnsZoneNegTTL": 10}})
	}
	procs := startSites(t, siteSetup{names: names, backends: []string{"", ""}, hosts: hosts,
		// A record of both sites: its placeholder of the other site makes each read the other's
		// heartbeat, as a k8gb Gslb's does.
		yaml: func(int, []int) string {
			return "records:\n  app.gslb.example.com.:\n    backends: [{address: 192.0.2.10, site: eu}, {address: 192.0.2.20, site: us}]\n"
		},
		transport: func(i int, procs []*siteProc) string {
			return fmt.Sprintf("  peers %s\n", procs[1-i].addr())
		},
		extra: func(i int) string {
			return fmt.Sprintf("  kubeconfig %s\n  k8gb eu us\n  delegation_externaldns example.com. meridian\n  delegation_externaldns_glue %s\n  delegation_externaldns_stale_threshold %s\n",
				kubes[i].Kubeconfig(t), hosts[i], threshold)
		}})
	start := time.Now()
	edns := testutil.StartExternalDNS(t, kubes[0].Kubeconfig(t), "meridian", srv, hbKey, "example.com.", "meridian", time.Second, "NS", "A", "AAAA")
	both := map[string][]string{"gslb-ns-eu-gslb.example.com.": {"127.0.6.1"}, "gslb-ns-us-gslb.example.com.": {"127.0.6.2"}}
	want := func(step string, timeout time.Duration, records map[string][]string) {
		t.Helper()
		testutil.Eventually(t, timeout, func() bool {
			got := parentRecords(t, srv)
			return len(got) == len(records) && func() bool {
				for ns, glue := range records {
					if !slices.Equal(got[ns], glue) {
						return false
					}
				}
				return true
			}()
		}, "%s: the parent holds %s, want %v\nthe DNSEndpoints of eu: %s\nexternal-dns:\n%s\neu:\n%s", step,
			func() string { return fmt.Sprint(parentRecords(t, srv)) }, records,
			func() string {
				return string(kubes[0].Get(t, "/apis/externaldns.k8s.io/v1alpha1/namespaces/meridian/dnsendpoints"))
			},
			func() string { return tail(edns.Logs()) }, func() string { return tail(procs[0].srv.Logs()) })
		t.Logf("%s: the parent holds %v after %s", step, records, time.Since(start).Round(time.Millisecond))
	}
	want("both clusters", 30*time.Second, both)
	// The ZoneDelegation's zone: served by both, delegated to both, its status written.
	cloud := map[string][]string{"gslb-ns-eu-cloud.example.com.": {"127.0.6.1"}, "gslb-ns-us-cloud.example.com.": {"127.0.6.2"}}
	testutil.Eventually(t, 20*time.Second, func() bool { return fmt.Sprint(delegationOf(t, srv, "cloud.example.com.")) == fmt.Sprint(cloud) },
		"the parent's delegation of cloud.example.com. is %s, want %v", func() string { return fmt.Sprint(delegationOf(t, srv, "cloud.example.com.")) }, cloud)
	for _, p := range procs {
		m := p.srv.Query(t, "udp", "cloud.example.com.", dns.TypeSOA)
		if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || !m.Authoritative {
			t.Errorf("%s does not serve the ZoneDelegation's zone: %v", p.name, m)
		}
	}
	zdStatus := func() string {
		var zd struct {
			Status struct {
				DNSServers []struct{ Name, Address string }
			}
		}
		_ = json.Unmarshal(kubes[0].Get(t, "/apis/k8gb.io/v1beta1/zonedelegations/cloud-example-com"), &zd)
		return fmt.Sprint(zd.Status.DNSServers)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return zdStatus() == "[{gslb-ns-eu-cloud.example.com 127.0.6.1} {gslb-ns-us-cloud.example.com 127.0.6.2}]"
	}, "the ZoneDelegation's status: %s", zdStatus)

	// A stop shorter than the threshold: nothing leaves.
	if err := procs[1].srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(threshold / 2); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got := parentRecords(t, srv); len(got) != 2 {
			t.Fatalf("us stopped for less than the threshold: the parent holds %v", got)
		}
	}
	if err := procs[1].srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(threshold); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got := parentRecords(t, srv); len(got) != 2 {
			t.Fatalf("us back within the threshold: the parent holds %v", got)
		}
	}

	start = time.Now()
	if err := procs[1].srv.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	want("us silent past the threshold", threshold+20*time.Second, map[string][]string{"gslb-ns-eu-gslb.example.com.": {"127.0.6.1"}})
	start = time.Now()
	if err := procs[1].srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	want("us back", 20*time.Second, both)
}

// tail returns the last lines of logs, enough to see what a process did last.
func tail(logs string) string {
	lines := strings.Split(logs, "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}
