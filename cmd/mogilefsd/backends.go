package main

// Metadata backends are linked in here; db_dsn's scheme picks one.
