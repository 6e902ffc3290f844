package dbinstance

// Alive exposes alive to the tests: a zombie counts as dead.
var Alive = alive
