package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestReloadOverMaxFileSizeKeepsServing checks that a zone file that grew past max_file_size
// is refused with its name and the limit, and that the current snapshot keeps serving; and
// that an engine does not start on such a file.
func TestReloadOverMaxFileSizeKeepsServing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zone.yml")
	if err := os.WriteFile(file, []byte(checked), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := config.DefaultOptions()
	opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
	opts.MaxFileSize = int64(len(checked))
	e, err := New(opts, &testutil.Log{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	before := e.Snapshot()
	grown := checked + "      - {address: 10.0.0.3, healthchecks: [{type: tcp, params: {port: 80}}]}\n"
	if err := os.WriteFile(file, []byte(grown), 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + ": file too big: more than max_file_size " + config.FormatSize(opts.MaxFileSize)
	if err := e.Reload(); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, config.ErrFileTooBig) {
		t.Fatalf("reload error %v, want %q", err, want)
	}
	if e.Snapshot() != before {
		t.Fatal("a file over max_file_size replaced the snapshot")
	}
	if _, err := New(opts, &testutil.Log{}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("New with a file over max_file_size: %v, want %q", err, want)
	}
}
