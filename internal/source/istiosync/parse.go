package istiosync

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// clientConfigType is the @type of the resources of a CSDS sync status.
const clientConfigType = "type.googleapis.com/envoy.service.status.v3.ClientConfig"

// typeURLs maps the typeUrl of a CSDS configuration to its Type.
var typeURLs = map[string]Type{
	"type.googleapis.com/envoy.config.listener.v3.Listener":              LDS,
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration":       RDS,
	"type.googleapis.com/envoy.config.cluster.v3.Cluster":                CDS,
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment": EDS,
}

// configStatuses are the values of envoy.service.status.v3.ConfigStatus by number, which
// protojson accepts in place of the names.
var configStatuses = [...]State{0: Unknown, 1: Synced, 2: NotSent, 3: Stale, 4: Error}

// Parse reads a /debug/syncz body, in either of its formats (see the package doc), into the
// status of each proxy by id ("POD.NAMESPACE"). Entries without a proxy id, resources of
// another @type and configurations of other xDS types are skipped. When a proxy id appears
// twice (one pod name in two clusters), an entry that is not synced wins over one that is, so
// that a doubt never makes a pod healthy.
func Parse(body []byte) (map[string]Proxy, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("sync status: empty body")
	}
	var (
		status map[string]Proxy
		err    error
	)
	switch trimmed[0] {
	case '[':
		status, err = parseLegacy(body)
	case '{':
		status, err = parseCSDS(body)
	default:
		return nil, errors.New("sync status: neither a JSON array (legacy format) nor a JSON object (xDS format)")
	}
	if err != nil {
		return nil, fmt.Errorf("sync status: %w", err)
	}
	return status, nil
}

// add records p as the status of id in status, unless id already has one that is not synced.
func add(status map[string]Proxy, id string, p Proxy) {
	if old, ok := status[id]; ok {
		if synced, _ := old.Synced(); !synced {
			return
		}
	}
	status[id] = p
}

// legacyStatus is one proxy of the legacy format.
type legacyStatus struct {
	Proxy         string `json:"proxy"`
	ListenerSent  string `json:"listener_sent"`
	ListenerAcked string `json:"listener_acked"`
	RouteSent     string `json:"route_sent"`
	RouteAcked    string `json:"route_acked"`
	ClusterSent   string `json:"cluster_sent"`
	ClusterAcked  string `json:"cluster_acked"`
	EndpointSent  string `json:"endpoint_sent"`
	EndpointAcked string `json:"endpoint_acked"`
}

// parseLegacy reads the legacy format: a JSON array of legacyStatus.
func parseLegacy(body []byte) (map[string]Proxy, error) {
	var list []legacyStatus
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("legacy format: %w", err)
	}
	status := make(map[string]Proxy, len(list))
	for _, l := range list {
		if l.Proxy == "" {
			continue
		}
		var p Proxy
		p.States[LDS] = nonceState(l.ListenerSent, l.ListenerAcked)
		p.States[RDS] = nonceState(l.RouteSent, l.RouteAcked)
		p.States[CDS] = nonceState(l.ClusterSent, l.ClusterAcked)
		p.States[EDS] = nonceState(l.EndpointSent, l.EndpointAcked)
		add(status, l.Proxy, p)
	}
	return status, nil
}

// nonceState is istioctl's rule for the legacy format: NOT_SENT when istiod sent nothing,
// SYNCED when the proxy acknowledged what it sent, STALE otherwise.
func nonceState(sent, acked string) State {
	switch {
	case sent == "":
		return NotSent
	case acked == sent:
		return Synced
	default:
		return Stale
	}
}

// csdsStatus is the xDS format: a DiscoveryResponse of ClientConfig resources.
type csdsStatus struct {
	Resources []csdsResource `json:"resources"`
}

// csdsResource is one ClientConfig, under either spelling of its field names.
type csdsResource struct {
	Type string `json:"@type"`
	Node struct {
		ID string `json:"id"`
	} `json:"node"`
	Configs      []csdsConfig `json:"genericXdsConfigs"`
	ConfigsSnake []csdsConfig `json:"generic_xds_configs"`
}

// csdsConfig is one GenericXdsConfig, under either spelling of its field names.
type csdsConfig struct {
	TypeURL      string          `json:"typeUrl"`
	TypeURLSnake string          `json:"type_url"`
	Status       json.RawMessage `json:"configStatus"`
	StatusSnake  json.RawMessage `json:"config_status"`
}

// parseCSDS reads the xDS format.
func parseCSDS(body []byte) (map[string]Proxy, error) {
	var doc csdsStatus
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("xDS format: %w", err)
	}
	status := make(map[string]Proxy, len(doc.Resources))
	for i, r := range doc.Resources {
		if r.Type != "" && r.Type != clientConfigType {
			continue
		}
		id := proxyID(r.Node.ID)
		if id == "" {
			continue
		}
		var p Proxy
		for _, c := range slices.Concat(r.Configs, r.ConfigsSnake) {
			t, ok := typeURLs[cmp.Or(c.TypeURL, c.TypeURLSnake)]
			if !ok {
				continue
			}
			raw := c.Status
			if raw == nil {
				raw = c.StatusSnake
			}
			s, err := configStatus(raw)
			if err != nil {
				return nil, fmt.Errorf("xDS format: resource %d (%s): %s: %w", i, id, t, err)
			}
			p.States[t] = s
		}
		add(status, id, p)
	}
	return status, nil
}

// proxyID is the proxy id of a node id "TYPE~IP~POD.NAMESPACE~DOMAIN": its third field, or ""
// when it has none.
func proxyID(node string) string {
	fields := strings.Split(node, "~")
	if len(fields) < 3 {
		return ""
	}
	return fields[2]
}

// configStatus reads a configStatus: a name, a number of the enum, or nothing (UNKNOWN, the
// zero value protojson leaves out).
func configStatus(raw json.RawMessage) (State, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return Unknown, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return State(name), nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n >= len(configStatuses) {
		return Missing, fmt.Errorf("configStatus %s is neither a name nor a number of the ConfigStatus enum", raw)
	}
	return configStatuses[n], nil
}
