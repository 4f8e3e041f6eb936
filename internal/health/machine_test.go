package health

import "testing"

func TestMachineRiseFall(t *testing.T) {
	tests := []struct {
		name       string
		rise, fall int
		results    string // '+' success, '-' failure
		want       string // status after each result: U unknown, u up, d down
	}{
		{"first success sets up", 2, 3, "+", "u"},
		{"first failure sets down", 2, 3, "-", "d"},
		{"falls after three failures", 2, 3, "+---", "uuud"},
		{"a success resets the failure count", 2, 3, "+--+--", "uuuuuu"},
		{"rises after two successes", 2, 3, "-++", "ddu"},
		{"a failure resets the success count", 2, 3, "-+-++", "ddddu"},
		{"flapping never moves", 3, 3, "+-+-+-", "uuuuuu"},
		{"rise and fall of one", 1, 1, "+-+-", "udud"},
		{"zero thresholds count as one", 0, 0, "+-", "ud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMachine(tt.rise, tt.fall)
			if m.status != Unknown {
				t.Fatalf("starts %s, want unknown", m.status)
			}
			for i, r := range tt.results {
				m.observe(r == '+')
				got := map[Status]byte{Unknown: 'U', Up: 'u', Down: 'd'}[m.status]
				if got != tt.want[i] {
					t.Fatalf("after result %d (%s): %c, want %c", i+1, tt.results[:i+1], got, tt.want[i])
				}
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
