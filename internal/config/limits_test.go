package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true},
		{"262144", 262144, true},
		{"256K", 256 << 10, true},
		{"256k", 256 << 10, true},
		{"256M", 256 << 20, true},
		{"256MiB", 256 << 20, true},
		{"1GB", 1 << 30, true},
		{" 2G ", 2 << 30, true},
		{"0", 0, false},
		{"-1M", 0, false},
		{"1.5M", 0, false},
		{"M", 0, false},
		{"", 0, false},
		{"10T", 0, false},
		{"9999999999G", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, n := range []int64{1, 1000, 1 << 10, 3 << 20, 256 << 20, 1 << 30, 1<<30 + 1} {
		if got, err := ParseSize(FormatSize(n)); err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), got, err)
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "zone.yml")
	if err := os.WriteFile(file, []byte(strings.Repeat("x", 2048)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit   int64
		wantErr string
	}{
		{0, ""}, // the default
		{2048, ""},
		{2047, file + ": file too big: more than max_file_size 2047"},
		{1 << 10, file + ": file too big: more than max_file_size 1K"},
	} {
		data, err := ReadFile(file, tc.limit)
		switch {
		case tc.wantErr == "" && (err != nil || len(data) != 2048):
			t.Errorf("limit %d: %d bytes, %v; want the file", tc.limit, len(data), err)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrFileTooBig)):
			t.Errorf("limit %d: error %v, want %q", tc.limit, err, tc.wantErr)
		}
	}
	_, err := LoadZone(ZoneSource{Origin: "example.org.", File: file}, nil, 1<<10)
	if want := "load zone example.org.: " + file + ": file too big: more than max_file_size 1K"; err == nil || err.Error() != want {
		t.Errorf("LoadZone over the limit: %v, want %q", err, want)
	}
}
