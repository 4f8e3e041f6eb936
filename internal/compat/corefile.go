package compat

import (
	"github.com/meridian-gslb/meridian/internal/config"
)

// apiDefault: CoreDNS-GSLB serves its API unless told not to, on every address, and lets
// anyone in without credentials; Meridian serves it only when asked, on loopback, and refuses
// an address that is not loopback without authentication.
func apiDefault(b Block, _ []*config.Zone) []Difference {
	switch {
	case !b.written("api_enable"):
		return []Difference{{
			Where: b.at("gslb"), Topic: "api_enable",
			CG:       "serves its HTTP API on 0.0.0.0:8080 by default",
			Meridian: "serves no admin API unless api_enable is set",
			Change:   "write api_enable (it listens on 127.0.0.1:8080; set api_listen_addr and api_token or api_basic_user/api_basic_pass to serve other addresses)",
		}}
	case b.Options.API.Enable && !b.written("api_listen_addr"):
		return []Difference{{
			Where: b.at("api_enable"), Topic: "api_listen_addr",
			CG:       "listens on 0.0.0.0 by default",
			Meridian: "listens on " + config.DefaultAPIListenAddr + " by default",
			Change:   "write api_listen_addr 0.0.0.0 with api_token or api_basic_user/api_basic_pass (or api_allow_unauthenticated)",
		}}
	}
	return nil
}

// metricsDefault: CoreDNS-GSLB always exports its gslb_* metrics; Meridian exports them (and
// counts the answers they need) only with coredns_gslb_metrics, since they cost several series
// per backend and work on every answer.
func metricsDefault(b Block, _ []*config.Zone) []Difference {
	if b.written("coredns_gslb_metrics") {
		return nil
	}
	return []Difference{{
		Where: b.at("gslb"), Topic: "coredns_gslb_metrics",
		CG:       "exports its gslb_* metrics and coredns_gslb_record_health_status, which its Grafana dashboard and route-health-injection script read",
		Meridian: "exports only its own coredns_gslb_* metrics unless coredns_gslb_metrics is set",
		Change:   "write coredns_gslb_metrics to export CoreDNS-GSLB's metrics as well",
	}}
}

// txtDefault: CoreDNS-GSLB answers TXT queries of its records with a line per backend unless
// disable_txt is set; Meridian does so only with enable_txt, since the lines disclose the
// inventory.
func txtDefault(b Block, _ []*config.Zone) []Difference {
	if b.written("disable_txt", "enable_txt") {
		return nil
	}
	return []Difference{{
		Where: b.at("gslb"), Topic: "disable_txt",
		CG:       "answers TXT queries of GSLB records with each backend's address, priority and state unless disable_txt is set",
		Meridian: "answers them only with enable_txt (the lines disclose the backends)",
		Change:   "write enable_txt to answer them",
	}}
}
