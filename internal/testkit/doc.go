// Package testkit holds, in its subpackages, gomogile's test tooling:
// private database servers and clusters (dbinstance), the servers a test
// run uses (testdb, freshdb, dockertest), the fault proxy, the load
// generator, the torture program, raw-SQL benchmarks and access to a
// Store's insides (sqlaccess). They import the tracker, the storage node
// and every backend.
//
// The daemons' own helpers live beside it in internal/ (buildinfo,
// logsetup, netlist, statuslisten, wire). No production package imports
// anything under testkit — only tests and the two test programs,
// cmd/gomogile-bench and cmd/gomogile-torture — and this package's test
// checks that against the import graph.
package testkit
