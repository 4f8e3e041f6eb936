// Package ociimage writes container images as OCI image layout archives (a tar of oci-layout,
// index.json and the content-addressed blobs), which containerd (`ctr images import`), Podman
// (`podman load`) and skopeo (`oci-archive:`) read, without a container engine or a registry,
// and reads them back. An image is one layer of files and a configuration; writing is
// reproducible: the same image gives the same bytes (sorted entries, fixed times, fixed owners
// and modes, gzip without a time stamp).
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// Media types and annotations of the OCI image specification, and containerd's image name
// annotation, by which `ctr images import` names the image it imports.
const (
	mediaIndex        = "application/vnd.oci.image.index.v1+json"
	mediaManifest     = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig       = "application/vnd.oci.image.config.v1+json"
	mediaLayerGzip    = "application/vnd.oci.image.layer.v1.tar+gzip"
	annotationRef     = "org.opencontainers.image.ref.name"
	annotationName    = "io.containerd.image.name"
	xattrPAXPrefix    = "SCHILY.xattr."
	layoutVersion     = "1.0.0"
	defaultDirMode    = 0o755
	capNetBindService = 10
)

// epoch is the modification time of every file and of the image: fixed, so that the archive is
// reproducible.
var epoch = time.Unix(0, 0).UTC()

// Image is a container image: a name, a configuration and the files of its single layer.
type Image struct {
	// Ref is the image's reference, NAME:TAG, such as localhost/meridian:test: containerd
	// imports the image under it.
	Ref    string
	Config Config
	// Files are the layer's files and directories, in any order. Parent directories a file
	// needs and the list does not hold are added, owned by root, mode 0755.
	Files []File
}

// Config is the part of an image's configuration that runs it.
type Config struct {
	// User is USER[:GROUP], by number or name.
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// ExposedPorts are PORT/PROTOCOL, such as 53/udp.
	ExposedPorts []string
	Labels       map[string]string
}

// File is a file or directory of an image's layer.
type File struct {
	// Path is absolute, "/etc/meridian".
	Path string
	// Mode is the permission bits, plus fs.ModeDir for a directory and fs.ModeSticky for the
	// sticky bit.
	Mode     fs.FileMode
	UID, GID int
	// Data is a regular file's content.
	Data []byte
	// Xattrs are extended attributes by name, such as security.capability.
	Xattrs map[string]string
}

// Dir returns a directory of the image.
func Dir(p string, mode fs.FileMode, uid, gid int) File {
	return File{Path: p, Mode: fs.ModeDir | mode, UID: uid, GID: gid}
}

