package cluster

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	dc "github.com/ory/dockertest/v3/docker"
)

// DefaultImage is the image of the docker backend. lockcheck never pulls
// (it works offline, and sends no traffic beyond loopback and its own
// containers): an image not present locally is built from the host's
// redis-server instead.
const DefaultImage = "redis:7.0"

// LocalImageRepo is the repository of images lockcheck builds.
const LocalImageRepo = "lockcheck/redis"

// lddLine is one line of ldd: "name => /path (addr)" or "/path (addr)".
var lddLine = regexp.MustCompile(`(?m)(/[^\s]+) \(0x`)

// ensureImage returns an image to run: image if present; otherwise one
// built from the host's redis-server binary and the shared libraries it
// loads, FROM scratch, tagged lockcheck/redis:<version>. say gets the one
// line that says so.
func ensureImage(client *dc.Client, image, server string, say func(string)) (string, error) {
	if image == "" {
		image = DefaultImage
	}
	if _, err := client.InspectImage(image); err == nil {
		return image, nil
	}
	if server == "" {
		var err error
		if server, err = findServer(""); err != nil {
			return "", fmt.Errorf("%w: image %s is not present and lockcheck never pulls; nor is there a redis-server on this host to build one from: `docker load` an image and pass --image, or install redis-server", ErrNotInstalled, image)
		}
	}
	version, err := ServerVersion(server)
	if err != nil {
		return "", err
	}
	built := LocalImageRepo + ":" + version
	if _, err := client.InspectImage(built); err == nil {
		return built, nil
	}
	ctx, err := imageContext(server)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", built, err)
	}
	var out bytes.Buffer
	err = client.BuildImage(dc.BuildImageOptions{Name: built, InputStream: ctx, OutputStream: &out,
		RmTmpContainer: true, ForceRmTmpContainer: true, Labels: map[string]string{"lockcheck": "image"}})
	if err != nil {
		return "", fmt.Errorf("build image %s: %w\n%s", built, err, out.String())
	}
	say(fmt.Sprintf("image %s not present (lockcheck never pulls): built %s from %s and its libraries", image, built, server))
	return built, nil
}

// imageContext is the build context, in memory (nothing is left on disk):
// a Dockerfile and rootfs/ with the binary and every library ldd names.
func imageContext(server string) (io.Reader, error) {
	real, err := filepath.EvalSymlinks(server)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("ldd", real).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", real, err)
	}
	files := map[string]string{"/usr/bin/redis-server": real} // path in image -> host file
	for _, m := range lddLine.FindAllStringSubmatch(string(out), -1) {
		files[m[1]] = m[1]
	}
	if len(files) < 2 {
		return nil, errors.New("ldd named no libraries: is redis-server dynamically linked?")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := "FROM scratch\nCOPY rootfs/ /\nWORKDIR /data\nENTRYPOINT [\"/usr/bin/redis-server\"]\n"
	add := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("Dockerfile", 0o644, []byte(dockerfile)); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs/data/", Mode: 0o777, Typeflag: tar.TypeDir}); err != nil {
		return nil, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "rootfs/tmp/", Mode: 0o1777, Typeflag: tar.TypeDir}); err != nil {
		return nil, err
	}
	for dst, src := range files {
		data, err := os.ReadFile(src) // follows symlinks: the real library
		if err != nil {
			return nil, err
		}
		if err := add("rootfs"+dst, 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}
