package testdb

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// findDocker reads what the docker CLI reads: DOCKER_HOST first, with TLS
// from DOCKER_CERT_PATH or (DOCKER_TLS_VERIFY alone) the config
// directory; else the current context's endpoint and TLS files.
func TestFindDocker(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY", "DOCKER_CONTEXT"} {
		t.Setenv(k, "")
	}
	got := func() dockerTarget {
		t.Helper()
		tg, err := findDocker()
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	if tg := got(); tg.endpoint != "" || tg.tlsDir != "" {
		t.Errorf("no config: %+v; want the default socket", tg)
	}
	// A context, made current in config.json, with TLS files.
	id := sha256.Sum256([]byte("remote"))
	hash := hex.EncodeToString(id[:])
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cfg, "config.json"), `{"currentContext": "remote", "auths": {"registry.example:5000": {"auth": "dTpw"}}}`)
	write(filepath.Join(cfg, "contexts", "meta", hash, "meta.json"), `{"Name":"remote","Endpoints":{"docker":{"Host":"tcp://10.1.2.3:2376","SkipTLSVerify":false}}}`)
	write(filepath.Join(cfg, "contexts", "tls", hash, "docker", "ca.pem"), "x")
	if tg := got(); tg.endpoint != "tcp://10.1.2.3:2376" || tg.tlsDir != filepath.Join(cfg, "contexts", "tls", hash, "docker") {
		t.Errorf("current context: %+v", tg)
	}
	// DOCKER_CONTEXT names another; default is the socket.
	t.Setenv("DOCKER_CONTEXT", "default")
	if tg := got(); tg.endpoint != "" {
		t.Errorf("DOCKER_CONTEXT=default: %+v", tg)
	}
	t.Setenv("DOCKER_CONTEXT", "missing")
	if _, err := findDocker(); err == nil {
		t.Error("a context that does not exist: no error")
	}
	// DOCKER_HOST wins; DOCKER_TLS_VERIFY alone takes the config directory.
	t.Setenv("DOCKER_HOST", "tcp://docker:2376")
	t.Setenv("DOCKER_TLS_VERIFY", "1")
	if tg := got(); tg.endpoint != "tcp://docker:2376" || tg.tlsDir != cfg {
		t.Errorf("DOCKER_HOST with DOCKER_TLS_VERIFY: %+v", tg)
	}
	t.Setenv("DOCKER_CERT_PATH", "/certs/client")
	if tg := got(); tg.tlsDir != "/certs/client" {
		t.Errorf("DOCKER_CERT_PATH: %+v", tg)
	}
	t.Setenv("DOCKER_HOST", "unix:///run/docker.sock")
	if tg := got(); tg.tlsDir != "" {
		t.Errorf("a socket with TLS: %+v", tg)
	}
	// Pulls send what config.json holds for the image's registry.
	if a := registryAuth("registry.example:5000/mariadb:10.11"); a.Username != "u" || a.Password != "p" {
		t.Errorf("registryAuth: %+v; want u/p from config.json", a)
	}
	if a := registryAuth("mysql:8.4.3"); a.Username != "" {
		t.Errorf("registryAuth for Docker Hub without an entry: %+v; want anonymous", a)
	}
}
