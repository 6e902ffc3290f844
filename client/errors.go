package client

import (
	"errors"
)

// Error is an "ERR <code> <message>" reply from a tracker. Code is the
// machine-readable word (Query.pm's err_line codes: "unknown_key",
// "unreg_domain", ...); Message is the human text, which the tracker fills
// from the code when it has nothing better.
//
// Match a code with errors.Is against the Err* sentinels below, which are
// themselves *Error values compared by Code only; use errors.As to read
// the message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" || e.Message == e.Code {
		return "mogilefs: " + e.Code
	}
	return "mogilefs: " + e.Code + ": " + e.Message
}

// Is makes errors.Is(err, ErrUnknownKey) true for any *Error with that
// code, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Tracker error codes worth branching on, as sent by the original
// MogileFS::Worker::Query. Compare with errors.Is.
var (
	ErrUnknownKey       = &Error{Code: "unknown_key"}         // no file with that key
	ErrUnknownFid       = &Error{Code: "unknown_fid"}         // file_debug: nothing known about the fid
	ErrNoKey            = &Error{Code: "no_key"}              // key argument missing or empty
	ErrNoDomain         = &Error{Code: "no_domain"}           // domain argument missing or empty
	ErrUnregDomain      = &Error{Code: "unreg_domain"}        // domain does not exist (file commands)
	ErrUnregClass       = &Error{Code: "unreg_class"}         // class does not exist (create_open)
	ErrDomainExists     = &Error{Code: "domain_exists"}       // create_domain of an existing name
	ErrDomainNotFound   = &Error{Code: "domain_not_found"}    // admin commands on a missing domain
	ErrDomainHasFiles   = &Error{Code: "domain_has_files"}    // delete_domain refused
	ErrDomainHasClasses = &Error{Code: "domain_has_classes"}  // delete_domain refused
	ErrClassExists      = &Error{Code: "class_exists"}        // create_class of an existing name
	ErrClassNotFound    = &Error{Code: "class_not_found"}     // update_class, delete_class, updateclass
	ErrClassHasFiles    = &Error{Code: "class_has_files"}     // delete_class refused
	ErrKeyExists        = &Error{Code: "key_exists"}          // rename onto an existing key
	ErrNoneMatch        = &Error{Code: "none_match"}          // list_keys found nothing
	ErrNoDevices        = &Error{Code: "no_devices"}          // no writable device for create_open
	ErrHostExists       = &Error{Code: "host_exists"}         // create_host of an existing name
	ErrHostNotFound     = &Error{Code: "host_not_found"}      // update_host of a missing host
	ErrUnknownHost      = &Error{Code: "unknown_host"}        // delete_host, create_device by name
	ErrHostNotEmpty     = &Error{Code: "host_not_empty"}      // delete_host with devices
	ErrNoDevice         = &Error{Code: "no_device"}           // set_state, set_weight: no such devid
	ErrUnknownCommand   = &Error{Code: "unknown_command"}     // the tracker does not know the command
	ErrSizeMismatch     = &Error{Code: "size_mismatch"}       // create_close: stored size differs
	ErrChecksumMismatch = &Error{Code: "checksum_mismatch"}   // create_close: checksum differs
	ErrFsckRunning      = &Error{Code: "fsck_running"}        // fsck_start while running
	ErrExistingDevid    = &Error{Code: "existing_devid"}      // create_device of a used devid
	ErrNoTempFile       = &Error{Code: "no_temp_file"}        // create_close twice
	ErrInvalidState     = &Error{Code: "invalid_state"}       // create_device with a bad state
	ErrStateTooHigh     = &Error{Code: "state_too_high"}      // set_state dead -> alive
	ErrNotWritable      = &Error{Code: "not_writable"}        // set_server_setting of a read-only key
	ErrFailure          = &Error{Code: "failure"}             // the command died on the tracker
	ErrDup              = &Error{Code: "dup"}                 // duplicate name/number
	ErrInvalidDestDev   = &Error{Code: "invalid_destdev"}     // create_close with a devid not offered
	ErrSizeVerify       = &Error{Code: "size_verify_error"}   // create_close could not stat the upload
	ErrNoRebalState     = &Error{Code: "no_rebal_state"}      // rebalance_status without state
	ErrNodelDefault     = &Error{Code: "nodel_default_class"} // delete_class "default"
)

// Failures of the client itself, not reported by a tracker.
var (
	// ErrProtocol: the peer sent something that is not a reply line.
	ErrProtocol = errors.New("mogilefs client: protocol error")
	// ErrReplyTooLong: a reply line exceeded Options.MaxReplyBytes.
	ErrReplyTooLong = errors.New("mogilefs client: reply line too long")
	// ErrUnknownOutcome: the connection failed after a command that is not
	// safe to repeat had been sent; the tracker may or may not have run
	// it, so the client did not retry it elsewhere.
	ErrUnknownOutcome = errors.New("mogilefs client: outcome unknown, command not retried")
	// ErrNoTracker: no tracker could be reached.
	ErrNoTracker = errors.New("mogilefs client: no tracker reachable")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("mogilefs client: closed")
	// ErrBadCommand: the command name is not a word, so it cannot be sent.
	ErrBadCommand = errors.New("mogilefs client: invalid command name")
	// ErrAllPathsFailed: every storage path offered by the tracker failed.
	ErrAllPathsFailed = errors.New("mogilefs client: every path failed")
)
