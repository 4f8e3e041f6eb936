package catalog

import (
	"testing"
	"unsafe"
)

// TestPerRecordStructuresStaySmall fails when a field makes what the catalog keeps for every
// record of a big zone bigger: a record, each of its backends, its name's node and its view
// (sizes of Go's allocation classes, so that one more word does not cost the next class).
func TestPerRecordStructuresStaySmall(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size, max uintptr
	}{
		{"Record", unsafe.Sizeof(Record{}), 96},
		{"Backend", unsafe.Sizeof(Backend{}), 40},
		{"node", unsafe.Sizeof(node{}), 32},
		{"View", unsafe.Sizeof(View{}), 144},
	} {
		if tt.size > tt.max {
			t.Errorf("%s is %d bytes, over %d", tt.name, tt.size, tt.max)
		}
	}
}
