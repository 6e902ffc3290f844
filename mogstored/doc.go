// Package mogstored is the gomogile storage node: the HTTP file server and
// management ("side channel") port that MogileFS trackers talk to, built as a
// component that a daemon or a test can embed.
//
// Use it like this:
//
//	cfg := mogstored.DefaultConfig()
//	cfg.DocRoot = dir                 // holds dev1, dev2, … (one per MogileFS device)
//	cfg.HTTPListen = "127.0.0.1:0"    // ":0" picks a free port; read it back with HTTPAddr
//	cfg.MgmtListen = "127.0.0.1:0"
//	s := mogstored.New(cfg)
//	if err := s.Open(ctx); err != nil { … }
//	defer s.Close()
//
// What it promises, and where it follows the Perl mogstored:
//
//   - HTTP (Mogstored::HTTPServer::Perlbal, Perlbal::ClientHTTP): GET and HEAD
//     (with Range), PUT, DELETE and MKCOL below an existing docroot/dev<N>
//     directory. The tracker's layout is /dev<N>/<b>/<mmm>/<ttt>/<fid>.fid
//     (MogileFS::DevFID), but any path below a device directory works. PUT
//     creates missing parent directories (the tracker may skip MKCOL) but never
//     the device directory itself: a missing device answers 404, as Perlbal's
//     min_put_directory check does. PUT answers 200, DELETE 204 or 404.
//   - PUT is atomic: the body goes to a hidden temporary file in the target
//     directory, is synced, and is renamed over the target only when the whole
//     body arrived (and matched Content-MD5 when one was sent, which the
//     tracker's monitor probes for). A short body, a disconnect or Close leaves
//     neither a partial file nor the temporary file.
//   - PUT with Content-Range ("bytes first-last/total" or "bytes
//     first-last/*") writes the body into the file at that offset, as
//     Apache's and nginx's WebDAV modules do for MogileFS::Client's
//     largefile mode (ClientHTTPFile: an empty PUT, then one ranged PUT per
//     chunk). Perlbal ignored the header, which made such uploads fail
//     create_close with size_mismatch. The body is received and verified
//     (length, Content-MD5) in a temporary file first and written into the
//     file only when complete, then synced; a range starting beyond the end
//     of the file answers 416 (so a lost chunk is never a hole of zeros), a
//     malformed range or a body of another length 400, and neither changes
//     the file. A ranged PUT grows a file but never truncates it;
//     create_close's size check judges the result.
//   - Containment: request paths must be plain /dev<N>/name/… made of
//     [A-Za-z0-9_.-] segments; "..", percent-encoding, empty or dot-leading
//     segments get 400. Every file operation goes through an os.Root opened on
//     the device directory, so a symlink leading out of it is refused with 403
//     and nothing is read or written outside. The device directory itself may be
//     a mount point or a symlink placed by the operator.
//   - Usage files (Mogstored::ChildProcess::DiskUsage): docroot/dev<N>/usage is
//     written for every device directory when Open returns and every
//     UsageInterval after, with the original's sorted "key: value" lines in
//     KiB. The monitor reads it with GET /dev<N>/usage.
//   - Management port (Mogstored::SideChannelClient): "size <uri>",
//     "MD5 <uri> [fsck]" and "SHA-1 <uri> [fsck]", "watch" (per-device I/O
//     utilisation, Linux /proc/diskstats), "shutdown [graceful]"; anything
//     else answers "ERROR: unknown command: <cmd>" as Perlbal's manage
//     interface does.
//   - MaxConns bounds concurrent HTTP connections. When all are taken the
//     server stops accepting, so further clients wait in the kernel's listen
//     backlog rather than being refused; that is what the original's file
//     descriptor limit (Perlbal max_connections = RLIMIT_NOFILE) amounted to.
//   - Hostile clients: writenetworks limits PUT, DELETE and MKCOL and
//     mgmtnetworks the management port's "shutdown" (both empty = everyone, as
//     the original); a device's usage file cannot be written or deleted over
//     HTTP. A PUT body that sends nothing for BodyTimeout, or averages less
//     than MinBodyRate after it, is cut with 408; MaxConnsPerIP bounds one
//     address's HTTP connections (503 beyond), MgmtMaxConns and
//     MgmtIdleTimeout the management port. See the README's "Security".
//   - A request with a body that is answered without reading it (every
//     refusal: 403, 404, 400, 405, 409, 415, net/http's 417; and a GET,
//     DELETE or MKCOL sent with a body) gets the answer at once, with
//     "Connection: close". What the client still sends is read and dropped
//     (at most 256 KiB, net/http's bound) until BodyTimeout after the
//     request arrived, or after the last byte an upload that failed midway
//     read, and then the connection is closed: a client trickling a refused
//     body holds it no longer than BodyTimeout. Only a body read to its end
//     keeps the connection for another request.
//   - Close stops accepting, lets uploads in flight finish for up to
//     ShutdownTimeout, then cuts them (their temporary files are removed) and
//     returns. Temporaries orphaned by a crash or kill -9 are swept by a
//     background walk after the next Open once they are an hour old.
//
// Main is the mogstored command (cmd/mogstored only wires signals to it): the
// original's flags and mogstored.conf keys, with flags overriding the file.
// --daemonize re-executes the binary detached with setsid and returns once
// the child reports that it serves, or with the child's start-up error.
// Its log follows log_level, log_format and log_file as the tracker's
// (internal/logsetup): stderr, or syslog once detached, unless log_file
// names a file.
package mogstored
