package health

import "testing"

func TestMachineRiseFall(t *testing.T) {
	tests := []struct {
		name       string
		rise, fall int
		results    string // '+' success, '-' failure
		want       string // status after each result: U unknown, u up, d down
		since      int64  // the result the last run began with (each result starts at its index)
	}{
		{"first success sets up", 2, 3, "+", "u", 0},
		{"first failure sets down", 2, 3, "-", "d", 0},
		{"falls after three failures: since the first", 2, 3, "+---", "uuud", 1},
		{"a success resets the failure count", 2, 3, "+--+--", "uuuuuu", 4},
		{"rises after two successes", 2, 3, "-++", "ddu", 1},
		{"a failure resets the success count", 2, 3, "-+-++", "ddddu", 3},
		{"flapping never moves", 3, 3, "+-+-+-", "uuuuuu", 5},
		{"rise and fall of one", 1, 1, "+-+-", "udud", 3},
		{"zero thresholds count as one", 0, 0, "+-", "ud", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMachine(tt.rise, tt.fall)
			if m.status != Unknown {
				t.Fatalf("starts %s, want unknown", m.status)
			}
			for i, r := range tt.results {
				m.observe(r == '+', int64(i))
				got := map[Status]byte{Unknown: 'U', Up: 'u', Down: 'd'}[m.status]
				if got != tt.want[i] {
					t.Fatalf("after result %d (%s): %c, want %c", i+1, tt.results[:i+1], got, tt.want[i])
				}
			}
			if m.since != tt.since {
				t.Errorf("the last run began with result %d, want %d", m.since, tt.since)
			}
		})
	}
}

func TestCombine(t *testing.T) {
	tests := []struct {
		in   []Status
		want Status
	}{
		{[]Status{Up, Up}, Up},
		{[]Status{Up, Unknown}, Unknown},
		{[]Status{Unknown, Down}, Down},
		{[]Status{Up, Down}, Down},
		{nil, Up},
	}
	for _, tt := range tests {
		if got := combine(tt.in); got != tt.want {
			t.Errorf("combine(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
