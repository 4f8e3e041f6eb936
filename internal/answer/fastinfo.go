package answer

import "encoding/binary"

// FastQueryInfo returns the type and the DO bit of a query that AppendFast answered (its
// question is uncompressed, and its one additional record, if any, is its OPT), for the
// metrics of the fast path; 0 and false for a packet too short to be one.
func FastQueryInfo(pkt []byte) (qtype uint16, do bool) {
	off := 12
	for off < len(pkt) && pkt[off] != 0 {
		off += 1 + int(pkt[off])
	}
	off++ // the root label
	if off+4 > len(pkt) {
		return 0, false
	}
	qtype = binary.BigEndian.Uint16(pkt[off:])
	off += 4
	// The OPT record: its root owner, type, class (the UDP size), then TTL: extended rcode,
	// version, and the flags, DO first.
	if off+1+2+2+4 <= len(pkt) && pkt[off] == 0 && binary.BigEndian.Uint16(pkt[off+1:]) == 41 {
		do = pkt[off+7]&0x80 != 0
	}
	return qtype, do
}
