package health

import "testing"

func TestReasonClass(t *testing.T) {
	tests := map[string]string{
		"http 503":                                     "status",
		`http 200, body does not match "ok"`:           "mismatch",
		"dns rcode REFUSED":                            "status",
		"dns rcode NOERROR, expected NXDOMAIN":         "status",
		"connect: connection refused":                  "refused",
		"grpc unavailable: connection refused":         "refused",
		"grpc NOT_SERVING":                             "status",
		"timeout after 5s":                             "timeout",
		"read: connection reset by peer":               "reset",
		"connect: no route to host":                    "unreachable",
		"tls: certificate signed by unknown authority": "tls",
		`tcp: expect "x" not matched`:                  "mismatch",
		"exit status 2":                                "status",
		"icmp: no reply from 192.0.2.1 after 1s":       "timeout",
		"lua: attempt to call a nil value":             "other",
	}
	for reason, want := range tests {
		if got := reasonClass(reason); got != want {
			t.Errorf("reasonClass(%q) = %q, want %q", reason, got, want)
		}
	}
}
