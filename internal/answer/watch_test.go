package answer

import (
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/health"
)

// TestAnswerWatch: a watch set on a record notes when the refreshed view was swapped in and
// the first answer of its family from it, by either path; explanations and the other family's
// answers do not count; noting allocates nothing.
func TestAnswerWatch(t *testing.T) {
	snap, hs := testSnapshot(t)
	rec := recordNamed(t, snap, "www.example.org.")
	w := &catalog.AnswerWatch{Family: catalog.IPv4}
	rec.Watch(w)
	defer rec.Unwatch(w)
	if !w.Swapped().IsZero() {
		t.Fatal("swapped before a refresh")
	}
	hs.set(t, snap, "www.example.org.", "10.0.0.1", health.Down)
	if w.Swapped().IsZero() {
		t.Fatal("the refresh did not note the swap")
	}
	q := new(dns.Msg)
	q.SetQuestion("www.example.org.", dns.TypeA)
	Explain(snap, Options{}, Query{Msg: q, Source: testClient})
	ask(snap, Options{}, "www.example.org.", dns.TypeAAAA)
	if !w.Answered().IsZero() {
		t.Fatal("an explanation or an answer of the other family counted as the first answer")
	}
	pkt := pack(t, q)
	if _, ok := AppendFast(nil, snap, &Options{}, pkt, testClient, false, nil, time.Time{}); !ok {
		t.Fatal("the fast path did not answer")
	}
	first := w.Answered()
	if first.IsZero() || first.Before(w.Swapped()) {
		t.Fatalf("answered %v, swapped %v", first, w.Swapped())
	}
	ask(snap, Options{}, "www.example.org.", dns.TypeA)
	if !w.Answered().Equal(first) {
		t.Error("a later answer moved the first")
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { AppendFast(buf[:0], snap, &Options{}, pkt, testClient, false, nil, time.Time{}) }); n != 0 {
		t.Errorf("the fast path allocates %v times with a watch", n)
	}
	rec.Unwatch(w)
	rec.Refresh()
	if rec.View().Extra().Watch != nil {
		t.Error("the view after Unwatch carries the watch")
	}
}

// TestPeerReadsAreNoted: a peer site's read of a record's localtargets from a view that carries
// a watch is when that site learned the change; an explanation of the name is not.
func TestPeerReadsAreNoted(t *testing.T) {
	snap := publishingSnapshot(t)
	rec := recordNamed(t, snap, "app.example.org.")
	w := &catalog.AnswerWatch{Family: catalog.IPv4}
	rec.Watch(w)
	defer rec.Unwatch(w)
	rec.Refresh()
	q := new(dns.Msg)
	q.SetQuestion("localtargets-app.example.org.", dns.TypeA)
	Explain(snap, Options{}, Query{Msg: q, Source: testClient})
	if !w.PeerRead().IsZero() {
		t.Fatal("an explanation counted as a peer's read")
	}
	Respond(snap, Options{}, Query{Msg: q, Source: testClient})
	if w.PeerRead().IsZero() || !w.Answered().IsZero() {
		t.Errorf("peer read %v, answered %v: want the read only", w.PeerRead(), w.Answered())
	}
}
