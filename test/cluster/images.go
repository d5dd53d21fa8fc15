package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// The rig's real nodes run a containerd with no registry to pull from, so their
// images are built here, in Go, as OCI image-layout archives that `ctr images import`
// takes: one uncompressed layer of files copied from this machine, mostly the files
// of its installed Debian packages.

// imageConfig is the part of an OCI image config a container starts from.
type imageConfig struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string // "uid:gid" or a name; empty is root
}

// imageFile is one entry of an image's layer. Exactly one of Dir, Link, Source or
// Data says what it is (Data may be empty: an empty file).
type imageFile struct {
	Path   string // absolute path in the image
	Dir    bool
	Link   string // symlink target, as readlink prints it
	Source string // host file whose content is copied
	Data   []byte
	// Mode is the Unix permission bits, setuid/setgid/sticky included (0755,
	// 01777). Zero means the Source file's own, else 0644 for files, 0755 for
	// directories.
	Mode int64
	// UID and GID own the entry; zero (root) unless a home directory needs its user.
	UID, GID int
}

// OCI media types and the annotations containerd names an imported image by.
const (
	mediaTypeIndex       = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig      = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer       = "application/vnd.oci.image.layer.v1.tar"
	annotationImageName  = "io.containerd.image.name"
	annotationRefName    = "org.opencontainers.image.ref.name"
	ociLayoutFileContent = `{"imageLayoutVersion":"1.0.0"}`
)

// layerTime is every entry's mtime, so an image built twice from the same files
// is the same image (same digest: containerd does not unpack it again).
var layerTime = time.Unix(0, 0).UTC()

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
}

type ociPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type ociIndex struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Manifests     []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	SchemaVersion int             `json:"schemaVersion"`
	MediaType     string          `json:"mediaType"`
	Config        ociDescriptor   `json:"config"`
	Layers        []ociDescriptor `json:"layers"`
}

type ociImage struct {
	Architecture string         `json:"architecture"`
	OS           string         `json:"os"`
	Config       ociImageConfig `json:"config"`
	RootFS       ociRootFS      `json:"rootfs"`
}

type ociImageConfig struct {
	User       string   `json:"User,omitempty"`
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir,omitempty"`
}

type ociRootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// buildImageArchive writes the image's archive to path, through a temporary file
// renamed into place, so an importer never sees half an archive.
func buildImageArchive(path, ref string, files []imageFile, cfg imageConfig) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".image-*.tar")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := writeOCIArchive(bw, ref, files, cfg); err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	// CreateTemp's 0600 would keep the archive from anyone but its builder.
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeOCIArchive writes an OCI image-layout tar archive of one image named ref
// (registry/name:tag): one manifest, its config and one uncompressed layer of files.
func writeOCIArchive(w io.Writer, ref string, files []imageFile, cfg imageConfig) error {
	tag, err := refTag(ref)
	if err != nil {
		return err
	}
	entries, err := layerEntries(files)
	if err != nil {
		return err
	}
	// The outer tar needs the layer's size before its content: spool it to a file
	// rather than holding tens of MiB in memory.
	spool, err := os.CreateTemp("", "sluice-layer-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(spool, h), 1<<20)
	if err := writeLayer(bw, entries); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	layerSize, err := spool.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	layer := ociDescriptor{MediaType: mediaTypeLayer, Digest: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: layerSize}

	platform := ociPlatform{Architecture: runtime.GOARCH, OS: "linux"} // the files are this machine's binaries
	config, err := json.Marshal(ociImage{
		Architecture: platform.Architecture,
		OS:           platform.OS,
		Config: ociImageConfig{User: cfg.User, Env: cfg.Env, Entrypoint: cfg.Entrypoint,
			Cmd: cfg.Cmd, WorkingDir: cfg.WorkingDir},
		// The layer is not compressed, so its diff ID is its digest.
		RootFS: ociRootFS{Type: "layers", DiffIDs: []string{layer.Digest}},
	})
	if err != nil {
		return err
	}
	configDesc := blobDescriptor(mediaTypeConfig, config)
	manifest, err := json.Marshal(ociManifest{SchemaVersion: 2, MediaType: mediaTypeManifest,
		Config: configDesc, Layers: []ociDescriptor{layer}})
	if err != nil {
		return err
	}
	manifestDesc := blobDescriptor(mediaTypeManifest, manifest)
	manifestDesc.Platform = &platform
	manifestDesc.Annotations = map[string]string{annotationImageName: ref, annotationRefName: tag}
	index, err := json.Marshal(ociIndex{SchemaVersion: 2, MediaType: mediaTypeIndex,
		Manifests: []ociDescriptor{manifestDesc}})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: layerTime}); err != nil {
			return err
		}
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	blobs := []struct {
		name string
		size int64
		r    io.Reader
	}{
		{"oci-layout", int64(len(ociLayoutFileContent)), strings.NewReader(ociLayoutFileContent)},
		{blobPath(layer), layer.Size, spool},
		{blobPath(configDesc), configDesc.Size, bytes.NewReader(config)},
		{blobPath(manifestDesc), manifestDesc.Size, bytes.NewReader(manifest)},
		{"index.json", int64(len(index)), bytes.NewReader(index)},
	}
	for _, b := range blobs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: b.name, Mode: 0o644, Size: b.size, ModTime: layerTime}); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, b.r, b.size); err != nil {
			return fmt.Errorf("writing %s: %w", b.name, err)
		}
	}
	return tw.Close()
}

