package answerlog

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/meridian-gslb/meridian/internal/config"
)

var client = netip.MustParseAddr("192.0.2.7")

// collect returns a sink that keeps copies of what it is given, and a function returning them.
func collect() (Sink, func() []Entry) {
	var mu sync.Mutex
	var got []Entry
	return func(e *Entry) {
			mu.Lock()
			defer mu.Unlock()
			c := *e
			c.Query, c.Response = append([]byte(nil), e.Query...), append([]byte(nil), e.Response...)
			got = append(got, c)
		}, func() []Entry {
			mu.Lock()
			defer mu.Unlock()
			return append([]Entry(nil), got...)
		}
}

// waitFor polls until n entries were written, or fails after a deadline.
func waitFor(t *testing.T, got func() []Entry, n int) []Entry {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if es := got(); len(es) >= n {
			return es
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries written, want %d", len(got()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEntriesReachTheSink: what the loops observe reaches the sink in order, copied (the
// loops reuse their buffers), with its client, transport and times.
func TestEntriesReachTheSink(t *testing.T) {
	l := New(config.AnswerLogOptions{})
	sink, got := collect()
	defer l.Attach(sink)()
	l.Start()
	defer l.Stop()
	pkt, resp := make([]byte, 3), make([]byte, 5)
	start := time.Now()
	for i := range 100 {
		pkt[0], resp[0] = byte(i), byte(i)
		l.Observe(nil, pkt, resp, client, i%2 == 1, start)
	}
	es := waitFor(t, got, 100)
	for i, e := range es {
		if e.Query[0] != byte(i) || e.Response[0] != byte(i) || len(e.Query) != 3 || len(e.Response) != 5 {
			t.Fatalf("entry %d: query %v response %v", i, e.Query, e.Response)
		}
		if e.Client != client || e.TCP != (i%2 == 1) || !e.QueryTime.Equal(start) || e.ResponseTime.Before(start) {
			t.Fatalf("entry %d: client %v, TCP %v, times %v %v", i, e.Client, e.TCP, e.QueryTime, e.ResponseTime)
		}
	}
}

// TestAFullQueueDrops: answers that find the queue full are dropped and counted, never
// waited for; those queued are written once a sink takes them, and none without one.
func TestAFullQueueDrops(t *testing.T) {
	droppedBefore, writtenBefore := promtest.ToFloat64(dropped), promtest.ToFloat64(written)
	l := New(config.AnswerLogOptions{Queue: 4})
	for range 10 {
		l.Observe(nil, []byte{1}, []byte{2}, client, false, time.Now())
	}
	if d := promtest.ToFloat64(dropped) - droppedBefore; d != 6 {
		t.Errorf("dropped %v of 10 with a queue of 4, want 6", d)
	}
	sink, got := collect()
	detach := l.Attach(sink)
	l.Start()
	waitFor(t, got, 4)
	l.Stop()
	if w := promtest.ToFloat64(written) - writtenBefore; w != 4 {
		t.Errorf("written %v, want 4", w)
	}
	detach()
	l.Observe(nil, []byte{1}, []byte{2}, client, false, time.Now())
	l.Start()
	l.Stop() // writes what is queued: dropped, no sink
	if d := promtest.ToFloat64(dropped) - droppedBefore; d != 7 {
		t.Errorf("dropped %v, want 7 once no sink is attached", d)
	}
}

// TestSampling: with answer_log_sample N, about one answer in N is queued.
func TestSampling(t *testing.T) {
	for _, n := range []int{1, 10, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			l := New(config.AnswerLogOptions{Sample: n, Queue: 1 << 16})
			const answers = 20000
			for range answers {
				l.Observe(nil, []byte{1}, []byte{2}, client, false, time.Now())
			}
			queued := 0
			for s := l.queue.next(); s != nil; s = l.queue.next() {
				queued++
				l.queue.release(s)
			}
			want := answers / n
			if lo, hi := want*7/10, want*13/10; queued < lo || queued > hi { // far beyond 5 standard deviations
				t.Errorf("queued %d of %d with sample %d, want about %d", queued, answers, n, want)
			}
		})
	}
}

// TestManyLoops: loops observing at once lose nothing but what a full queue drops, and every
// answer is written or counted dropped (run with -race).
func TestManyLoops(t *testing.T) {
	droppedBefore := promtest.ToFloat64(dropped)
	l := New(config.AnswerLogOptions{Queue: 64})
	var mu sync.Mutex
	seen := map[[3]byte]int{} // each answer's query: its loop and its number in two bytes
	defer l.Attach(func(e *Entry) {
		mu.Lock()
		seen[[3]byte{e.Query[0], e.Query[1], e.Query[2]}]++
		mu.Unlock()
	})()
	l.Start()
	const loops, each = 4, 2000
	var wg sync.WaitGroup
	for i := range loops {
		wg.Go(func() {
			for j := range each {
				l.Observe(nil, []byte{byte(i), byte(j >> 8), byte(j)}, []byte{0}, client, false, time.Now())
			}
		})
	}
	wg.Wait()
	l.Stop()
	mu.Lock()
	defer mu.Unlock()
	for q, n := range seen {
		if n != 1 {
			t.Errorf("answer %v written %d times", q, n)
		}
	}
	if total := len(seen) + int(promtest.ToFloat64(dropped)-droppedBefore); total != loops*each {
		t.Errorf("%d written and dropped, want %d", total, loops*each)
	}
	if len(seen) == 0 {
		t.Error("nothing written")
	}
}

// TestObserveAllocatesNothing: once its slots have grown to the packets, queuing an answer
// allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	l := New(config.AnswerLogOptions{Queue: 8})
	pkt, resp := make([]byte, 40), make([]byte, 120)
	observe := func() {
		l.Observe(nil, pkt, resp, client, false, time.Time{})
		for s := l.queue.next(); s != nil; s = l.queue.next() {
			l.queue.release(s)
		}
	}
	for range 16 {
		observe() // every slot grows once
	}
	if n := testing.AllocsPerRun(1000, observe); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}

// BenchmarkObserve measures what the answer log adds to a fast-path answer: complete, and
// sampled one in 100.
func BenchmarkObserve(b *testing.B) {
	pkt, resp := make([]byte, 40), make([]byte, 120)
	for _, sample := range []int{1, 100} {
		b.Run(fmt.Sprintf("sample=%d", sample), func(b *testing.B) {
			l := New(config.AnswerLogOptions{Sample: sample, Queue: 1 << 16})
			defer l.Attach(func(*Entry) {})()
			l.Start()
			defer l.Stop()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.Observe(nil, pkt, resp, client, false, time.Time{})
				}
			})
		})
	}
}
