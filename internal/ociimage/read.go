package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

// Read reads the image of an OCI image layout archive that Write wrote, or any whose index
// names one image manifest with gzip-compressed or plain tar layers (later layers replace the
// files of earlier ones; whiteouts are not applied). It returns the image, with its files
// sorted by path, and its architecture.
func Read(r io.Reader) (Image, string, error) {
	blobs, err := readTar(r)
	if err != nil {
		return Image{}, "", err
	}
	idx, m, cfg, err := readLayout(blobs)
	if err != nil {
		return Image{}, "", err
	}
	c := cfg.Config
	img := Image{Ref: idx.Manifests[0].Annotations[annotationName], Config: Config{User: c.User, Entrypoint: c.Entrypoint,
		Cmd: c.Cmd, Env: c.Env, WorkingDir: c.WorkingDir, Labels: c.Labels}}
	for p := range c.ExposedPorts {
		img.Config.ExposedPorts = append(img.Config.ExposedPorts, p)
	}
	slices.Sort(img.Config.ExposedPorts)
	files := map[string]File{}
	for _, l := range m.Layers {
		data, ok := blobs[blobPath(l.Digest)]
		if !ok {
			return Image{}, "", fmt.Errorf("layer %s: no such blob", l.Digest)
		}
		if err := readLayer(data, l.MediaType, files); err != nil {
			return Image{}, "", fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		img.Files = append(img.Files, files[p])
	}
	return img, cfg.Architecture, nil
}

// readLayout decodes the index, the one manifest it lists, and its image's configuration from
// an archive's files.
func readLayout(blobs map[string][]byte) (index, manifest, imageConfig, error) {
	var idx index
	var m manifest
	var cfg imageConfig
	if err := decodeBlob(blobs, "index.json", &idx); err != nil {
		return idx, m, cfg, err
	}
	if len(idx.Manifests) != 1 {
		return idx, m, cfg, fmt.Errorf("index.json lists %d manifests, want 1", len(idx.Manifests))
	}
	if err := decodeBlob(blobs, blobPath(idx.Manifests[0].Digest), &m); err != nil {
		return idx, m, cfg, err
	}
	err := decodeBlob(blobs, blobPath(m.Config.Digest), &cfg)
	return idx, m, cfg, err
}

// readTar returns the regular files of a tar archive by name.
func readTar(r io.Reader) (map[string][]byte, error) {
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("image archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("image archive: %s: %w", hdr.Name, err)
		}
		out[path.Clean(hdr.Name)] = data
	}
}

// blobPath returns the archive path of the blob with digest d (sha256:HEX).
func blobPath(d string) string { return "blobs/" + strings.Replace(d, ":", "/", 1) }

// decodeBlob decodes the JSON document name of blobs into v.
func decodeBlob(blobs map[string][]byte, name string, v any) error {
	data, ok := blobs[name]
	if !ok {
		return fmt.Errorf("image archive: no %s", name)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("image archive: %s: %w", name, err)
	}
	return nil
}

// readLayer adds the files and directories of a layer to files, by path.
func readLayer(data []byte, mediaType string, files map[string]File) error {
	var r io.Reader = bytes.NewReader(data)
	if strings.HasSuffix(mediaType, "+gzip") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		f := File{Path: path.Join("/", hdr.Name), Mode: fs.FileMode(hdr.Mode).Perm(), UID: hdr.Uid, GID: hdr.Gid}
		if hdr.Mode&0o1000 != 0 {
			f.Mode |= fs.ModeSticky
		}
		for k, v := range hdr.PAXRecords {
			if name, ok := strings.CutPrefix(k, xattrPAXPrefix); ok {
				if f.Xattrs == nil {
					f.Xattrs = map[string]string{}
				}
				f.Xattrs[name] = v
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			f.Mode |= fs.ModeDir
		case tar.TypeReg:
			if f.Data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %w", hdr.Name, err)
			}
		default:
			return fmt.Errorf("%s: unsupported entry type %q", hdr.Name, hdr.Typeflag)
		}
		files[f.Path] = f
	}
}
