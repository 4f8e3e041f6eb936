package health

import (
	"maps"
	"math"
	"time"

	"github.com/meridian-gslb/meridian/internal/health/probe"
)

// What a backend's checks measure besides up or down, for the steering steps (see
// docs/modes.md, "Measured RTT and load"):
//
//   - RTT: the latency of the successful probes of the backend's first check, smoothed by an
//     exponentially weighted moving average, srtt += rttAlpha·(sample − srtt), the first
//     sample taken as it is. rttAlpha is 0.3 rather than TCP's 1/8 (RFC 6298): probes come
//     every scrape_interval (10 s by default), not every segment, and with 1/8 a real change
//     would take a minute and a half to show; with 0.3 the estimate covers half the distance
//     in two probes, while one outlier still moves it by only 30% of its excess. Only the
//     first check feeds it (a tcp connect and a lua script that fetches a page do not measure
//     the same thing: list first the check whose latency stands for the backend's), only
//     probes made here (a result another instance shared has no latency of ours), and only
//     successful ones (a timeout measures the timeout). It starts over when the backend goes
//     down: the RTT from before an outage says nothing of the backend that comes back.
//   - Load: the last number a check read (an http check's metric, a lua check's number), in
//     the backend's units; capacity scales it in the catalog. It is unknown until read, when
//     a check that reads it could not, and from when the backend goes down.
//
// The catalog prepares candidates on a change (Spec.OnMeasure), never per query, so a change
// is announced only when it matters: the RTT when it moved by more than 10% and more than
// 1 ms from the value last announced (rttMoved), the load when it became known or unknown or
// moved by more than 5% of the capacity (loadMoved). A noisy RTT thus refreshes the record
// only when its smoothed value drifts, not on every probe.
const (
	rttAlpha = 0.3
	// rttMinMove and rttRelMove are the RTT change announced: more than both.
	rttMinMove = time.Millisecond
	rttRelMove = 0.1
	// loadMove is the load change announced, as a fraction of the capacity.
	loadMove = 0.05
)

// smoothRTT returns the smoothed RTT after sample, from srtt (0 before the first sample).
func smoothRTT(srtt, sample time.Duration) time.Duration {
	if srtt <= 0 {
		return sample
	}
	return srtt + time.Duration(math.Round(rttAlpha*float64(sample-srtt)))
}

// rttMoved reports whether the smoothed RTT srtt is worth announcing after announced (0:
// nothing announced yet).
func rttMoved(announced, srtt time.Duration) bool {
	if announced <= 0 || srtt <= 0 {
		return announced != srtt
	}
	d := srtt - announced
	if d < 0 {
		d = -d
	}
	return d > rttMinMove && float64(d) > rttRelMove*float64(announced)
}

// loadMoved reports whether load (NaN: unknown) is worth announcing after announced, for a
// backend of capacity (0 counts as 1).
func loadMoved(announced, load, capacity float64) bool {
	if math.IsNaN(announced) || math.IsNaN(load) {
		return math.IsNaN(announced) != math.IsNaN(load)
	}
	if capacity <= 0 {
		capacity = 1
	}
	return math.Abs(load-announced) > loadMove*capacity
}

// measures is what the manager keeps of one backend's measurements beyond what its State
// holds: the smoothed RTT and the RTT last announced. The load last announced and the RTTs
// by site are in the backend's rareState, whether it went down since it was last up in
// backend.wasDown.
type measures struct {
	srtt, rttAnnounced time.Duration
}

// siteRTTs are a backend's RTTs by site: vantages are the smoothed RTTs of the quorum's sites
// (votes); sites those that other sites published (ReportRTTs); announced what was last
// announced of both.
type siteRTTs struct {
	vantages, sites, announced map[string]time.Duration
}

