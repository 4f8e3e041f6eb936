package kubernetes

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

// addition is a record, or backends of a record, that a Kubernetes object stands for: an
// object annotated meridian.io/record, or a host of a Gslb resource.
type addition struct {
	// record is the record's canonical name.
	record string
	// mode and ttl (0: the default) are the settings of the record, when it is created.
	mode config.Mode
	ttl  uint32
	// splitBrain is the record's split-brain threshold, 0 for the block's.
	splitBrain time.Duration
	// backends are added to the record.
	backends []config.Backend
	// from names the object, for the logs.
	from string
	// exclusive is set for a Gslb's host: a record of that name in the zone files wins, and the
	// host is not served from the Gslb.
	exclusive bool
	// host is the Gslb's host the addition serves, nil for an annotation.
	host *gslbHost
	// relative is set for a single label (gslb.tetrate.io/name's Gateway set): the record is
	// the label in each zone of the block.
	relative bool
}

// additionsLocked returns what the annotated objects and the Gslb resources add to the zones,
// in a stable order, and a fingerprint of it (and of the ZoneDelegations' zones) that changes
// when it does.
func (w *Watcher) additionsLocked() ([]addition, string) {
	adds := w.annotatedLocked()
	if w.opts.K8gb {
		adds = append(adds, w.gslbAdditionsLocked()...)
	}
	var b strings.Builder
	for _, zd := range w.zoneDelegationsLocked() {
		fmt.Fprintf(&b, "zone %+v\n", zd)
	}
	for _, a := range adds {
		fmt.Fprintf(&b, "%s %s %d %s %v;", a.record, a.mode, a.ttl, a.splitBrain, a.exclusive)
		for _, be := range a.backends {
			fmt.Fprintf(&b, "%s %s %d %d %s,", kubernetesKey(be), be.Site(), be.Priority, be.Weight, be.Labels().Location)
		}
		b.WriteByte('\n')
	}
	return adds, b.String()
}

// kubernetesKey returns the key of b's Kubernetes object, empty when it has none.
func kubernetesKey(b config.Backend) string {
	if b.Kubernetes() == nil {
		return ""
	}
	return b.Kubernetes().Key()
}

// addLocked returns zones with adds applied, and the Gslb hosts served. An addition goes to
// the zone with the longest origin that holds its record: to the record of the zone files,
// whose backends it extends (a Gslb's host conflicts with it instead, and is logged), or to
// a record it creates. A record no zone holds is logged.
func (w *Watcher) addLocked(zones []*config.Zone, adds []addition) ([]*config.Zone, []*gslb) {
	out := slices.Clone(zones)
	copied := make([]bool, len(zones))
	adds = relativeToZones(adds, zones)
	for _, a := range adds {
		zi := zoneOf(out, a.record)
		if zi < 0 {
			w.warnOnce(a.from+" "+a.record, "kubernetes: %s: no zone of this server holds %s; it is not served", a.from, a.record)
			continue
		}
		if !copied[zi] {
			zc := *out[zi]
			zc.Records = slices.Clip(slices.Clone(zc.Records))
			out[zi], copied[zi] = &zc, true
		}
		z := out[zi]
		ri := slices.IndexFunc(z.Records, func(r config.Record) bool { return r.Name == a.record })
		switch {
		case ri >= 0 && a.exclusive:
			w.warnOnce(a.from+" "+a.record, "kubernetes: %s: the zone files already have the record %s; the Gslb does not serve it", a.from, a.record)
			continue
		case ri >= 0:
			r := &z.Records[ri]
			r.Backends = append(slices.Clip(r.Backends), a.backends...)
		default:
			rec := config.NewRecord(a.record, a.mode, config.InFile(a.from))
			if a.ttl > 0 {
				rec.TTL = a.ttl
			}
			if a.splitBrain > 0 || a.host != nil {
				settings := *rec.Settings() // shared with the other new records: change a copy
				if a.splitBrain > 0 {
					settings.SplitBrainThreshold = a.splitBrain
				}
				if a.host != nil {
					settings.Fallback = gslbFallback // k8gb answers nothing when no cluster is healthy
				}
				rec.SetSettings(settings)
			}
			if a.host != nil {
				steering := *rec.Steering()
				steering.ZeroWeightIdle = true // k8gb's weight 0 takes no traffic
				rec.SetSteering(steering)
			}
			rec.Backends = a.backends
			z.Records = append(z.Records, rec)
		}
		if a.host != nil {
			a.host.served = true
		}
	}
	var gslbs []*gslb
	for _, a := range adds {
		if a.host != nil && (len(gslbs) == 0 || gslbs[len(gslbs)-1] != a.host.gslb) {
			gslbs = append(gslbs, a.host.gslb)
		}
	}
	return out, gslbs
}

// relativeToZones returns adds with each relative one (a single label) made the record of
// that label in each of zones.
func relativeToZones(adds []addition, zones []*config.Zone) []addition {
	if !slices.ContainsFunc(adds, func(a addition) bool { return a.relative }) {
		return adds
	}
	out := make([]addition, 0, len(adds))
	for _, a := range adds {
		if !a.relative {
			out = append(out, a)
			continue
		}
		for _, z := range zones {
			b := a
			b.record, b.relative = a.record+strings.TrimPrefix(z.Origin, "."), false
			if z.Origin == "." {
				b.record = a.record
			}
			out = append(out, b)
		}
	}
	return out
}

// zoneOf returns the index of the zone with the longest origin that holds name, -1 if none.
func zoneOf(zones []*config.Zone, name string) int {
	best := -1
	for i, z := range zones {
		if (name == z.Origin || strings.HasSuffix(name, "."+z.Origin) || z.Origin == ".") && (best < 0 || len(z.Origin) > len(zones[best].Origin)) {
			best = i
		}
	}
	return best
}

// warnOnce logs a warning the first time key has it; a key whose warning changes logs again.
func (w *Watcher) warnOnce(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if w.warned[key] == msg {
		return
	}
	if w.warned == nil {
		w.warned = map[string]string{}
	}
	w.warned[key] = msg
	w.log.Warningf("%s", msg)
}
