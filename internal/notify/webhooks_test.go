package notify_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/notify/notifytest"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

func TestOverrideChanges(t *testing.T) {
	then := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := then.Add(time.Minute)
	drain := overlay.Override{Key: "b", Action: overlay.Drain, Starts: then.Add(30 * time.Second), Reason: "maint", By: "ops", Set: then}
	disable := overlay.Override{Key: "a", Action: overlay.Disable, Reason: "broken", By: "ops", Set: then}
	expiring := overlay.Override{Key: "c", Action: overlay.Enable, Expires: now, Set: then}
	type change struct{ key, change, action, by string }
	tests := []struct {
		name   string
		before []overlay.Override
		after  []overlay.Override
		want   []change
	}{
		{name: "nothing changed", before: []overlay.Override{disable}, after: []overlay.Override{disable}},
		{name: "set", after: []overlay.Override{disable}, want: []change{{"a", "set", "disable", "ops"}}},
		{
			name: "replaced", before: []overlay.Override{disable},
			after: []overlay.Override{{Key: "a", Action: overlay.Disable, Reason: "broken", By: "ops", Set: now}},
			want:  []change{{"a", "set", "disable", "ops"}},
		},
		{name: "cleared names no one", before: []overlay.Override{disable}, want: []change{{"a", "cleared", "disable", ""}}},
		{name: "expired", before: []overlay.Override{expiring}, want: []change{{"c", "expired", "enable", ""}}},
		{name: "a drain started", before: []overlay.Override{drain}, after: []overlay.Override{drain}, want: []change{{"b", "started", "drain", "ops"}}},
		{
			name: "sorted by key", before: []overlay.Override{expiring, drain}, after: []overlay.Override{disable, drain},
			want: []change{{"a", "set", "disable", "ops"}, {"b", "started", "drain", "ops"}, {"c", "expired", "enable", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b notify.Baseline
			b.Reset(tt.before, then)
			events := b.Changes(tt.after, now)
			var got []change
			for _, ev := range events {
				if ev.Type != notify.TypeOverride || !ev.Time.Equal(now) {
					t.Errorf("event %+v", ev)
				}
				got = append(got, change{ev.Key, ev.Change, ev.Action, ev.By})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("changes %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWebhookEventsChooseWhatIsSent(t *testing.T) {
	tests := []struct {
		name                   string
		transitions, overrides bool
		want                   []string
	}{
		{"both", true, true, []string{"transition", "override"}},
		{"transitions", true, false, []string{"transition"}},
		{"overrides", false, true, []string{"override"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := notifytest.NewReceiver(t)
			w := notify.NewWebhooks("")
			o := config.WebhookOptions{URLs: []string{r.URL}, Timeout: time.Second, Transitions: tt.transitions, Overrides: tt.overrides}
			w.Configure(o, "", &testutil.Log{})
			w.Start()
			w.Transition(health.Transition{Key: "k", From: health.Up, To: health.Down})
			w.Overrides([]notify.Event{{Type: notify.TypeOverride, Key: "k", Change: notify.ChangeSet}})
			w.Stop()
			var got []string
			for _, req := range r.Requests() {
				got = append(got, req.Event.Type)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("events %v, want %v", got, tt.want)
			}
		})
	}
}
