package cluster

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ociArchive is an archive as an importer reads it, its digests checked.
type ociArchive struct {
	index    ociIndex
	manifest ociManifest
	config   ociImage
	layer    map[string]layerFile // by name, no leading slash or trailing slash
	order    []string             // layer entry names as written
}

type layerFile struct {
	hdr  *tar.Header
	data []byte
}

// readOCIArchive reads an archive written by writeOCIArchive and fails t unless
// every blob's content matches its digest and size, as containerd checks on import.
func readOCIArchive(t *testing.T, archive []byte) ociArchive {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = data
	}
	var layout struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(files["oci-layout"], &layout); err != nil || layout.Version != "1.0.0" {
		t.Fatalf("oci-layout = %q (%v), want imageLayoutVersion 1.0.0", files["oci-layout"], err)
	}
	for name, data := range files {
		if hexDigest, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
				t.Errorf("blob %s holds content of digest %x", name, sum)
			}
		}
	}
	blob := func(d ociDescriptor, mediaType string) []byte {
		t.Helper()
		if d.MediaType != mediaType {
			t.Errorf("descriptor %s has media type %q, want %q", d.Digest, d.MediaType, mediaType)
		}
		data, ok := files[blobPath(d)]
		if !ok {
			t.Fatalf("no blob %s for %s", d.Digest, mediaType)
		}
		if int64(len(data)) != d.Size {
			t.Errorf("blob %s is %d bytes, its descriptor says %d", d.Digest, len(data), d.Size)
		}
		return data
	}
	var a ociArchive
	mustUnmarshal(t, files["index.json"], &a.index)
	if len(a.index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(a.index.Manifests))
	}
	mustUnmarshal(t, blob(a.index.Manifests[0], mediaTypeManifest), &a.manifest)
	mustUnmarshal(t, blob(a.manifest.Config, mediaTypeConfig), &a.config)
	if len(a.manifest.Layers) != 1 {
		t.Fatalf("manifest has %d layers, want 1", len(a.manifest.Layers))
	}
	layer := blob(a.manifest.Layers[0], mediaTypeLayer)
	if got := a.config.RootFS.DiffIDs; len(got) != 1 || got[0] != a.manifest.Layers[0].Digest {
		t.Errorf("config rootfs.diff_ids = %v, want the uncompressed layer's digest %s", got, a.manifest.Layers[0].Digest)
	}
	a.layer = map[string]layerFile{}
	tr = tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		a.layer[name] = layerFile{hdr, data}
		a.order = append(a.order, name)
	}
	return a
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
}

// resolve follows p's symlinks in the layer, as a container's path lookup would,
// and returns the entry it ends at; ok is false where some component is missing.
func (a ociArchive) resolve(p string) (string, layerFile, bool) {
	cur := "" // resolved so far, no leading slash; "" is the root
	rest := strings.Split(p, "/")
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur = path.Dir(cur); cur == "." {
				cur = ""
			}
			continue
		}
		name := path.Join(cur, c)
		f, ok := a.layer[name]
		if !ok {
			return name, layerFile{}, false
		}
		if f.hdr.Typeflag != tar.TypeSymlink {
			cur = name
			continue
		}
		if hops++; hops > 40 {
			return name, layerFile{}, false
		}
		if strings.HasPrefix(f.hdr.Linkname, "/") {
			cur = ""
		} // else relative to the symlink's directory, cur
		rest = append(strings.Split(f.hdr.Linkname, "/"), rest...)
	}
	f, ok := a.layer[cur]
	return cur, f, ok
}