// NetBindService is the value of a file's security.capability attribute that grants
// cap_net_bind_service, effective and permitted (what `setcap cap_net_bind_service=+ep` sets):
// a struct vfs_cap_data of revision 2, little-endian.
func NetBindService() string {
	var b [20]byte
	le := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	le(0, 0x02000000|0x1) // VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE
	le(4, 1<<capNetBindService)
	return string(b[:])
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// imageConfig is the OCI image configuration (config.json).
type imageConfig struct {
	Created      time.Time `json:"created"`
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Config       struct {
		User         string              `json:"User,omitempty"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
		Env          []string            `json:"Env,omitempty"`
		Entrypoint   []string            `json:"Entrypoint,omitempty"`
		Cmd          []string            `json:"Cmd,omitempty"`
		WorkingDir   string              `json:"WorkingDir,omitempty"`
		Labels       map[string]string   `json:"Labels,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// manifest is an OCI image manifest.
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// index is the layout's index.json.
type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// Write writes img for linux on the architecture arch (a GOARCH: amd64, arm64) to w as an OCI
// image layout archive.
func Write(w io.Writer, img Image, arch string) error {
	layer, diffID, err := writeLayer(img.Files)
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Ref, err)
	}
	var cfg imageConfig
	cfg.Created, cfg.Architecture, cfg.OS = epoch, arch, "linux"
	c := img.Config
	cfg.Config.User, cfg.Config.Env, cfg.Config.Entrypoint, cfg.Config.Cmd = c.User, c.Env, c.Entrypoint, c.Cmd
	cfg.Config.WorkingDir, cfg.Config.Labels = c.WorkingDir, c.Labels
	if len(c.ExposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range c.ExposedPorts {
			cfg.Config.ExposedPorts[p] = struct{}{}
		}
	}
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{diffID}
	return writeArchive(w, img.Ref, cfg, [][]byte{layer})
}

// Relabel returns the image of archive (an OCI image layout archive of one image, as Write
// writes them) as another image: named ref, with labels added to (or replacing) its
// configuration's. Its layers are kept as they are, not decompressed: a new release of the same
// files, say, costs a new configuration and manifest only.
func Relabel(archive []byte, ref string, labels map[string]string) ([]byte, error) {
	blobs, err := readTar(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	_, m, cfg, err := readLayout(blobs)
	if err != nil {
		return nil, err
	}
	if cfg.Config.Labels == nil {
		cfg.Config.Labels = map[string]string{}
	}
	maps.Copy(cfg.Config.Labels, labels)
	var layers [][]byte
	for _, l := range m.Layers {
		data, ok := blobs[blobPath(l.Digest)]
		if !ok || l.MediaType != mediaLayerGzip {
			return nil, fmt.Errorf("layer %s (%s): not a gzip layer of the archive", l.Digest, l.MediaType)
		}
		layers = append(layers, data)
	}
	var out bytes.Buffer
	if err := writeArchive(&out, ref, cfg, layers); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeArchive writes the image layout archive of the image ref: its configuration cfg, its
// gzip-compressed layers, its manifest and the index naming it.
func writeArchive(w io.Writer, ref string, cfg imageConfig, layers [][]byte) error {
	_, tag, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if !ok || tag == "" {
		return fmt.Errorf("image reference %q: want NAME:TAG", ref)
	}
	configJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	blobs := map[string][]byte{}
	blob := func(mediaType string, data []byte) descriptor {
		d := descriptor{MediaType: mediaType, Digest: digest(data), Size: len(data)}
		blobs[d.Digest] = data
		return d
	}
	m := manifest{SchemaVersion: 2, MediaType: mediaManifest, Config: blob(mediaConfig, configJSON)}
	for _, l := range layers {
		m.Layers = append(m.Layers, blob(mediaLayerGzip, l))
	}
	manifestJSON, err := json.Marshal(m)
	if err != nil {
		return err
	}
	md := blob(mediaManifest, manifestJSON)
	md.Annotations = map[string]string{annotationName: ref, annotationRef: tag}
	md.Platform = &platform{Architecture: cfg.Architecture, OS: cfg.OS}
	indexJSON, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []descriptor{md}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	if err := writeEntry(tw, &tar.Header{Name: "oci-layout", Mode: 0o644}, []byte(`{"imageLayoutVersion":"`+layoutVersion+`"}`)); err != nil {
		return err
	}
	if err := writeEntry(tw, &tar.Header{Name: "index.json", Mode: 0o644}, indexJSON); err != nil {
		return err
	}
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		if err := writeEntry(tw, &tar.Header{Name: blobPath(d), Mode: 0o644}, blobs[d]); err != nil {
			return err
		}
	}
	return tw.Close()
}

// writeLayer returns the gzip-compressed layer of files and its diff ID, the digest of the
// uncompressed tar.
func writeLayer(files []File) ([]byte, string, error) {
	all, err := withParents(files)
	if err != nil {
		return nil, "", err
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range all {
		hdr := &tar.Header{Name: strings.TrimPrefix(f.Path, "/"), Mode: int64(f.Mode.Perm()), Uid: f.UID, Gid: f.GID,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		if f.Mode.IsDir() {
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		}
		for name, value := range f.Xattrs {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords[xattrPAXPrefix+name] = value
		}
		if err := writeEntry(tw, hdr, f.Data); err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, "", err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), digest(raw.Bytes()), nil
}

// withParents returns files sorted by path with the directories they are in that files does
// not list, refusing relative and duplicate paths and files inside a file.
func withParents(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("file path %q: want an absolute, clean path", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("file %s listed twice", f.Path)
		}
		if !f.Mode.IsDir() && !f.Mode.IsRegular() {
			return nil, fmt.Errorf("file %s: only regular files and directories (mode %s)", f.Path, f.Mode)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if d, ok := byPath[dir]; !ok {
				byPath[dir] = Dir(dir, defaultDirMode, 0, 0)
			} else if !d.Mode.IsDir() {
				return nil, fmt.Errorf("file %s is inside %s, a regular file", f.Path, dir)
			}
		}
	}
	out := make([]File, 0, len(byPath))
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		out = append(out, byPath[p])
	}
	return out, nil
}

// writeEntry writes one tar entry with data, at the fixed time.
func writeEntry(tw *tar.Writer, hdr *tar.Header, data []byte) error {
	hdr.ModTime = epoch
	hdr.Size = int64(len(data))
	if hdr.Typeflag == tar.TypeDir {
		hdr.Size = 0
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// digest returns the sha256 digest of data as OCI writes it, sha256:HEX.
func digest(data []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(data)) }