func blobDescriptor(mediaType string, content []byte) ociDescriptor {
	sum := sha256.Sum256(content)
	return ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(content))}
}

func blobPath(d ociDescriptor) string {
	return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
}

// refTag is the tag of ref: what follows the last colon after the last slash (a
// colon before it is a registry's port). The rig always names one.
func refTag(ref string) (string, error) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") || i == len(ref)-1 || strings.Contains(ref, "@") {
		return "", fmt.Errorf("image reference %q has no tag (want name:tag)", ref)
	}
	return ref[i+1:], nil
}

// layerEntry is one tar entry of a layer: its name (no leading slash) and file.
type layerEntry struct {
	name string
	f    imageFile
}

// layerEntries turns files into the layer's entries, sorted by name, with every
// parent directory before its contents: those not listed are added as root's, 0755.
// A later file for a path replaces an earlier one, so an image can override a
// package's file. A path under a listed symlink is refused: what unpacking it does
// depends on the unpacker, and an image lists files at their real paths anyway.
func layerEntries(files []imageFile) ([]layerEntry, error) {
	byName := make(map[string]imageFile, len(files))
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("image path %q is not absolute", f.Path)
		}
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		if name == "" {
			return nil, fmt.Errorf("image path %q is the root", f.Path)
		}
		kinds := 0
		for _, set := range []bool{f.Dir, f.Link != "", f.Source != "", f.Data != nil} {
			if set {
				kinds++
			}
		}
		if kinds > 1 {
			return nil, fmt.Errorf("image path %s: more than one of Dir, Link, Source, Data set", f.Path)
		}
		byName[name] = f
	}
	for name := range byName {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			p, ok := byName[dir]
			switch {
			case !ok:
				byName[dir] = imageFile{Path: "/" + dir, Dir: true, Mode: 0o755}
			case p.Link != "":
				return nil, fmt.Errorf("image path /%s lies under the symlink /%s (-> %s); list it at its real path", name, dir, p.Link)
			case !p.Dir:
				return nil, fmt.Errorf("image path /%s lies under /%s, which is not a directory", name, dir)
			}
		}
	}
	entries := make([]layerEntry, 0, len(byName))
	for name, f := range byName {
		entries = append(entries, layerEntry{name, f})
	}
	// A parent's name is a prefix of its children's, so it sorts first.
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	return entries, nil
}

// writeLayer writes entries as a tar stream: fixed mtimes, owners as listed.
func writeLayer(w io.Writer, entries []layerEntry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if err := writeLayerEntry(tw, e); err != nil {
			return fmt.Errorf("image path %s: %w", e.f.Path, err)
		}
	}
	return tw.Close()
}

func writeLayerEntry(tw *tar.Writer, e layerEntry) error {
	f := e.f
	hdr := &tar.Header{Name: e.name, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: layerTime}
	var content io.Reader
	switch {
	case f.Dir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		if hdr.Mode == 0 {
			hdr.Mode = 0o755
		}
	case f.Link != "":
		hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, f.Link, 0o777
	case f.Source != "":
		src, err := os.Open(f.Source)
		if err != nil {
			return err
		}
		defer src.Close()
		info, err := src.Stat()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("source %s is not a regular file", f.Source)
		}
		if hdr.Mode == 0 {
			hdr.Mode = unixMode(info.Mode())
		}
		hdr.Typeflag, hdr.Size, content = tar.TypeReg, info.Size(), src
	default:
		hdr.Typeflag, hdr.Size, content = tar.TypeReg, int64(len(f.Data)), bytes.NewReader(f.Data)
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if content != nil {
		if _, err := io.CopyN(tw, content, hdr.Size); err != nil {
			return fmt.Errorf("copying %s (did it change?): %w", f.Source, err)
		}
	}
	return nil
}

