package catalog

import (
	"runtime"
	"slices"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/parts"
)

// batchHealthSource is a HealthSource that hands out many words at once and is safe for
// concurrent use (health.Manager): a build then asks for the words of many backends at a
// time, and builds a big zone's records on every core.
type batchHealthSource interface {
	HealthSource
	States(keys []string, states []*health.State)
}

// minBuildPart is the fewest records that a part of a build (addRecords) has: fewer are built
// sooner than a goroutine starts.
const minBuildPart = 8192

// stateBatch is how many backends' words a part of a build asks a batchHealthSource for at
// once.
const stateBatch = 256

// addRecords builds the records of rcs, in zone z, and adds them to s and z in order: in as
// many parts as there are cores (parts.Run) when hs is a batchHealthSource, on this goroutine
// otherwise.
func (s *Snapshot) addRecords(z *Zone, rcs []config.Record, hs HealthSource) {
	start := len(s.records)
	s.records = slices.Grow(s.records, len(rcs))[:start+len(rcs)]
	recs := s.records[start:]
	bs, batched := hs.(batchHealthSource)
	n := 1
	if batched {
		n = max(1, min(runtime.GOMAXPROCS(0), len(rcs)/minBuildPart))
	}
	parts.Run(n, func(i int) {
		words := stateWords{hs: hs}
		if batched {
			words.batch = bs
		}
		for j := i * len(rcs) / n; j < (i+1)*len(rcs)/n; j++ {
			recs[j] = newRecord(z, &rcs[j], &words)
		}
		words.flush()
	})
	for _, r := range recs {
		z.add(r)
	}
}

// stateWords gives backends their health words: at once from hs, or from batch in batches of
// stateBatch (the backends' words are set when their batch is full, and by flush).
type stateWords struct {
	hs    HealthSource
	batch batchHealthSource // nil: one at a time
	keys  []string
	into  []**health.State
	words []*health.State
}

// set sets *into to the health word of key, now or by the next flush.
func (w *stateWords) set(key string, into **health.State) {
	if w.batch == nil {
		*into = w.hs.State(key)
		return
	}
	w.keys = append(w.keys, key)
	w.into = append(w.into, into)
	if len(w.keys) == stateBatch {
		w.flush()
	}
}

// flush sets the words set asked for since the last flush.
func (w *stateWords) flush() {
	if len(w.keys) == 0 {
		return
	}
	w.words = slices.Grow(w.words[:0], len(w.keys))[:len(w.keys)]
	w.batch.States(w.keys, w.words)
	for i, word := range w.words {
		*w.into[i] = word
	}
	clear(w.keys)
	clear(w.into)
	clear(w.words)
	w.keys, w.into, w.words = w.keys[:0], w.into[:0], w.words[:0]
}
