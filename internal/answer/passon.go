package answer

import "github.com/miekg/dns"

// PassOnWriter returns the writer for a query of a name in a served zone that gslb passes on
// to the next plugin (fallthrough). When opts.UseECS is set and req carries a valid EDNS Client
// Subnet option, the reply that plugin writes gets that option back with scope 0 (RFC 7871
// 7.2.1: the answer holds for every client), as gslb's own answers carry it; a reply that has
// an ECS option already is left alone. Otherwise it returns w itself.
func PassOnWriter(w dns.ResponseWriter, req *dns.Msg, opts Options) dns.ResponseWriter {
	if !opts.UseECS {
		return w
	}
	opt := req.IsEdns0()
	if opt == nil || opt.Version() != 0 {
		return w
	}
	var found *dns.EDNS0_SUBNET
	for _, o := range opt.Option {
		if ecs, ok := o.(*dns.EDNS0_SUBNET); ok {
			if found != nil {
				return w // two options: gslb would have refused the query (FORMERR)
			}
			found = ecs
		}
	}
	if found == nil {
		return w
	}
	if _, ok := ecsClient(found); !ok {
		return w
	}
	return &ecsWriter{ResponseWriter: w, ecs: found, do: opt.Do(), size: max(int(opt.UDPSize()), dns.MinMsgSize)}
}

// ecsWriter adds the query's ECS option, with scope 0, to the replies written through it.
type ecsWriter struct {
	dns.ResponseWriter
	ecs *dns.EDNS0_SUBNET
	do  bool
	// size is the client's UDP buffer.
	size int
}

// WriteMsg implements dns.ResponseWriter.
func (w *ecsWriter) WriteMsg(m *dns.Msg) error {
	if m != nil {
		limit := 0
		if w.udp() {
			limit = w.size
		}
		addECS(m, w.ecs, w.do, limit)
	}
	return w.ResponseWriter.WriteMsg(m)
}

// udp reports whether the reply goes over UDP, where its size is bounded.
func (w *ecsWriter) udp() bool {
	a := w.ResponseWriter.LocalAddr()
	return a == nil || a.Network() == "udp"
}

// addECS adds ecs, with scope 0, to m's OPT record, adding one (as gslb's answers have it)
// when m has none. A reply that the option would make larger than limit (the client's UDP
// buffer; 0 for no limit) is left as it is.
func addECS(m *dns.Msg, ecs *dns.EDNS0_SUBNET, do bool, limit int) {
	opt := m.IsEdns0()
	for _, o := range optionsOf(opt) {
		if _, ok := o.(*dns.EDNS0_SUBNET); ok {
			return
		}
	}
	echo := &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: ecs.Family, SourceNetmask: ecs.SourceNetmask, Address: ecs.Address}
	added := opt == nil
	if added {
		opt = &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(advertisedUDPSize)
		opt.SetDo(do)
		m.Extra = append(m.Extra, opt)
	}
	opt.Option = append(opt.Option, echo)
	if limit > 0 && m.Len() > limit {
		opt.Option = opt.Option[:len(opt.Option)-1]
		if added {
			m.Extra = m.Extra[:len(m.Extra)-1]
		}
	}
}

func optionsOf(opt *dns.OPT) []dns.EDNS0 {
	if opt == nil {
		return nil
	}
	return opt.Option
}
