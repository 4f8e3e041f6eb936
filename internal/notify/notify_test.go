package notify_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// The tests read the package's counters, which every notifier adds to: they do not run in
// parallel.

const secret = "s3cret"

// metric returns the value of the webhook metric name (without the coredns_gslb_ prefix)
// whose result label is result ("" for the unlabelled queue length).
func metric(t *testing.T, name, result string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "coredns_gslb_"+name {
			continue
		}
		for _, m := range f.GetMetric() {
			if result == "" {
				return m.GetGauge().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no metric %s{result=%q}", name, result)
	return 0
}

// deltas returns a function that returns how much each result's count grew since deltas was called.
func deltas(t *testing.T) func() map[string]float64 {
	t.Helper()
	results := []string{"delivered", "failed", "dropped"}
	before := map[string]float64{}
	for _, r := range results {
		before[r] = metric(t, "webhook_deliveries_total", r)
	}
	return func() map[string]float64 {
		out := map[string]float64{}
		for _, r := range results {
			out[r] = metric(t, "webhook_deliveries_total", r) - before[r]
		}
		return out
	}
}

// newNotifier returns a notifier to urls with the test's short backoff, stopped when the test ends.
func newNotifier(t *testing.T, queue int, urls ...string) *notify.Notifier {
	t.Helper()
	n := notify.New(notify.Options{URLs: urls, Secret: secret, Instance: "dns1", Site: "eu", QueueSize: queue,
		Timeout: 2 * time.Second, Attempts: 4, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, Log: &testutil.Log{}})
	t.Cleanup(func() { n.Stop(context.Background()) })
	return n
}

func transition(key string) notify.Event {
	return notify.Event{Type: notify.TypeTransition, Time: time.Now(), Record: "www.example.org.", Backend: "192.0.2.1",
		Key: key, From: "up", To: "down", Reason: "connection refused"}
}

func TestDeliveriesAreSignedAndInOrder(t *testing.T) {
	a, b := notifytest.NewReceiver(t), notifytest.NewReceiver(t)
	n := newNotifier(t, 0, a.URL, b.URL)
	keys := []string{"k1", "k2", "k3"}
	for _, k := range keys {
		n.Notify(transition(k))
	}
	n.Notify(notify.Event{Type: notify.TypeOverride, Time: time.Now(), Key: "k4", Change: notify.ChangeSet, Action: "drain", By: "ops"})
	for _, r := range []*notifytest.Receiver{a, b} {
		testutil.Eventually(t, 5*time.Second, func() bool { return len(r.Requests()) == 4 }, "%d requests, want 4", len(r.Requests()))
		var got []string
		for _, req := range r.Requests() {
			got = append(got, req.Event.Key)
			if !notify.Verify(secret, req.Body, req.Header.Get(notify.SignatureHeader)) {
				t.Errorf("%s: signature %q does not verify", req.Event.Key, req.Header.Get(notify.SignatureHeader))
			}
			if req.Header.Get(notify.EventHeader) != req.Event.Type || req.Header.Get(notify.DeliveryHeader) != req.Event.ID || req.Event.ID == "" {
				t.Errorf("%s: headers %v, event %+v", req.Event.Key, req.Header, req.Event)
			}
			if req.Header.Get("Content-Type") != "application/json" || req.Event.Instance != "dns1" || req.Event.Site != "eu" {
				t.Errorf("%s: content type %q, instance %q, site %q", req.Event.Key, req.Header.Get("Content-Type"), req.Event.Instance, req.Event.Site)
			}
		}
		if want := append(keys, "k4"); !slices.Equal(got, want) {
			t.Errorf("events %v, want %v in order", got, want)
		}
		tr, ov := r.Requests()[0].Event, r.Requests()[3].Event
		if tr.From != "up" || tr.To != "down" || tr.Reason != "connection refused" || tr.Record != "www.example.org." || tr.Backend != "192.0.2.1" {
			t.Errorf("transition %+v", tr)
		}
		if ov.Type != "override" || ov.Change != "set" || ov.Action != "drain" || ov.By != "ops" || strings.Contains(string(r.Requests()[3].Body), `"from"`) {
			t.Errorf("override %s", r.Requests()[3].Body)
		}
	}
	if a.Requests()[0].Event.ID != b.Requests()[0].Event.ID {
		t.Error("the URLs got different ids for one event")
	}
}

func TestSignature(t *testing.T) {
	// The example of docs/notifications.md: printf '%s' '{"type":"transition"}' | openssl dgst -sha256 -hmac s3cret
	body := []byte(`{"type":"transition"}`)
	sig := notify.Sign(secret, body)
	if want := "sha256=da03f13277f9650ffdbd7561ec1b798984a0945e2b17668e201dd1bbd1c1b085"; sig != want {
		t.Errorf("Sign = %s, want %s (what openssl computes)", sig, want)
	}
	tests := []struct {
		name      string
		secret    string
		body      string
		signature string
		ok        bool
	}{
		{"its own signature", secret, string(body), sig, true},
		{"another secret", "other", string(body), sig, false},
		{"another body", secret, `{"type":"override"}`, sig, false},
		{"no prefix", secret, string(body), strings.TrimPrefix(sig, "sha256="), false},
		{"empty", secret, string(body), "", false},
	}
	for _, tt := range tests {
		if got := notify.Verify(tt.secret, []byte(tt.body), tt.signature); got != tt.ok {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // what the receiver answers, then 200
		attempts int   // the requests it gets
		result   string
	}{
		{"2xx at once", []int{http.StatusAccepted}, 1, "delivered"},
		{"5xx then success", []int{500, 503, 502}, 4, "delivered"},
		{"408 and 429 are retried", []int{408, 429}, 3, "delivered"},
		{"gives up after the attempts", []int{500, 500, 500, 500, 500}, 4, "failed"},
		{"400 is not retried", []int{400}, 1, "failed"},
		{"404 is not retried", []int{404}, 1, "failed"},
		{"a redirect is not followed", []int{302}, 1, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := notifytest.NewReceiver(t, tt.statuses...)
			grew := deltas(t)
			n := newNotifier(t, 0, r.URL)
			n.Notify(transition("k"))
			testutil.Eventually(t, 5*time.Second, func() bool { return grew()[tt.result] == 1 }, "counts grew by %v, want one %s", grew(), tt.result)
			n.Stop(context.Background())
			if got := grew(); got["delivered"]+got["failed"]+got["dropped"] != 1 {
				t.Errorf("counts grew by %v, want one %s only", got, tt.result)
			}
			reqs := r.Requests()
			if len(reqs) != tt.attempts {
				t.Fatalf("%d attempts, want %d", len(reqs), tt.attempts)
			}
			for _, req := range reqs {
				if req.Header.Get(notify.DeliveryHeader) != reqs[0].Event.ID {
					t.Errorf("attempts carry delivery ids %s and %s: want one", req.Header.Get(notify.DeliveryHeader), reqs[0].Event.ID)
				}
			}
		})
	}
}

func TestAFullQueueDropsAndCounts(t *testing.T) {
	r := notifytest.NewReceiver(t)
	r.Hold()
	grew := deltas(t)
	queued := metric(t, "webhook_queue_length", "")
	n := newNotifier(t, 2, r.URL)
	n.Notify(transition("first"))
	// The sender took the first event and waits for its answer: the queue is empty.
	testutil.Eventually(t, 5*time.Second, func() bool { return len(r.Requests()) == 1 }, "the first event did not arrive")
	start := time.Now()
	for _, k := range []string{"q1", "q2", "d1", "d2", "d3"} {
		n.Notify(transition(k))
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Notify blocked for %s on a full queue", took)
	}
	if got := grew()["dropped"]; got != 3 {
		t.Errorf("%v dropped, want 3", got)
	}
	if got := metric(t, "webhook_queue_length", "") - queued; got != 2 {
		t.Errorf("queue length grew by %v, want 2", got)
	}
	r.Release()
	testutil.Eventually(t, 5*time.Second, func() bool { return grew()["delivered"] == 3 }, "counts grew by %v, want 3 delivered", grew())
	var keys []string
	for _, req := range r.Requests() {
		keys = append(keys, req.Event.Key)
	}
	if !slices.Equal(keys, []string{"first", "q1", "q2"}) {
		t.Errorf("delivered %v, want the first and the two queued", keys)
	}
	if got := metric(t, "webhook_queue_length", "") - queued; got != 0 {
		t.Errorf("queue length is %v above where it started, want 0", got)
	}
}

func TestStop(t *testing.T) {
	t.Run("delivers what is queued", func(t *testing.T) {
		r := notifytest.NewReceiver(t, 500) // the first event is retried during the drain
		grew := deltas(t)
		n := newNotifier(t, 0, r.URL)
		for _, k := range []string{"a", "b", "c"} {
			n.Notify(transition(k))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Stop(ctx)
		if got := grew(); got["delivered"] != 3 {
			t.Errorf("after Stop, counts grew by %v, want 3 delivered", got)
		}
		n.Notify(transition("late")) // neither blocks nor panics: dropped
		if got := grew(); got["dropped"] != 1 || len(r.Requests()) != 4 {
			t.Errorf("an event after Stop: counts grew by %v, %d requests", got, len(r.Requests()))
		}
	})
	t.Run("gives up at its deadline", func(t *testing.T) {
		r := notifytest.NewReceiver(t)
		r.Hold() // never answers before the deadline
		grew := deltas(t)
		n := newNotifier(t, 0, r.URL)
		for _, k := range []string{"a", "b", "c"} {
			n.Notify(transition(k))
		}
		testutil.Eventually(t, 5*time.Second, func() bool { return len(r.Requests()) == 1 }, "the first event did not arrive")
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		n.Stop(ctx)
		if took := time.Since(start); took > time.Second {
			t.Errorf("Stop took %s, its deadline is 100ms", took)
		}
		if got := grew(); got["failed"] != 1 || got["dropped"] != 2 || got["delivered"] != 0 {
			t.Errorf("counts grew by %v, want the event in flight failed and two dropped", got)
		}
	})
}

func TestTheLogHidesTheURLsCredentials(t *testing.T) {
	r := notifytest.NewReceiver(t, http.StatusForbidden)
	log := &testutil.Log{}
	n := notify.New(notify.Options{URLs: []string{strings.Replace(r.URL, "http://", "http://user:pass@", 1) + "/hook?token=t0ken"}, Log: log})
	n.Notify(transition("k"))
	n.Stop(context.Background())
	if log.Count("status 403 (not retried)") != 1 || log.Count("/hook") != 1 || log.Count("t0ken") != 0 || log.Count("pass") != 0 {
		t.Errorf("log:\n%s", log)
	}
}
