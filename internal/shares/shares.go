// Package shares measures where traffic goes (a publisher, traffic_shares): from the answers
// actually given, each weighted by its TTL as an estimate of the traffic it brings (the
// catalog's traffic counts, which queries write), the share each backend of a record really
// gets, beside the share its weight configures; by client country for the geo modes. The last
// hour is kept in memory, in buckets of a minute, for the admin API and the dashboard; the
// counters and the shares are Prometheus metrics, for longer.
package shares

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/periodic"
)

// The memory of the shares: Buckets buckets of Bucket, aligned on the Unix clock.
const (
	Bucket  = time.Minute
	Buckets = 60
	// recent is how many of the latest buckets the current share (Share.Actual) is over.
	recent = 5
)

// Keeper samples the traffic counts of one gslb block's records every Bucket.
type Keeper struct {
	mu      sync.Mutex
	served  func() *catalog.Snapshot
	records map[string]*history // by record name: the records that had traffic
	loop    periodic.Loop
}

// history is one record's last hour: each bucket's traffic by backend key.
type history struct {
	last map[string]uint64 // the totals at the last sample, by backend key
	ring [Buckets]bucket
}

// bucket is the traffic of one interval, by backend key; slot is the interval (Unix time /
// Bucket), 0 for an empty bucket.
type bucket struct {
	slot    int64
	seconds map[string]uint64
}

// New returns a keeper; Configure gives it the snapshot served.
func New() *Keeper { return &Keeper{records: map[string]*history{}} }

// Name implements publish.Publisher.
func (k *Keeper) Name() string { return "traffic shares" }

// Configure gives the keeper the snapshot its block serves, after each load; the records that
// left the configuration are forgotten.
func (k *Keeper) Configure(served func() *catalog.Snapshot) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.served = served
	snap := served()
	if snap == nil {
		return
	}
	names := make(map[string]bool, len(k.records))
	for _, r := range snap.Records() {
		names[r.Name()] = true
	}
	for name := range k.records {
		if !names[name] {
			delete(k.records, name)
		}
	}
}

// Start starts sampling, and joins the metrics' collector.
func (k *Keeper) Start() {
	collect.keepers.Store(k, true)
	k.loop.Start(func(context.Context) { k.Sample(time.Now()) }, func() time.Duration { return Bucket / 6 })
}

// Stop stops it.
func (k *Keeper) Stop() {
	collect.keepers.Delete(k)
	k.loop.Stop()
}

// slotOf returns the bucket interval t falls in.
func slotOf(t time.Time) int64 { return t.Unix() / int64(Bucket/time.Second) }

// Sample adds the traffic since the last sample to the bucket of now.
func (k *Keeper) Sample(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.served == nil || k.served() == nil {
		return
	}
	slot := slotOf(now)
	for _, r := range k.served().Records() {
		h := k.records[r.Name()]
		for _, b := range r.Backends {
			total := r.Traffic(b)
			if total == 0 {
				continue
			}
			if h == nil {
				h = &history{last: map[string]uint64{}}
				k.records[r.Name()] = h
			}
			key := b.Key()
			delta := total - h.last[key]
			if total < h.last[key] {
				delta = total // another snapshot's counts
			}
			h.last[key] = total
			if delta == 0 {
				continue
			}
			bk := &h.ring[slot%Buckets]
			if bk.slot != slot {
				*bk = bucket{slot: slot, seconds: map[string]uint64{}}
			}
			bk.seconds[key] += delta
		}
	}
}

// backendName is how the API and the metrics name a backend: its address, with its port when
// it has one.
func backendName(b *catalog.Backend) string {
	if b.Config.Port == 0 {
		return b.Config.Address
	}
	return net.JoinHostPort(b.Config.Address, strconv.Itoa(int(b.Config.Port)))
}
