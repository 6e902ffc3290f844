package testdb

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	dc "github.com/ory/dockertest/v3/docker"
)

// dockerTarget is the engine the docker CLI would talk to, and the
// directory of its TLS files (ca.pem, cert.pem, key.pem), "" for none.
type dockerTarget struct {
	endpoint string // "" = dockertest's default (the local socket)
	tlsDir   string
	from     string // where it was found, for messages
}

// dockerConfigDir is DOCKER_CONFIG, else ~/.docker.
func dockerConfigDir() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".docker")
}

// findDocker finds the engine as the docker CLI does: DOCKER_HOST (TLS
// from DOCKER_CERT_PATH, or from the config directory when only
// DOCKER_TLS_VERIFY is set, as the CLI defaults it), else the context
// DOCKER_CONTEXT or config.json's currentContext names (Docker Desktop,
// Colima, rootless Docker and Podman set one up; its endpoint and TLS
// files live under contexts/ in the config directory), else the default
// socket.
func findDocker() (dockerTarget, error) {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		t := dockerTarget{endpoint: h, from: "DOCKER_HOST"}
		if isTCP(h) {
			switch {
			case os.Getenv("DOCKER_CERT_PATH") != "":
				t.tlsDir = os.Getenv("DOCKER_CERT_PATH")
			case os.Getenv("DOCKER_TLS_VERIFY") != "":
				t.tlsDir = dockerConfigDir()
			}
		}
		return t, nil
	}
	name := os.Getenv("DOCKER_CONTEXT")
	from := "DOCKER_CONTEXT"
	if name == "" {
		b, err := os.ReadFile(filepath.Join(dockerConfigDir(), "config.json"))
		if err != nil {
			return dockerTarget{}, nil // no config: the default socket
		}
		var cfg struct {
			CurrentContext string `json:"currentContext"`
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return dockerTarget{}, fmt.Errorf("docker config %s: %w", filepath.Join(dockerConfigDir(), "config.json"), err)
		}
		name, from = cfg.CurrentContext, "currentContext in config.json"
	}
	if name == "" || name == "default" {
		return dockerTarget{}, nil
	}
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	meta := filepath.Join(dockerConfigDir(), "contexts", "meta", id, "meta.json")
	b, err := os.ReadFile(meta)
	if err != nil {
		return dockerTarget{}, fmt.Errorf("docker context %q (%s): %w", name, from, err)
	}
	var m struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return dockerTarget{}, fmt.Errorf("docker context %q: %s: %w", name, meta, err)
	}
	host := m.Endpoints["docker"].Host
	if host == "" {
		return dockerTarget{}, fmt.Errorf("docker context %q: %s names no docker endpoint", name, meta)
	}
	t := dockerTarget{endpoint: host, from: fmt.Sprintf("docker context %q", name)}
	if tls := filepath.Join(dockerConfigDir(), "contexts", "tls", id, "docker"); isTCP(host) {
		if _, err := os.Stat(filepath.Join(tls, "ca.pem")); err == nil {
			t.tlsDir = tls
		}
	}
	return t, nil
}

func isTCP(endpoint string) bool {
	return strings.HasPrefix(endpoint, "tcp://") || strings.HasPrefix(endpoint, "https://")
}

// registryAuth is what docker pull would send for image: the credential
// helper's or config.json's entry for its registry, else nothing
// (anonymous, as for public images).
func registryAuth(image string) dc.AuthConfiguration {
	reg := "https://index.docker.io/v1/"
	if first, _, found := strings.Cut(image, "/"); found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		reg = first
	}
	if a, err := dc.NewAuthConfigurationsFromCredsHelpers(reg); err == nil && a != nil {
		return *a
	}
	if all, err := dc.NewAuthConfigurationsFromDockerCfg(); err == nil && all != nil {
		for _, key := range []string{reg, "https://" + reg, "http://" + reg} {
			if a, ok := all.Configs[key]; ok {
				return a
			}
		}
	}
	return dc.AuthConfiguration{}
}
