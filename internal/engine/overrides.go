package engine

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
	"github.com/meridian-gslb/meridian/internal/notify"
)

// notifyOverrides sends an override event for each change of the store's overrides since the
// last call (or Open) to the engine's backends: the other blocks that share the store tell of
// theirs.
func (e *Engine) notifyOverrides() {
	e.tellOverrides(e.notified.Changes(e.api.store.List(), time.Now()))
}

// tellOverrides sends the override events of the engine's backends to its webhooks, with
// their records and addresses: the other blocks that share the store tell of theirs.
func (e *Engine) tellOverrides(events []notify.Event) {
	if len(events) == 0 {
		return
	}
	wanted := make(map[string]bool, len(events))
	for _, ev := range events {
		wanted[ev.Key] = true
	}
	names := backendNames(e.Snapshot(), wanted)
	ours := events[:0]
	for _, ev := range events {
		if n, ok := names[ev.Key]; ok {
			ev.Record, ev.Backend = n.record, n.backend
			ours = append(ours, ev)
		}
	}
	if hooks, ok := instanceOf[*notify.Webhooks](e); ok {
		hooks.Overrides(ours)
	}
}

// backendName is a backend's record and address.
type backendName struct{ record, backend string }

// backendNames returns the record and address of the backends of snap whose keys are wanted,
// by key.
func backendNames(snap *catalog.Snapshot, wanted map[string]bool) map[string]backendName {
	names := make(map[string]backendName, len(wanted))
	var buf [128]byte
	for _, r := range snap.Records() {
		for _, b := range r.Backends {
			if key := b.AppendKey(buf[:0]); wanted[string(key)] {
				names[string(key)] = backendName{record: r.Name(), backend: b.Config.Address}
			}
		}
	}
	return names
}