func buildArchive(t *testing.T, ref string, files []imageFile, cfg imageConfig) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "image.tar")
	if err := buildImageArchive(p, ref, files, cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestWriteOCIArchive(t *testing.T) {
	src := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o750); err != nil {
		t.Fatal(err)
	}
	files := []imageFile{
		{Path: "/usr/bin/tool", Source: src},
		{Path: "/usr/bin/suid", Source: src, Mode: 0o4755},
		{Path: "/bin", Link: "usr/bin"},
		{Path: "/etc/motd", Data: []byte("hello\n")},
		{Path: "/etc/empty", Data: []byte{}},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/home/alice", Dir: true, UID: 1001, GID: 1001},
		{Path: "/usr/share/" + strings.Repeat("long/", 40) + "file", Data: []byte("deep")},
		{Path: "/etc/motd", Data: []byte("replaced\n")}, // a later entry wins
	}
	cfg := imageConfig{Entrypoint: []string{"/usr/bin/tool"}, Cmd: []string{"-v"}, Env: []string{"A=1"}, WorkingDir: "/tmp", User: "1001:1001"}
	archive := buildArchive(t, "sluice.local:5000/test/img:v1", files, cfg)
	if again := buildArchive(t, "sluice.local:5000/test/img:v1", files, cfg); !bytes.Equal(archive, again) {
		t.Error("the same image built twice gives different archives")
	}
	a := readOCIArchive(t, archive)

	want := map[string]string{annotationImageName: "sluice.local:5000/test/img:v1", annotationRefName: "v1"}
	for k, v := range want {
		if got := a.index.Manifests[0].Annotations[k]; got != v {
			t.Errorf("index.json manifest annotation %s = %q, want %q", k, got, v)
		}
	}
	if a.config.OS != "linux" || a.config.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s, want linux/%s", a.config.OS, a.config.Architecture, runtime.GOARCH)
	}
	c := a.config.Config
	if strings.Join(c.Entrypoint, " ") != "/usr/bin/tool" || strings.Join(c.Cmd, " ") != "-v" ||
		strings.Join(c.Env, " ") != "A=1" || c.WorkingDir != "/tmp" || c.User != "1001:1001" {
		t.Errorf("config = %+v, want %+v", c, cfg)
	}

	for _, tc := range []struct {
		name     string
		typ      byte
		mode     int64
		uid      int
		data     string // for regular files
		linkname string
	}{
		{name: "usr", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/bin/tool", typ: tar.TypeReg, mode: 0o750, data: "#!/bin/sh\necho hi\n"},
		{name: "usr/bin/suid", typ: tar.TypeReg, mode: 0o4755, data: "#!/bin/sh\necho hi\n"},
		{name: "bin", typ: tar.TypeSymlink, mode: 0o777, linkname: "usr/bin"},
		{name: "etc/motd", typ: tar.TypeReg, mode: 0o644, data: "replaced\n"},
		{name: "etc/empty", typ: tar.TypeReg, mode: 0o644},
		{name: "tmp", typ: tar.TypeDir, mode: 0o1777},
		{name: "home", typ: tar.TypeDir, mode: 0o755},
		{name: "home/alice", typ: tar.TypeDir, mode: 0o755, uid: 1001},
		{name: "usr/share/" + strings.Repeat("long/", 40) + "file", typ: tar.TypeReg, mode: 0o644, data: "deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := a.layer[tc.name]
			if !ok {
				t.Fatalf("layer has no %s; it has %v", tc.name, a.order)
			}
			h := f.hdr
			if h.Typeflag != tc.typ || h.Mode != tc.mode || h.Uid != tc.uid || h.Gid != tc.uid ||
				string(f.data) != tc.data || h.Linkname != tc.linkname {
				t.Errorf("%s: type %c mode %#o owner %d:%d link %q content %q; want type %c mode %#o owner %d:%d link %q content %q",
					tc.name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, f.data, tc.typ, tc.mode, tc.uid, tc.uid, tc.linkname, tc.data)
			}
			if !h.ModTime.Equal(layerTime) {
				t.Errorf("%s: mtime %s, want the fixed %s", tc.name, h.ModTime, layerTime)
			}
		})
	}
	if want := 11 + 2 + 40; len(a.order) != want { // 11 above, etc, usr/share, 40 long/
		t.Errorf("layer has %d entries, want %d: %v", len(a.order), want, a.order)
	}
	seen := map[string]bool{}
	for i, name := range a.order {
		if i > 0 && a.order[i-1] >= name {
			t.Errorf("layer entries not sorted: %s before %s", a.order[i-1], name)
		}
		if dir := path.Dir(name); dir != "." && !seen[dir] {
			t.Errorf("layer entry %s comes before its directory %s", name, dir)
		}
		seen[name] = true
	}
	if got, _, ok := a.resolve("/bin/tool"); !ok || got != "usr/bin/tool" {
		t.Errorf("/bin/tool resolves to %q (found %v), want usr/bin/tool", got, ok)
	}
}

func TestWriteOCIArchiveRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ref   string
		files []imageFile
		want  string
	}{
		{"no tag", "sluice.local/job", nil, "no tag"},
		{"port, no tag", "sluice.local:5000/job", nil, "no tag"},
		{"relative path", "x/y:z", []imageFile{{Path: "etc/motd", Data: []byte("x")}}, "not absolute"},
		{"under a symlink", "x/y:z", []imageFile{{Path: "/bin", Link: "usr/bin"}, {Path: "/bin/bash", Data: []byte("x")}}, "list it at its real path"},
		{"under a file", "x/y:z", []imageFile{{Path: "/etc", Data: []byte("x")}, {Path: "/etc/motd", Data: []byte("x")}}, "not a directory"},
		{"two kinds", "x/y:z", []imageFile{{Path: "/x", Dir: true, Link: "y"}}, "more than one"},
		{"missing source", "x/y:z", []imageFile{{Path: "/x", Source: "/nonexistent/sluice-test"}}, "/nonexistent/sluice-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := writeOCIArchive(io.Discard, tc.ref, tc.files, imageConfig{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("writeOCIArchive(%s) = %v, want an error with %q", tc.name, err, tc.want)
			}
		})
	}
}

func requireDpkg(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("not a Debian machine: the rig's images need dpkg-query")
	}
}

func TestDebianFiles(t *testing.T) {
	requireDpkg(t)
	files, err := debianFiles([]string{"bash", "coreutils"})
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]imageFile{}
	for _, f := range files {
		if _, dup := byPath[f.Path]; dup {
			t.Errorf("%s listed twice", f.Path)
		}
		byPath[f.Path] = f
		if debianSkip(f.Path) {
			t.Errorf("%s listed, but documentation and translations are skipped", f.Path)
		}
	}
	if f := byPath["/usr/bin/bash"]; f.Source != "/usr/bin/bash" || f.Mode != 0o755 {
		t.Errorf("/usr/bin/bash = %+v, want a copy of the host's, mode 0755", f)
	}
	if target, err := os.Readlink("/bin"); err == nil {
		if f := byPath["/bin"]; f.Link != target {
			t.Errorf("/bin = %+v, want a symlink to %s as on this machine", f, target)
		}
		if _, ok := byPath["/bin/bash"]; ok {
			t.Error("/bin/bash listed under the /bin symlink, want it at its real path only")
		}
	}
	// The layer must take the list as it is: no file under a symlink.
	if _, err := layerEntries(files); err != nil {
		t.Error(err)
	}

	_, err = debianFiles([]string{"bash", "sluice-no-such-package", "sluice-nor-this"})
	if err == nil || !strings.Contains(err.Error(), "apt-get install sluice-no-such-package sluice-nor-this") {
		t.Errorf("debianFiles with packages not installed = %v, want an error with their apt-get install line", err)
	}
}

// checkLibraries fails t unless every library ldd finds for each host binary, and
// its dynamic loader, resolves in the image to a regular file: the image has the
// same files at the same paths, so the loader there finds what ldd finds here.
func checkLibraries(t *testing.T, a ociArchive, binaries ...string) {
	t.Helper()
	for _, bin := range binaries {
		out, err := exec.Command("ldd", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("ldd %s: %v: %s", bin, err, out)
		}
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", or the
			// loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"; the vDSO has no file.
			f := strings.Fields(line)
			var lib string
			switch {
			case len(f) >= 3 && f[1] == "=>":
				lib = f[2]
			case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
				lib = f[0]
			default:
				continue
			}
			n++
			if got, file, ok := a.resolve(lib); !ok || file.hdr.Typeflag != tar.TypeReg {
				t.Errorf("%s needs %s, which the image lacks (resolved to %q)", bin, lib, got)
			}
		}
		if n == 0 {
			t.Errorf("ldd %s found no libraries: %s", bin, out)
		}
	}
}

