package evidence

import (
	"errors"
	"fmt"
)

// ErrStop is returned by a Scan callback to end the scan early without error.
var ErrStop = errors.New("stop scan")

// Error codes of a source error. The investigation runtime maps them to
// API error codes (CodeUnavailable becomes data_source_unavailable).
const (
	CodeUnavailable   = "unavailable"    // the source cannot be reached
	CodeNotConfigured = "not_configured" // no such integration for this team
	CodeNotFound      = "not_found"      // the object does not exist
	CodeInvalid       = "invalid"        // bad query or arguments
	CodeMalformed     = "malformed"      // bad data in a bundle file
)

// Error is a typed failure of a data source. Source names the integration
// ("kubernetes", "prometheus", ...), and for bundles File and Line locate
// bad data.
type Error struct {
	Source string
	Code   string
	File   string
	Line   int
	Err    error
}

func (e *Error) Error() string {
	where := e.Source
	if e.File != "" {
		where += ": " + e.File
		if e.Line > 0 {
			where += fmt.Sprintf(":%d", e.Line)
		}
	}
	if e.Err == nil {
		return where + ": " + e.Code
	}
	return where + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error for source with code.
func Errorf(source, code, format string, args ...any) *Error {
	return &Error{Source: source, Code: code, Err: fmt.Errorf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// SourceOf returns the source named by the first *Error in err's chain.
func SourceOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Source
	}
	return ""
}
