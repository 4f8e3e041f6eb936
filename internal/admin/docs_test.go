package admin

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// metricName finds the metrics a query uses; a histogram's series end in _bucket, _sum, _count.
var metricName = regexp.MustCompile(`\bcoredns_[a-z_]+`)

// TestMonitoringFiles checks that the Grafana dashboard and the alert rules in docs/ parse, and
// that every metric they use is documented.
func TestMonitoringFiles(t *testing.T) {
	documented := ""
	for _, f := range []string{"../../docs/metrics.md", "../../docs/api.md"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		documented += string(data)
	}
	used := func(where, expr string) {
		if strings.TrimSpace(expr) == "" {
			t.Errorf("%s: empty expression", where)
		}
		for _, m := range metricName.FindAllString(expr, -1) {
			if name := strings.TrimSuffix(m, "_bucket"); !strings.Contains(documented, "`"+name) {
				t.Errorf("%s uses %s, which docs/metrics.md and docs/api.md do not document", where, name)
			}
		}
	}

	data, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	queries := 0
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			used("panel "+p.Title, q.Expr)
			queries++
		}
	}
	if dash.UID == "" || queries < 10 {
		t.Errorf("dashboard uid %q with %d queries", dash.UID, queries)
	}

	data, err = os.ReadFile("../../docs/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("group %s: rule %q lacks a name, a severity or a summary", g.Name, r.Alert)
			}
			used("alert "+r.Alert, r.Expr)
			alerts++
		}
	}
	if alerts < 5 {
		t.Errorf("%d alert rules", alerts)
	}
	// Every alert that operations.md explains exists.
	ops, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("`(GSLB[A-Za-z]+)`").FindAllStringSubmatch(string(ops), -1) {
		if !strings.Contains(string(data), "alert: "+m[1]+"\n") {
			t.Errorf("operations.md explains %s, which alerts.yml does not have", m[1])
		}
	}
}