func TestJobImage(t *testing.T) {
	requireDpkg(t)
	files, cfg, err := jobImage()
	if err != nil {
		t.Fatal(err)
	}
	a := readOCIArchive(t, buildArchive(t, JobImage, files, cfg))
	if got := a.index.Manifests[0].Annotations[annotationImageName]; got != JobImage {
		t.Errorf("image name %q, want %q", got, JobImage)
	}
	if strings.Join(a.config.Config.Cmd, " ") != "/bin/bash" || !strings.Contains(strings.Join(a.config.Config.Env, " "), "PATH=/usr/local/sbin:") {
		t.Errorf("config %+v, want Cmd /bin/bash and a PATH", a.config.Config)
	}
	if f := a.layer["bin"]; f.hdr == nil || f.hdr.Typeflag != tar.TypeSymlink || f.hdr.Linkname != "usr/bin" {
		t.Errorf("bin is not a symlink to usr/bin: %+v", f.hdr)
	}
	for _, tc := range []struct {
		path, want string
		mode       int64
	}{
		{"/bin/bash", "usr/bin/bash", 0o755},
		{"/bin/sh", "usr/bin/bash", 0o755},
		{"/usr/bin/id", "usr/bin/id", 0o755},
		{"/bin/hostname", "usr/bin/hostname", 0o755},
		{"/bin/ps", "usr/bin/ps", 0o755},
		{"/usr/bin/grep", "usr/bin/grep", 0o755},
		{"/bin/sed", "usr/bin/sed", 0o755},
		{"/lib64/ld-linux-x86-64.so.2", "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0o755},
		{"/etc/passwd", "etc/passwd", 0o644},
		{"/tmp", "tmp", 0o1777},
		{"/root", "root", 0o700},
		{"/home/alice", "home/alice", 0o755},
	} {
		got, f, ok := a.resolve(tc.path)
		if !ok || got != tc.want || f.hdr.Mode != tc.mode {
			t.Errorf("%s resolves to %q (found %v), want %s with mode %#o", tc.path, got, ok, tc.want, tc.mode)
		} else if f.hdr.Uid != 0 && !strings.HasPrefix(got, "home/") {
			t.Errorf("%s is owned by %d, want root", tc.path, f.hdr.Uid)
		}
	}
	if f := a.layer["usr/bin/bash"]; f.hdr == nil || f.hdr.Typeflag != tar.TypeReg {
		t.Error("usr/bin/bash is not a regular file")
	}
	if f := a.layer["home/bob"]; f.hdr == nil || f.hdr.Uid != 1002 || f.hdr.Gid != 1002 {
		t.Error("home/bob is not bob's")
	}
	passwd := string(a.layer["etc/passwd"].data)
	for _, want := range []string{"root:x:0:0:", "alice:x:1001:1001:", "bob:x:1002:1002:", "nobody:x:65534:65534:"} {
		if !strings.Contains(passwd, want) {
			t.Errorf("/etc/passwd lacks %q:\n%s", want, passwd)
		}
	}
	if _, _, ok := a.resolve("/usr/share/doc"); ok {
		t.Error("the image has /usr/share/doc")
	}

	binaries := []string{"/bin/bash", "/usr/bin/id", "/usr/bin/hostname", "/usr/bin/ps", "/usr/bin/top", "/usr/bin/grep", "/usr/bin/sed", "/usr/bin/expr"}
	if installed, _ := debianInstalled([]string{"python3.11-minimal"}); installed["python3.11-minimal"] {
		binaries = append(binaries, "/usr/bin/python3.11")
		for _, p := range []string{"/usr/bin/python3", "/usr/lib/python3.11/encodings/__init__.py", "/usr/lib/python3.11/site.py"} {
			if _, _, ok := a.resolve(p); !ok {
				t.Errorf("python3.11-minimal is installed here, but the image lacks %s", p)
			}
		}
	} else {
		t.Log("python3.11-minimal is not installed here: the job image has no python3")
	}
	checkLibraries(t, a, binaries...)
}

// TestSluiceImage builds the sluice image around a stand-in binary: building sluice
// takes minutes, and what the image must provide is the same for any program linked
// only against glibc, as a cgo Go binary is (hostname is, see checkLibraries).
func TestSluiceImage(t *testing.T) {
	requireDpkg(t)
	const standIn = "/usr/bin/hostname"
	files, cfg, err := sluiceImage(standIn)
	if err != nil {
		t.Fatal(err)
	}
	a := readOCIArchive(t, buildArchive(t, SluiceImage, files, cfg))
	c := a.config.Config
	if strings.Join(c.Entrypoint, " ") != "/sluice" || c.User != "65532:65532" {
		t.Errorf("config %+v, want Entrypoint /sluice and User 65532:65532", c)
	}
	want, err := os.ReadFile(standIn)
	if err != nil {
		t.Fatal(err)
	}
	if f := a.layer["sluice"]; f.hdr == nil || f.hdr.Typeflag != tar.TypeReg || f.hdr.Mode != 0o755 || !bytes.Equal(f.data, want) {
		t.Error("/sluice is not the binary, mode 0755")
	}
	if f := a.layer["tmp"]; f.hdr == nil || f.hdr.Mode != 0o1777 {
		t.Error("/tmp is not mode 01777")
	}
	checkLibraries(t, a, standIn)

	if _, _, err := sluiceImage(filepath.Join(t.TempDir(), "sluice")); err == nil {
		t.Error("sluiceImage of a missing binary succeeded")
	}
}
