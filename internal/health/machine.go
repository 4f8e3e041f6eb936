package health

// machine is the rise/fall damping of one check of one backend. The first result sets the
// status directly; after that it takes rise consecutive successes to go up and fall
// consecutive failures to go down.
type machine struct {
	rise, fall int
	status     Status
	successes  int // consecutive, while not up
	failures   int // consecutive, while not down
}

func newMachine(rise, fall int) machine {
	return machine{rise: max(rise, 1), fall: max(fall, 1)}
}

// observe applies one raw result and reports whether the status changed.
func (m *machine) observe(ok bool) (changed bool) {
	before := m.status
	if ok {
		m.failures = 0
		m.successes++
		if m.status == Unknown || m.successes >= m.rise {
			m.status = Up
		}
	} else {
		m.successes = 0
		m.failures++
		if m.status == Unknown || m.failures >= m.fall {
			m.status = Down
		}
	}
	if m.status != before {
		m.successes, m.failures = 0, 0
	}
	return m.status != before
}

// combine returns a backend's status from its checks' statuses: up when every check is up,
// down when any is down, unknown otherwise.
func combine(statuses []Status) Status {
	all := Up
	for _, s := range statuses {
		switch s {
		case Down:
			return Down
		case Unknown:
			all = Unknown
		}
	}
	return all
}
