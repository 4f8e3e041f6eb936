package gslb

import (
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseWebhookOptions(t *testing.T) {
	const head = "gslb {\n zone example.org. a.yml\n"
	tests := []struct {
		name    string
		lines   string
		want    config.WebhookOptions
		wantErr string
	}{
		{name: "defaults", want: config.WebhookOptions{Timeout: 5 * time.Second, Transitions: true, Overrides: true, Drills: true, Shifts: true, Canaries: true}},
		{
			name:  "every option",
			lines: " webhook https://hooks.example.net/meridian?token=x\n webhook http://127.0.0.1:9000/\n webhook_secret \"s3 cret\"\n webhook_timeout 2s\n webhook_events overrides\n",
			want: config.WebhookOptions{URLs: []string{"https://hooks.example.net/meridian?token=x", "http://127.0.0.1:9000/"},
				Secret: "s3 cret", Timeout: 2 * time.Second, Overrides: true},
		},
		{name: "drills only", lines: " webhook http://h/\n webhook_events drills\n", want: config.WebhookOptions{URLs: []string{"http://h/"}, Timeout: 5 * time.Second, Drills: true}},
		{name: "both events", lines: " webhook http://h/\n webhook_events transitions overrides\n", want: config.WebhookOptions{URLs: []string{"http://h/"}, Timeout: 5 * time.Second, Transitions: true, Overrides: true}},
		{name: "transitions only, timeout in seconds", lines: " webhook http://h/\n webhook_events transitions\n webhook_timeout 10\n", want: config.WebhookOptions{URLs: []string{"http://h/"}, Timeout: 10 * time.Second, Transitions: true}},
		{name: "not http", lines: " webhook ftp://h/x\n", wantErr: `Testfile:3 - Error during parsing: webhook: "ftp://h/x" is not an http:// or https:// URL`},
		{name: "no host", lines: " webhook http:///x\n", wantErr: "Testfile:3 - Error during parsing: webhook: \"http:///x\" is not an http:// or https:// URL with a host"},
		{name: "relative", lines: " webhook hooks.example.net/x\n", wantErr: "webhook: \"hooks.example.net/x\" is not an http"},
		{name: "not a URL", lines: " webhook http://[::1\n", wantErr: "webhook: \"http://[::1\" is not a URL"},
		{name: "twice", lines: " webhook http://h/\n webhook http://h/\n", wantErr: "Testfile:4 - Error during parsing: webhook: http://h/ is given twice"},
		{name: "webhook arity", lines: " webhook http://a/ http://b/\n", wantErr: "webhook: want one argument, got 2"},
		{name: "secret arity", lines: " webhook_secret\n", wantErr: "webhook_secret: want one argument, got 0"},
		{name: "timeout too short", lines: " webhook_timeout 1ms\n", wantErr: "Testfile:3 - Error during parsing: webhook_timeout: 1ms is shorter than 10ms"},
		{name: "timeout not a duration", lines: " webhook_timeout soon\n", wantErr: "webhook_timeout:"},
		{name: "unknown event", lines: " webhook_events transitions reloads\n", wantErr: `webhook_events: unknown event "reloads"`},
		{name: "no event", lines: " webhook_events\n", wantErr: "webhook_events: want one or more of transitions, overrides, drills, shifts, canaries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, head+tt.lines+"}", nil, "", tt.wantErr)
			if ok && !b.Options.Webhooks.Equal(tt.want) {
				t.Errorf("webhooks %+v, want %+v", b.Options.Webhooks, tt.want)
			}
		})
	}
}
