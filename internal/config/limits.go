package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// DefaultMaxFileSize is the largest zone or location-map file loaded when the Corefile's
// max_file_size does not say otherwise: 256 MiB, about a million records, ten times the
// largest zones in use (a zone of 100,000 records of two backends is about 20 MB).
const DefaultMaxFileSize = 256 << 20

// ErrFileTooBig is what ReadFile's error wraps for a file over its limit.
var ErrFileTooBig = errors.New("file too big")

// ReadFile reads the file at path, refusing one of more than limit bytes (DefaultMaxFileSize
// when limit is 0) without reading it: the error names the file and the limit. A file that
// grows past the limit while it is read is refused too.
func ReadFile(path string, limit int64) ([]byte, error) {
	data, _, err := readFile(path, limit)
	return data, err
}

// readFile is ReadFile that also returns the file's information, read from the file it read.
func readFile(path string, limit int64) ([]byte, os.FileInfo, error) {
	if limit <= 0 {
		limit = DefaultMaxFileSize
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	tooBig := func() error {
		return fmt.Errorf("%s: %w: more than max_file_size %s", path, ErrFileTooBig, FormatSize(limit))
	}
	if info.Size() > limit {
		return nil, nil, tooBig()
	}
	data := make([]byte, 0, info.Size()+1) // one more, so that reading to the end does not grow it
	data, err = readAll(io.LimitReader(f, limit+1), data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, nil, tooBig()
	}
	return data, info, nil
}

// readAll appends what r holds to buf, as io.ReadAll does from an empty one.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// sizeUnits are the suffixes ParseSize accepts, powers of 1024.
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// ParseSize parses a size in bytes written as a positive integer with an optional suffix K, M
// or G (KiB, MiB, GiB; a trailing B or iB is allowed, case does not matter): "262144", "256K",
// "256M", "1GiB".
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	unit := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, unit = rest, u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q is not a size: write a positive number of bytes, with K, M or G for KiB, MiB or GiB", s)
	}
	return n * unit, nil
}

// FormatSize writes a size as ParseSize reads it: with the largest suffix that divides it.
func FormatSize(n int64) string {
	for _, u := range sizeUnits {
		if n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
