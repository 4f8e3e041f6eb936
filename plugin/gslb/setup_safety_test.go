package gslb

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestParseDrills(t *testing.T) {
	const head = "gslb {\n zone example.org. a.yml\n"
	tests := []struct {
		name    string
		lines   string
		want    []config.Drill
		wantErr string
	}{
		{name: "none"},
		{name: "two", lines: " drill eu-down 24h down site:eu down 192.0.2.9\n drill primaries 168h primaries drained location:us\n",
			want: []config.Drill{{Name: "eu-down", Every: 24 * time.Hour, Down: []string{"site:eu", "192.0.2.9"}},
				{Name: "primaries", Every: 168 * time.Hour, Primaries: true, Drained: []string{"location:us"}}}},
		{name: "live", lines: " api_enable\n drill eu-live 1h drained site:eu live 5m\n",
			want: []config.Drill{{Name: "eu-live", Every: time.Hour, Drained: []string{"site:eu"}, Live: 5 * time.Minute}}},
		{name: "live without the API", lines: " drill eu-live 1h drained site:eu live 5m\n", wantErr: "Testfile:3 - Error during parsing: drill eu-live is live: it drains through the admin API, which needs api_enable"},
		{name: "live that drains nothing", lines: " api_enable\n drill x 1h down site:eu live 5m\n", wantErr: "live drill x drains nothing"},
		{name: "live as long as the interval", lines: " api_enable\n drill x 1h drained site:eu live 1h\n", wantErr: "lasts 1h0m0s, not less than its interval"},
		{name: "supposes nothing", lines: " drill x 1h\n", wantErr: "drill: want NAME EVERY and what to suppose"},
		{name: "an unknown word", lines: " drill x 1h sideways site:eu\n", wantErr: `drill: unknown word "sideways"`},
		{name: "a word without its value", lines: " drill x 1h down\n", wantErr: "drill: down: want a value after it"},
		{name: "too often", lines: " drill x 10ms down site:eu\n", wantErr: `every "10ms": want a duration of at least 1s`},
		{name: "a bad name", lines: " drill EU 1h down site:eu\n", wantErr: `name "EU"`},
		{name: "twice", lines: " drill x 1h down a\n drill x 2h down b\n", wantErr: "Testfile:4 - Error during parsing: drill: x is given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, head+tt.lines+"}", nil, "", tt.wantErr)
			if ok && !slices.EqualFunc(b.Options.Safety.Drills, tt.want, func(a, b config.Drill) bool { return a.String() == b.String() }) {
				t.Errorf("drills %v, want %v", b.Options.Safety.Drills, tt.want)
			}
		})
	}
}

func TestParseCanaries(t *testing.T) {
	const head = "gslb {\n zone example.org. a.yml\n"
	tests := []struct {
		name    string
		lines   string
		want    string // the options, %+v
		wantErr string
	}{
		{name: "none", want: "{Resolvers:[] Names:[] ECS:[] Parents:[] Interval:0s}"},
		{name: "every option", lines: " canary_resolver 9.9.9.9 [2001:db8::53]:5353\n canary_resolver resolver.example.net\n canary_name www.example.org WWW2.example.org.\n" +
			" canary_ecs 198.51.100.7/24\n canary_parent 192.0.2.1\n canary_interval 30s\n",
			want: "{Resolvers:[9.9.9.9:53 [2001:db8::53]:5353 resolver.example.net:53] Names:[www.example.org. www2.example.org.] ECS:[198.51.100.0/24] Parents:[192.0.2.1:53] Interval:30s}"},
		{name: "a parent alone", lines: " canary_parent 192.0.2.1\n", want: "{Resolvers:[] Names:[] ECS:[] Parents:[192.0.2.1:53] Interval:0s}"},
		{name: "a name asked of no resolver", lines: " canary_name www.example.org\n", wantErr: "canary_name is asked of no resolver"},
		{name: "a resolver asked nothing", lines: " canary_resolver 9.9.9.9\n", wantErr: "canary_resolver asks no name"},
		{name: "a name of another zone", lines: " canary_resolver 9.9.9.9\n canary_name www.example.net\n", wantErr: "canary_name www.example.net. is in none of the block's zones"},
		{name: "a bad subnet", lines: " canary_ecs 198.51.100.7\n", wantErr: `canary_ecs: "198.51.100.7" is not a prefix`},
		{name: "a bad address", lines: " canary_resolver 2001:db8::53\n", wantErr: "canary_resolver: \"2001:db8::53\": not ADDRESS[:PORT]"},
		{name: "too often", lines: " canary_interval 10ms\n", wantErr: "canary_interval: 10ms is shorter than 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := parseBlockWant(t, head+tt.lines+"}", nil, "", tt.wantErr)
			if ok {
				o := b.Options.Safety.Canary
				got := fmt.Sprintf("{Resolvers:%v Names:%v ECS:%v Parents:%v Interval:%v}", o.Resolvers, o.Names, o.ECS, o.Parents, o.Interval)
				if got != tt.want {
					t.Errorf("canaries %s, want %s", got, tt.want)
				}
			}
		})
	}
}
