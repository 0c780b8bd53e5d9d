package controller

import "errors"

// terminalError marks an error that retrying will not fix.
type terminalError struct{ err error }

func (e *terminalError) Error() string { return "terminal error: " + e.err.Error() }
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as not worth retrying: a Controller logs it, counts it
// and forgets the key instead of requeueing it. Terminal(nil) is nil. The
// result wraps err, so errors.Is and errors.As still see it.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, was marked by
// Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}
