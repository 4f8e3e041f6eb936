// Package istiosync tells whether the istio-proxy (Envoy) of Istio gateway pods has its xDS
// configuration synced with istiod: the optional istio_sync_check of the Kubernetes source, by
// which a gateway Service counts as healthy only when each of its ready gateway pods has its
// listeners, routes, clusters and endpoints (LDS, RDS, CDS and EDS) synced.
//
// The status comes from istiod's debug endpoint /debug/syncz on its monitoring port 15014
// (DefaultURL), which lists every proxy connected to that istiod with the state of each xDS
// type: the data `istioctl proxy-status` shows. Parse reads both of its formats:
//
//   - the legacy one (Istio 1.2x and before): a JSON array of objects with the proxy id
//     ("proxy") and, per type, the nonce istiod sent and the one the proxy acknowledged
//     ("listener_sent", "listener_acked", "route_…", "cluster_…", "endpoint_…"). A type is
//     SYNCED when something was sent and the acknowledged nonce is the sent one, NOT_SENT when
//     nothing was sent, and STALE otherwise: istioctl's rule.
//   - the xDS (CSDS) one of newer istiod, which `istioctl x proxy-status` decodes: a JSON
//     object whose "resources" are envoy.service.status.v3.ClientConfig messages, each with
//     its node id ("router~10.0.0.5~POD.NAMESPACE~NAMESPACE.svc.cluster.local", the proxy id
//     being its third field) and a configStatus per typeUrl. Both the camelCase and the
//     snake_case field names protojson may write are read; a configStatus left out is
//     UNKNOWN, the enum's zero value protojson omits.
//
// A proxy id is "POD.NAMESPACE", which Judge matches against the gateway pods of a Service.
// With several istiod replicas, each lists only the proxies connected to it: the caller reads
// every replica and merges what they say (Merge).
// Damper turns the checks of a Service into its health: down at once on a failed check, up
// again after Recovery synced checks in a row.
//
// The package has no Kubernetes dependency: the Kubernetes source finds the ready pods of a
// Service and calls Fetch, Judge and Damper.Observe.
package istiosync

import (
	"fmt"
)

// DefaultURL is istiod's sync status endpoint in a default installation.
const DefaultURL = "http://istiod.istio-system.svc:15014/debug/syncz"

// Type is one of the four xDS configuration types a gateway needs synced.
type Type int

// The xDS types, in the order Synced checks them.
const (
	LDS Type = iota // listeners
	RDS             // routes
	CDS             // clusters
	EDS             // endpoints
)

// typeNames are the names of the Types, indexed by Type.
var typeNames = [...]string{LDS: "LDS", RDS: "RDS", CDS: "CDS", EDS: "EDS"}

// String names t as istioctl does: "LDS", "RDS", "CDS" or "EDS".
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return fmt.Sprintf("Type(%d)", int(t))
	}
	return typeNames[t]
}

// State is the sync state of one xDS type of a proxy: one of the constants below, the values
// of CSDS's configStatus, or another configStatus string istiod sent verbatim (which is not
// synced).
type State string

// The states of an xDS type. Missing is the zero value: istiod gave no status for the type.
const (
	Missing State = ""
	Synced  State = "SYNCED"
	NotSent State = "NOT_SENT"
	Stale   State = "STALE"
	Error   State = "ERROR"
	Unknown State = "UNKNOWN"
)

// String returns s, or "MISSING" for Missing.
func (s State) String() string {
	if s == Missing {
		return "MISSING"
	}
	return string(s)
}

// Proxy is the sync status istiod reported for one proxy.
type Proxy struct {
	// States holds the state of each xDS type, indexed by Type.
	States [len(typeNames)]State
}

// Synced tells whether all of p's listeners, routes, clusters and endpoints are synced; when
// not, the reason names the first type that is not and its state, e.g. "RDS STALE".
func (p Proxy) Synced() (bool, string) {
	for t, s := range p.States {
		if s != Synced {
			return false, fmt.Sprintf("%s %s", Type(t), s)
		}
	}
	return true, "LDS, RDS, CDS and EDS synced"
}

// Merge returns the sync status of several istiod replicas read at once as one: each proxy is
// connected to one replica, which alone lists it; a proxy that more than one lists (it moved
// between reads) has, per type, the best state any gives (Synced first).
func Merge(statuses ...map[string]Proxy) map[string]Proxy {
	out := map[string]Proxy{}
	for _, status := range statuses {
		for id, p := range status {
			have, ok := out[id]
			if !ok {
				out[id] = p
				continue
			}
			for t, st := range p.States {
				if st == Synced || have.States[t] == Missing {
					have.States[t] = st
				}
			}
			out[id] = have
		}
	}
	return out
}

// Judge tells whether every pod of pods ("POD.NAMESPACE", as in a proxy id) is synced in
// status; the reason names the first pod that is not, and why ("no sync status for pod X"
// when istiod does not know it, "pod X: RDS STALE" otherwise). No pods at all is not synced.
// The reasons do not name Istio: the caller prefixes them as its other reasons.
func Judge(status map[string]Proxy, pods []string) (bool, string) {
	if len(pods) == 0 {
		return false, "no ready gateway pod to check the xDS sync status of"
	}
	for _, pod := range pods {
		p, ok := status[pod]
		if !ok {
			return false, fmt.Sprintf("no sync status for pod %s", pod)
		}
		if ok, why := p.Synced(); !ok {
			return false, fmt.Sprintf("pod %s: %s", pod, why)
		}
	}
	return true, fmt.Sprintf("xDS synced with istiod on all gateway pods (%d)", len(pods))
}
