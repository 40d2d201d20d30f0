package cluster

import (
	"archive/tar"
	"bytes"
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
	ctx, err := imageContext(map[string]string{"/usr/bin/redis-server": server}, map[string]int64{"/data": 0o777, "/tmp": 0o1777}, "/data", "/usr/bin/redis-server")
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", built, err)
	}
	if err := buildImage(client, built, ctx); err != nil {
		return "", err
	}
	say(fmt.Sprintf("image %s not present (lockcheck never pulls): built %s from %s and its libraries", image, built, server))
	return built, nil
}

// imageContext is the build context of an image FROM scratch, in memory
// (nothing is left on disk): rootfs/ with each binary (path in the image
// -> host file), every library ldd names for it, and dirs (path -> mode).
func imageContext(binaries map[string]string, dirs map[string]int64, workdir, entrypoint string) (io.Reader, error) {
	files := map[string]string{} // path in image -> host file
	for dst, src := range binaries {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return nil, err
		}
		files[dst] = real
		out, err := exec.Command("ldd", real).CombinedOutput()
		if err != nil {
			if bytes.Contains(out, []byte("not a dynamic executable")) {
				continue // static: nothing to add
			}
			return nil, fmt.Errorf("ldd %s: %w", real, err)
		}
		libs := lddLine.FindAllStringSubmatch(string(out), -1)
		if len(libs) == 0 {
			return nil, fmt.Errorf("ldd named no libraries for %s", real)
		}
		for _, m := range libs {
			files[m[1]] = m[1]
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY rootfs/ /\nWORKDIR %s\nENTRYPOINT [%q]\n", workdir, entrypoint)
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
	for dir, mode := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: "rootfs" + dir + "/", Mode: mode, Typeflag: tar.TypeDir}); err != nil {
			return nil, err
		}
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

// buildImage builds tag from ctx.
func buildImage(client *dc.Client, tag string, ctx io.Reader) error {
	var out bytes.Buffer
	err := client.BuildImage(dc.BuildImageOptions{Name: tag, InputStream: ctx, OutputStream: &out,
		RmTmpContainer: true, ForceRmTmpContainer: true, Labels: map[string]string{"lockcheck": "image"}})
	if err != nil {
		return fmt.Errorf("build image %s: %w\n%s", tag, err, out.String())
	}
	return nil
}

// LockcheckImageRepo is the repository of the image lockcheck image
// builds: lockcheck itself, for agents and coordinators in containers.
const LockcheckImageRepo = "lockcheck/lockcheck"

// BuildLockcheckImage builds an image FROM scratch, from local files
// only, holding the lockcheck binary bin at /usr/bin/lockcheck (its
// entrypoint), tar (kubectl cp needs it to fetch results) and, if the
// host has one, redis-server (a coordinator's --backend local), with
// their libraries. It returns the tag.
func BuildLockcheckImage(tag, bin string) (string, error) {
	pool, err := dockerPool()
	if err != nil {
		return "", err
	}
	binaries := map[string]string{"/usr/bin/lockcheck": bin}
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		return "", fmt.Errorf("%w: no tar on this host to put in the image (kubectl cp needs it)", ErrNotInstalled)
	}
	binaries["/bin/tar"] = tarBin
	if server, err := findServer(""); err == nil {
		binaries["/usr/bin/redis-server"] = server
	}
	ctx, err := imageContext(binaries, map[string]int64{"/tmp": 0o1777, "/results": 0o777, "/work": 0o777}, "/work", "/usr/bin/lockcheck")
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	return tag, buildImage(pool.Client, tag, ctx)
}
