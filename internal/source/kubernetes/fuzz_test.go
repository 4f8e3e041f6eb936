package kubernetes

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meridian-gslb/meridian/internal/config"
)

// FuzzAnnotated feeds arbitrary annotation values to annotated: it never panics, and what it
// accepts is a backend of valid records that stands for the object.
func FuzzAnnotated(f *testing.F) {
	f.Add("app.example.org., new.example.org", "3", "1", "eu", "a,b", "all", "weighted", "60")
	f.Add("", "-1", "x", "", ",,", "most", "nope", "99999999999")
	f.Fuzz(func(t *testing.T, record, weight, priority, location, services, policy, mode, ttl string) {
		ann := map[string]string{AnnotationRecord: record, AnnotationWeight: weight, AnnotationPriority: priority, AnnotationLocation: location,
			AnnotationServices: services, AnnotationPolicy: policy, AnnotationMode: mode, AnnotationTTL: ttl}
		ref := config.KubernetesRef{Namespace: "shop", Kind: config.KindService, Name: "web"}
		adds, err := annotated(ref, ann)
		if err != nil {
			return
		}
		for _, a := range adds {
			if config.CheckRecordName(a.record) != nil || len(a.backends) != 1 || a.backends[0].Kubernetes() == nil || a.backends[0].Kubernetes().Name != "web" || a.backends[0].Weight < 0 {
				t.Fatalf("accepted %+v", a)
			}
		}
	})
}

// FuzzStrategy feeds arbitrary JSON as a Gslb's spec to parseStrategy: it never panics, and
// what it accepts has a mode and no negative weight.
func FuzzStrategy(f *testing.F) {
	f.Add(`{"strategy": {"type": "roundRobin", "weight": {"eu": 5, "us": "30%"}, "dnsTtlSeconds": 30}, "serviceHealthPolicy": "All"}`)
	f.Add(`{"strategy": {"type": "failover", "primaryGeoTag": "eu", "splitBrainThresholdSeconds": 9223372036854775807}}`)
	f.Add(`{"strategy": {"type": "geoip", "weight": {"eu": -1}}}`)
	f.Fuzz(func(t *testing.T, spec string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(`{"apiVersion": "k8gb.io/v1beta1", "kind": "Gslb", "metadata": {"name": "g"}, "spec": ` + spec + `}`)); err != nil {
			return
		}
		s, err := parseStrategy(u)
		if err != nil {
			return
		}
		if s.mode == "" || s.splitBrain < 0 {
			t.Fatalf("accepted %+v", s)
		}
		for tag, w := range s.weights {
			if w < 0 {
				t.Fatalf("weight %d for %s", w, tag)
			}
		}
	})
}