// unixMode is m's permission bits as a tar header (and chmod) wants them.
func unixMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

// debianSkipped are the parts of packages no container reads.
var debianSkipped = []string{"/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale", "/usr/share/lintian"}

// usrMergedLinks are the top-level symlinks of a /usr-merged Debian (12 and later).
var usrMergedLinks = []string{"/bin", "/sbin", "/lib", "/lib64"}

// debianFiles lists the files of installed Debian packages as this machine has
// them (dpkg-query -L), so an image is a Debian userland made without a download.
// Dependencies are not followed: the caller names every package. Each file is put
// at its real path: dpkg lists some under /bin or /lib, which on a /usr-merged
// system are symlinks into /usr, and those symlinks are in the image too (where the
// machine has them). Symlinked files stay symlinks; listed paths this machine does
// not have (dpkg path-excludes, as in container images) are skipped.
func debianFiles(packages []string) ([]imageFile, error) {
	if len(packages) == 0 {
		return nil, nil
	}
	if err := checkDebianInstalled(packages); err != nil {
		return nil, err
	}
	out, err := exec.Command("dpkg-query", append([]string{"-L"}, packages...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-query -L %s: %w%s", strings.Join(packages, " "), err, exitStderr(err))
	}
	var files []imageFile
	seen := map[string]bool{}
	add := func(f imageFile) {
		if !seen[f.Path] {
			seen[f.Path] = true
			files = append(files, f)
		}
	}
	for _, top := range usrMergedLinks {
		if target, err := os.Readlink(top); err == nil {
			add(imageFile{Path: top, Link: target})
		}
	}
	realDirs := map[string]string{} // listed directory -> its real path; "" when missing
	for _, line := range strings.Split(string(out), "\n") {
		// Other lines are blank or about diversions ("diverted by ...").
		if !strings.HasPrefix(line, "/") {
			continue
		}
		listed := filepath.Clean(line)
		if listed == "/" {
			continue
		}
		dir, base := filepath.Split(listed)
		realDir, ok := realDirs[dir]
		if !ok {
			realDir, err = filepath.EvalSymlinks(dir)
			if errors.Is(err, fs.ErrNotExist) {
				realDir = ""
			} else if err != nil {
				return nil, err
			}
			realDirs[dir] = realDir
		}
		if realDir == "" {
			continue
		}
		real := filepath.Join(realDir, base)
		if debianSkip(real) || seen[real] {
			continue
		}
		info, err := os.Lstat(real)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(real)
			if err != nil {
				return nil, err
			}
			add(imageFile{Path: real, Link: target})
		case info.IsDir():
			add(imageFile{Path: real, Dir: true, Mode: unixMode(info.Mode())})
		case info.Mode().IsRegular():
			add(imageFile{Path: real, Source: real, Mode: unixMode(info.Mode())})
		}
	}
	return files, nil
}

