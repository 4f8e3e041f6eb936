package overlay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/meridian-gslb/meridian/internal/atomicfile"
)

// fileVersion is the version of the file format that File writes and reads.
const fileVersion = 1

// fileContent is the JSON document of an overrides file.
type fileContent struct {
	Version   int        `json:"version"`
	Overrides []Override `json:"overrides"`
}

// File is a Store kept in a JSON file. Every change is written to a temporary file in the same
// directory, synced, and renamed over the file before it takes effect, so that the file always
// holds either the old or the new overrides, even after a crash or a power loss.
type File struct {
	*Memory
	path string
}

// OpenFile reads the overrides stored at path, or creates the file (and its directory) with
// none when it does not exist, so that a path that cannot be written fails now rather than at
// the first change. A file that cannot be read or parsed is an error that names it: overrides
// are never dropped silently. Overrides that expired while the file was not in use are dropped.
func OpenFile(path string, clock Clock) (*File, error) {
	f := &File{path: path}
	overrides, err := f.read()
	if errors.Is(err, fs.ErrNotExist) {
		err = f.write(nil)
	}
	if err != nil {
		return nil, err
	}
	f.Memory = newMemory(clock, overrides, f.write)
	return f, nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

func (f *File) read() ([]Override, error) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, fmt.Errorf("overrides file: %w", err)
	}
	var c fileContent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("overrides file %s is corrupt: %w", f.path, err)
	}
	if c.Version != fileVersion {
		return nil, fmt.Errorf("overrides file %s: version %d is not %d", f.path, c.Version, fileVersion)
	}
	seen := make(map[string]bool, len(c.Overrides))
	for i, o := range c.Overrides {
		switch {
		case o.Key == "":
			return nil, fmt.Errorf("overrides file %s is corrupt: override %d has no key", f.path, i)
		case !o.Action.valid():
			return nil, fmt.Errorf("overrides file %s is corrupt: backend %s has unknown action %q", f.path, o.Key, o.Action)
		case !o.Starts.IsZero() && o.Action != Drain:
			return nil, fmt.Errorf("overrides file %s is corrupt: backend %s: %s has a start time, which only a drain takes", f.path, o.Key, o.Action)
		case seen[o.Key]:
			return nil, fmt.Errorf("overrides file %s is corrupt: backend %s is listed twice", f.path, o.Key)
		}
		seen[o.Key] = true
	}
	return c.Overrides, nil
}

// write replaces the file with overrides atomically: temporary file, sync, rename, and a sync
// of the directory so that the rename itself is durable.
func (f *File) write(overrides []Override) error {
	if overrides == nil {
		overrides = []Override{}
	}
	data, err := json.MarshalIndent(fileContent{Version: fileVersion, Overrides: overrides}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode overrides: %w", err)
	}
	if err := atomicfile.Write(f.path, append(data, '\n')); err != nil {
		return fmt.Errorf("write overrides file: %w", err)
	}
	return nil
}
