package tracker

// Test hooks.
var DefaultDSNIn = defaultDSN

// SetDefaultDSNFunc replaces what an empty db_dsn means; it returns a
// function restoring the original.
func SetDefaultDSNFunc(f func() string) (restore func()) {
	old := defaultDSNFunc
	defaultDSNFunc = f
	return func() { defaultDSNFunc = old }
}
