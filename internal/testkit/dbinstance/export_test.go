package dbinstance

// Alive exposes alive to the tests: a zombie counts as dead.
var Alive = alive

// TempDir exposes tempDir, which sweeps stale directories first.
func TempDir(parent, pattern string) (string, error) { return tempDir(parent, pattern, nil) }

// FreePort exposes freePort.
var FreePort = freePort
