// Package client speaks the MogileFS tracker protocol, for gomogile's
// trackers and for the original MogileFS (mogilefsd 2.x) alike: it is what
// our end-to-end tests drive trackers with, and what cmd/mogtool is built
// on.
//
// # Protocol
//
// A request is one line, "cmd k1=v1&k2=v2\r\n"; the reply is one line,
// "OK k1=v1&...\r\n" or "ERR <code> <message>\r\n". Keys and values are
// escaped as the tracker does (space as '+', everything but letters,
// digits and "_,-./\:" as %XX). Do sends any command raw; the methods
// wrap the commands of MogileFS::Worker::Query with the argument and reply
// names it uses, and name each one in their docs.
//
// # Errors
//
// An ERR reply is a *Error; match its code with errors.Is against the Err*
// sentinels (errors.Is(err, client.ErrUnknownKey)). Failures of the client
// itself wrap ErrNoTracker, ErrUnknownOutcome, ErrReplyTooLong,
// ErrProtocol, ErrAllPathsFailed or the network or context error.
//
// # Connections and retries
//
// Each tracker keeps one idle connection for reuse; commands are spread
// over trackers round-robin. A tracker that cannot be reached is skipped
// (and tried last for Options.DeadRetry). A command whose connection
// breaks after it was sent is retried elsewhere only if it is read-only;
// any other command then fails with ErrUnknownOutcome, since running it
// twice could, say, delete a key re-created in between. ctx bounds every
// call; its deadline and cancellation reach the socket.
//
// # Files
//
// StoreFile and FetchFile add the HTTP half: create_open, a PUT to a
// storage node, create_close; or get_paths and a GET, trying each path
// the tracker offers in turn.
package client
