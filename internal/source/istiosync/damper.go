package istiosync

import "sync"

// Recovery is the number of synced checks in a row after which a key that failed is healthy
// again.
const Recovery = 3

// Damper turns the sync checks of each key (the Kubernetes source uses a Service's
// "namespace/name") into its health: unhealthy at once on a check that is not synced, healthy
// again only after Recovery synced checks in a row. A key's first check decides alone: synced,
// it is healthy at once, so that gateways already synced when Meridian starts do not wait
// Recovery rounds; not synced, it needs Recovery synced checks like any other failure.
//
// The zero Damper is ready to use, and safe for concurrent use. It must not be copied after
// first use.
type Damper struct {
	mu   sync.Mutex
	keys map[string]*damped
}

// damped is the health of one key of a Damper.
type damped struct {
	healthy bool
	streak  int // synced checks in a row since the key was last unhealthy
}

// Observe records a check of key and returns key's health after it.
func (d *Damper) Observe(key string, synced bool) (healthy bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k, seen := d.keys[key]
	switch {
	case !seen:
		if d.keys == nil {
			d.keys = make(map[string]*damped)
		}
		k = &damped{healthy: synced}
		d.keys[key] = k
	case !synced:
		k.healthy, k.streak = false, 0
	case !k.healthy:
		k.streak++
		k.healthy = k.streak >= Recovery
	}
	return k.healthy
}

// Forget drops the keys for which keep returns false, as if they had never been observed.
func (d *Damper) Forget(keep func(key string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key := range d.keys {
		if !keep(key) {
			delete(d.keys, key)
		}
	}
}