// measure feeds res, a result of one of b's checks probed here (first: its first check), to
// b's measurements, and reports whether they moved enough to announce.
func (b *backend) measure(first bool, res probe.Result) bool {
	moved := false
	if first && res.OK && res.Latency > 0 {
		b.measures.srtt = smoothRTT(b.measures.srtt, res.Latency)
		b.state.SetRTT(b.measures.srtt)
		if rttMoved(b.measures.rttAnnounced, b.measures.srtt) {
			b.measures.rttAnnounced, moved = b.measures.srtt, true
		}
	}
	if res.HasLoad {
		b.state.SetLoad(res.Load)
		if loadMoved(b.loadAnnounced(), res.Load, b.capacity()) {
			b.more().loadAnnounced, moved = res.Load, true
		}
	}
	return moved
}

// resetMeasures forgets b's RTT and load.
func (b *backend) resetMeasures() {
	b.measures.srtt, b.measures.rttAnnounced = 0, 0
	if b.rare != nil {
		b.rare.loadAnnounced, b.rare.bySite = math.NaN(), nil
	}
	b.state.SetRTT(0)
	b.state.SetLoad(math.NaN())
	b.state.SetVantageRTTs(nil)
}

// measureVantages feeds the latencies of a quorum verdict's votes to b's RTTs by site: each
// site's successful, measured votes (not isolated ones, and only of voters with a site)
// smooth its RTT as a probe here smooths b's own, the mean of a site's votes as one sample; a
// site without such a vote keeps its last RTT, until b goes down.
// It reports whether one of them moved enough to announce (rttMoved), or a site came or went.
func (b *backend) measureVantages(votes []Vote) bool {
	sum, n := map[string]time.Duration{}, map[string]int{}
	for _, v := range votes {
		if v.Site != "" && v.OK && !v.Isolated && v.Latency > 0 {
			sum[v.Site] += v.Latency
			n[v.Site]++
		}
	}
	old := b.vantages()
	if len(sum) == 0 && len(old) == 0 {
		return false
	}
	next := maps.Clone(old) // a site without a vote this time keeps its RTT
	if next == nil {
		next = make(map[string]time.Duration, len(sum))
	}
	for site, total := range sum {
		next[site] = smoothRTT(old[site], total/time.Duration(n[site]))
	}
	b.sites().vantages = next
	return b.announceVantages()
}

// announceVantages merges b's RTTs by site, the quorum's and those other sites published (a
// quorum's site wins over a published one of the same name: it is measured every cycle), and
// stores them in its State when one moved enough to announce (rttMoved), or a site came or
// went, which it reports.
func (b *backend) announceVantages() bool {
	s := b.sites()
	next := maps.Clone(s.sites)
	if next == nil {
		next = make(map[string]time.Duration, len(s.vantages))
	}
	maps.Copy(next, s.vantages)
	moved := len(next) != len(s.announced)
	for site, rtt := range next {
		old, ok := s.announced[site]
		moved = moved || !ok || rttMoved(old, rtt)
	}
	if !moved {
		return false
	}
	s.announced = next
	b.state.SetVantageRTTs(next)
	return true
}

// noteStatus follows b's status to next at now: going down forgets its measurements, and
// coming up after having been down is a recovery.
func (b *backend) noteStatus(next Status, now time.Time) {
	switch next {
	case Down:
		b.resetMeasures()
		b.wasDown = true
	case Up:
		if b.wasDown {
			b.state.SetRecovered(now)
		}
		b.wasDown = false
	}
}

// ReportRTTs records rtts as the backend with key's RTTs as the other sites measured them, by
// site (the sites source reads them from what each site publishes; nil or empty: none), in
// place of the last ones reported. They join the quorum's RTTs by site in State.VantageRTTs.
// It reports false when no backend has key. The backend's OnMeasure runs, outside the
// manager's lock, when they moved enough to announce. The map must not be written after.
func (m *Manager) ReportRTTs(key string, rtts map[string]time.Duration) bool {
	m.mu.Lock()
	b := m.backendLocked(key)
	if b == nil {
		m.mu.Unlock()
		return false
	}
	b.sites().sites = rtts
	var notify func()
	if b.announceVantages() {
		notify = b.onMeasure
	}
	m.mu.Unlock()
	if notify != nil {
		notify()
	}
	return true
}
