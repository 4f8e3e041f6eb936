package sites

import (
	"maps"
	"slices"
	"time"
)

// View is what the fleet knows, for the admin API and the dashboard.
type View struct {
	// Site is this site; Heartbeat the heartbeat it serves.
	Site      string    `json:"site"`
	Heartbeat Heartbeat `json:"heartbeat"`
	// PeerInterval and SplitBrainThreshold are the options in force.
	PeerInterval        time.Duration `json:"peer_interval_ns"`
	SplitBrainThreshold time.Duration `json:"split_brain_threshold_ns"`
	Peers               []PeerView    `json:"peers"`
	Sites               []SiteView    `json:"sites"`
}

// PeerView is one peer address.
type PeerView struct {
	Address string `json:"address"`
	// Site is what its heartbeat names ("" before one was read); Self is set when that is
	// this site.
	Site       string            `json:"site"`
	Self       bool              `json:"self"`
	LastAnswer time.Time         `json:"last_answer"`
	LastError  string            `json:"last_error,omitempty"`
	Errors     map[string]uint64 `json:"errors"`
	Targets    int               `json:"targets"`
}

// SiteView is one other site.
type SiteView struct {
	Name string `json:"name"`
	// State is fresh, stale, or unknown (never heard from).
	State        string    `json:"state"`
	Heartbeat    Heartbeat `json:"heartbeat"`
	HeartbeatAge float64   `json:"heartbeat_age_seconds"`
	// SilentSince is when it stopped confirming its heartbeat (zero while it does).
	SilentSince time.Time `json:"silent_since"`
	Peer        string    `json:"peer"`
	// Targets are, by record, the addresses it published when last read.
	Targets map[string][]string `json:"targets"`
	// RTTs are, by record, its RTTs in milliseconds to the record's backends, by address, as
	// it published them when last read (measure_remote); omitted without.
	RTTs map[string]map[string]float64 `json:"rtts_ms,omitempty"`
}

// View returns the fleet's current view.
func (f *Fleet) View() View {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	hb, _ := ParseHeartbeat(f.heartbeat.TXT())
	v := View{Site: f.opts.Site, Heartbeat: hb, PeerInterval: f.opts.PeerInterval, SplitBrainThreshold: f.opts.SplitBrainThreshold}
	for _, addr := range slices.Sorted(maps.Keys(f.peers)) {
		pe := f.peers[addr]
		errs := map[string]uint64{}
		for k, n := range pe.errors {
			errs[string(k)] = n
		}
		v.Peers = append(v.Peers, PeerView{Address: addr, Site: pe.site, Self: pe.self, LastAnswer: pe.lastAnswer, LastError: pe.lastError, Errors: errs, Targets: pe.learned})
	}
	for _, name := range f.plan.sites() {
		sv := SiteView{Name: name, State: "unknown", Targets: map[string][]string{}}
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
