package published

import (
	"time"
)

// View is what a site knows of the others (from its peers, or from their heartbeats in the
// operator's DNS), for the admin API and the dashboard.
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