func debianSkip(p string) bool {
	for _, s := range debianSkipped {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// checkDebianInstalled fails naming every package of packages that this machine
// does not have installed, with the apt-get line that installs them.
func checkDebianInstalled(packages []string) error {
	installed, err := debianInstalled(packages)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range packages {
		if !installed[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the rig's images are made from this machine's Debian packages, and %s not installed: apt-get install %s",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	return nil
}

// debianInstalled reports which of packages are installed (not merely known to
// dpkg, e.g. removed with their config files left), by name with and without arch.
func debianInstalled(packages []string) (map[string]bool, error) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		return nil, fmt.Errorf("the rig's images are made from this machine's Debian packages, and it has no dpkg-query: %w", err)
	}
	// dpkg-query exits 1 when some package is unknown, after printing the others.
	out, err := exec.Command("dpkg-query", append([]string{"-W", "-f=${db:Status-Status} ${Package} ${binary:Package}\n"}, packages...)...).Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	installed := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "installed" {
			installed[f[1]], installed[f[2]] = true, true
		}
	}
	return installed, nil
}

func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// jobPackages are the Debian 12 packages of the job image: the tools a job script
// reaches for, and the shared libraries they load. Dependencies are not followed
// (Depends pull in much a job never runs), so the libraries are listed here: found
// with ldd on every ELF file of the tool packages and dpkg -S on each library.
// TestJobImage checks the list against ldd. By tool:
//
//	bash: libtinfo6
//	coreutils: libacl1 libattr1 libcap2 libgmp10 (expr, factor) libselinux1 libpcre2-8-0
//	grep: libpcre2-8-0; sed: libacl1 libselinux1
//	procps (ps, pgrep, top, watch): libproc2-0 (Debian 12's, not libprocps8) libsystemd0
//	  and what it loads: libcap2 libgcrypt20 libgpg-error0 liblzma5 libzstd1 liblz4-1;
//	  libncursesw6 libtinfo6
//
// libc6 brings the dynamic loader, libm, libresolv, NSS modules and iconv's gconv;
// libc-bin getent and ldd; base-files /etc/os-release; netbase /etc/services.
var jobPackages = []string{
	"bash", "coreutils", "grep", "sed", "hostname", "procps", "libc-bin", "base-files", "netbase",
	"libc6", "libtinfo6", "libacl1", "libattr1", "libcap2", "libgmp10", "libselinux1", "libpcre2-8-0",
	"libproc2-0", "libsystemd0", "libgcrypt20", "libgpg-error0", "liblzma5", "libzstd1", "liblz4-1", "libncursesw6",
}

// jobPythonPackages add python3 to the job image: the interpreter, the minimal
// standard library and their libraries: libexpat1 and zlib1g for the interpreter,
// libssl3 for _ssl and _hashlib.
// libpython3.11-stdlib is the rest of the standard library (json, subprocess, socket
// servers: what job scripts import), with the libraries of its extension modules.
var jobPythonPackages = []string{"python3.11-minimal", "libpython3.11-minimal", "libexpat1", "zlib1g", "libssl3",
	"libpython3.11-stdlib", "libffi8", "libbz2-1.0", "libsqlite3-0", "libreadline8", "libuuid1"}

// jobMPIPackages add MPICH's runtime to the job image, so a program built with
// MPICH on this machine (mpicc.mpich) runs in job pods under srun --mpi=pmi2:
// libmpich12 and what ldd shows it loads (libhwloc15, UCX's libucx0 with its
// transport modules, libudev1, libnuma1).
var jobMPIPackages = []string{"libmpich12", "libhwloc15", "libucx0", "libudev1", "libnuma1"}

// jobOpenMPIPackages add Open MPI's runtime to the job image, so a program built
// with Open MPI on this machine (mpicc.openmpi) runs in job pods under srun
// --mpi=pmix: libopenmpi3 with its plugins, the PMIx library the launcher's PMIx
// server links, Open MPI's help texts and site parameters (openmpi-common,
// openmpi-bin), and what ldd shows they load.
var jobOpenMPIPackages = []string{"libopenmpi3", "openmpi-common", "openmpi-bin", "libpmix2",
	"libevent-core-2.1-7", "libevent-pthreads-2.1-7", "libhwloc15", "libucx0", "libudev1", "libnuma1", "zlib1g",
	"libuuid1", "libfabric1", "libpsm-infinipath1", "libpsm2-2", "librdmacm1", "libibverbs1", "ibverbs-providers",
	"libnl-3-200", "libnl-route-3-200", "libmunge2", "libatomic1", "libgcc-s1"}

// pmixHelper is the launcher's PMIx server's name beside the sluice binary
// (launch.PMIxHelper).
const pmixHelper = "sluice-pmix"

// rigUsers are the users the rig maps jobs to, besides root and nobody.
var rigUsers = []struct {
	name     string
	uid, gid int
}{{"alice", 1001, 1001}, {"bob", 1002, 1002}}

const imagePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// jobImage is a small Debian userland for job containers: bash, coreutils, grep,
// sed, hostname, procps, and python3, MPICH's and Open MPI's libraries where this
// machine has Debian's python3.11-minimal, libmpich12 and libopenmpi3 installed (left out, not an error,
// where it does not: a job that needs them then fails visibly).
func jobImage() ([]imageFile, imageConfig, error) {
	packages := append([]string(nil), jobPackages...)
	installed, err := debianInstalled(jobPythonPackages)
	if err != nil {
		return nil, imageConfig{}, err
	}
	python := installed["python3.11-minimal"]
	if python {
		packages = append(packages, jobPythonPackages...)
	}
	mpi, err := debianInstalled(jobMPIPackages)
	if err != nil {
		return nil, imageConfig{}, err
	}
	if allInstalled(mpi, jobMPIPackages) {
		packages = append(packages, jobMPIPackages...)
	}
	ompi, err := debianInstalled(jobOpenMPIPackages)
	if err != nil {
		return nil, imageConfig{}, err
	}
	if allInstalled(ompi, jobOpenMPIPackages) {
		packages = append(packages, jobOpenMPIPackages...)
	}
	files, err := debianFiles(packages)
	if err != nil {
		return nil, imageConfig{}, err
	}
	// /bin/sh is dash's on Debian; bash serves scripts and exec probes as well.
	files = append(files, imageFile{Path: "/usr/bin/sh", Link: "bash"})
	if python {
		// python3-minimal's only file a container needs.
		files = append(files, imageFile{Path: "/usr/bin/python3", Link: "python3.11"})
	}
	passwd := "root:x:0:0:root:/root:/bin/bash\n"
	group := "root:x:0:\n"
	for _, u := range rigUsers {
		passwd += fmt.Sprintf("%s:x:%d:%d:%s:/home/%s:/bin/bash\n", u.name, u.uid, u.gid, u.name, u.name)
		group += fmt.Sprintf("%s:x:%d:\n", u.name, u.gid)
		// Owned by the user, so a job can write where it starts.
		files = append(files, imageFile{Path: "/home/" + u.name, Dir: true, Mode: 0o755, UID: u.uid, GID: u.gid})
	}
	passwd += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group += "nogroup:x:65534:\n"
	files = append(files, baseFiles(passwd, group)...)
	files = append(files,
		imageFile{Path: "/home", Dir: true, Mode: 0o755},
		imageFile{Path: "/root", Dir: true, Mode: 0o700},
	)
	return files, imageConfig{Env: []string{imagePath}, Cmd: []string{"/bin/bash"}}, nil
}

// allInstalled reports whether every package of packages is in installed.
func allInstalled(installed map[string]bool, packages []string) bool {
	for _, p := range packages {
		if !installed[p] {
			return false
		}
	}
	return true
}

// sluiceUID is the non-root user the sluice image runs as (distroless's nonroot).
const sluiceUID = 65532

// sluiceImage holds the sluice binary at /sluice and what it needs to run: it is
// built with cgo, so dynamically linked against glibc, which libc6 brings.
func sluiceImage(sluiceBinary string) ([]imageFile, imageConfig, error) {
	info, err := os.Stat(sluiceBinary)
	if err != nil {
		return nil, imageConfig{}, fmt.Errorf("sluice image: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, imageConfig{}, fmt.Errorf("sluice image: %s is not a regular file", sluiceBinary)
	}
	files, err := debianFiles([]string{"libc6"})
	if err != nil {
		return nil, imageConfig{}, err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", sluiceUID, sluiceUID)
	group := "root:x:0:\nnogroup:x:65534:\n" + fmt.Sprintf("nonroot:x:%d:\n", sluiceUID)
	files = append(files, baseFiles(passwd, group)...)
	files = append(files,
		imageFile{Path: "/sluice", Source: sluiceBinary, Mode: 0o755},
		imageFile{Path: "/home/nonroot", Dir: true, Mode: 0o755, UID: sluiceUID, GID: sluiceUID},
	)
	// The launcher's PMIx server (srun --mpi=pmix), where it was built beside the
	// binary (`make build`, sluiceproc), goes beside it, as the Dockerfile puts it.
	pmix := filepath.Join(filepath.Dir(sluiceBinary), pmixHelper)
	if info, err := os.Stat(pmix); err == nil && info.Mode().IsRegular() {
		files = append(files, imageFile{Path: "/" + pmixHelper, Source: pmix, Mode: 0o755})
	}
	return files, imageConfig{
		Entrypoint: []string{"/sluice"},
		Env:        []string{imagePath},
		User:       fmt.Sprintf("%d:%d", sluiceUID, sluiceUID),
	}, nil
}

// baseFiles are what every image has besides its programs: users, name service
// switch (files only: no LDAP or systemd lookups in a container), localhost, temp
// dirs.
func baseFiles(passwd, group string) []imageFile {
	return []imageFile{
		{Path: "/etc/passwd", Data: []byte(passwd), Mode: 0o644},
		{Path: "/etc/group", Data: []byte(group), Mode: 0o644},
		{Path: "/etc/nsswitch.conf", Data: []byte("passwd: files\ngroup: files\nhosts: files dns\n"), Mode: 0o644},
		// The kubelet mounts a pod's own over it; this one serves `ctr run`.
		{Path: "/etc/hosts", Data: []byte("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"), Mode: 0o644},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/var/tmp", Dir: true, Mode: 0o1777},
	}
}
