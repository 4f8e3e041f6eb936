package policy

// serveGroup returns the bounds [start, end) in order, which sorts cands by priority, of the
// priority group failover answers with: the first group of at least minHealthy candidates (a
// group with fewer counts as down, as gdnsd's up_thresh), else the first group, so that the
// answer is never empty while a candidate is healthy. A minHealthy of 0 counts as 1.
func serveGroup(cands []Candidate, order []int, minHealthy int) (start, end int) {
	firstEnd := -1
	for start < len(order) {
		end = start + 1
		for end < len(order) && cands[order[end]].Priority == cands[order[start]].Priority {
			end++
		}
		if end-start >= minHealthy {
			return start, end
		}
		if firstEnd < 0 {
			firstEnd = end
		}
		start = end
	}
	return 0, max(firstEnd, 0)
}

// SkippedGroups reports whether failover answers with a worse priority group than the best
// one among the candidates, because the better groups have fewer than Options.MinHealthy.
func (s *Set) SkippedGroups() bool { return s.groupStart > 0 }
