package sites

import (
	"maps"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/published"
)

// View returns the fleet's current view.
func (f *Fleet) View() published.View {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	hb, _ := published.ParseHeartbeat(f.heartbeat.TXT())
	v := published.View{Site: f.opts.Site, Heartbeat: hb, PeerInterval: f.opts.PeerInterval, SplitBrainThreshold: f.opts.SplitBrainThreshold}
	for _, addr := range slices.Sorted(maps.Keys(f.peers)) {
		pe := f.peers[addr]
		errs := map[string]uint64{}
		for k, n := range pe.errors {
			errs[string(k)] = n
		}
		v.Peers = append(v.Peers, published.PeerView{Address: addr, Site: pe.site, Self: pe.self, LastAnswer: pe.lastAnswer, LastError: pe.lastError, Errors: errs, Targets: pe.learned})
	}
	for _, name := range f.plan.sites() {
		sv := published.SiteView{Name: name, State: "unknown", Targets: map[string][]string{}}
		if s := f.sites[name]; s != nil && s.heard() {
			sv.State = "fresh"
			if f.staleLocked(s, now) {
				sv.State = "stale"
			}
			sv.Heartbeat, sv.HeartbeatAge, sv.SilentSince, sv.Peer = s.last, now.Sub(s.lastAdvance).Seconds(), s.silentSince, s.peer
			for rec, addrs := range s.targets {
				for _, a := range addrs {
					sv.Targets[rec] = append(sv.Targets[rec], a.String())
				}
			}
			for rec, rtts := range s.rtts {
				if sv.RTTs == nil {
					sv.RTTs = map[string]map[string]float64{}
				}
				sv.RTTs[rec] = make(map[string]float64, len(rtts))
				for a, rtt := range rtts {
					sv.RTTs[rec][a.String()] = float64(rtt.Microseconds()) / 1000
				}
			}
		}
		v.Sites = append(v.Sites, sv)
	}
	return v
}
