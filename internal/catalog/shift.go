package catalog

import "github.com/meridian-gslb/meridian/internal/policy"

// The weights of a staged shift (package shift): a backend's weight in place of its
// configured one while a shift moves its record's traffic, kept in the word of its override.

// SetShiftWeight gives the backend the weight w in place of its configured one, while a shift
// moves its record's traffic (w from 0 to MaxShiftWeight; 0 takes it out of the selection while
// another candidate has weight), or none with w < 0, and reports whether it changed. Call the
// record's Refresh afterwards.
func (b *Backend) SetShiftWeight(w int) bool {
	var bits int32
	if w >= 0 {
		bits = int32(min(w, MaxShiftWeight)+1) << 8
	}
	for {
		old := b.override.Load()
		if b.override.CompareAndSwap(old, old&overrideMask|bits) {
			return old&^overrideMask != bits
		}
	}
}

// ShiftWeight returns the weight a shift gives the backend, and false when none does.
func (b *Backend) ShiftWeight() (int, bool) {
	bits := b.override.Load() >> 8
	return int(bits - 1), bits != 0
}

// Weight returns the backend's weight: a shift's, else its configuration's.
func (b *Backend) Weight() int {
	if w, ok := b.ShiftWeight(); ok {
		return w
	}
	return int(b.Config.Weight)
}

// SteersByWeight reports whether the record's selection follows its backends' weights: mode
// weighted, or a chain that ends in a weighted or hash step. A shift moves such a record's
// traffic by its weights.
func (r *Record) SteersByWeight() bool { return r.rampsWeights() }

// shiftIdle leaves out of healthy (and cands, in the same order) the backends a shift gives a
// weight of 0 while another candidate has weight: they take no traffic, but stay enabled (a
// fail-open answer serves them).
func shiftIdle(healthy []*Backend, cands []policy.Candidate) ([]*Backend, []policy.Candidate) {
	idle, weighted := false, false
	for i, b := range healthy {
		w, shifted := b.ShiftWeight()
		idle = idle || shifted && w == 0
		weighted = weighted || cands[i].Weight > 0
	}
	if !idle || !weighted {
		return healthy, cands
	}
	n := 0
	for i, b := range healthy {
		if w, shifted := b.ShiftWeight(); shifted && w == 0 {
			continue
		}
		healthy[n], cands[n] = b, cands[i]
		n++
	}
	return healthy[:n], cands[:n]
}

// Serves reports whether the backend answers queries of family f: an address of it, or a
// host name (answered as CNAME in both).
func (b *Backend) Serves(f Family) bool { return b.inFamily(f) }
