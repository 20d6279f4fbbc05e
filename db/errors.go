package db

import (
	"errors"
	"fmt"
)

// Error codes. They are the machine-readable codes of the API's error body
// (spec section 7, contract section 2), so server/ maps them to HTTP
// statuses without translation.
const (
	ENOTFOUND     = "not_found"
	EINVALID      = "invalid_request"
	EINVALIDFIELD = "invalid_field"
	EVALIDATION   = "validation_error"
	ECONFLICT     = "conflict"
	EINVALIDSTATE = "invalid_state"
	EUNAUTHORIZED = "unauthorized"
	ETOKENEXPIRED = "token_expired"
	EFORBIDDEN    = "forbidden"
	ERATELIMITED  = "rate_limited"
	ETOOLARGE     = "payload_too_large"
	EUNAVAILABLE  = "unavailable"             // server busy, queue full, shutting down
	EDATASOURCE   = "data_source_unavailable" // an investigation's data source is unreachable
	ETIMEOUT      = "timeout"
	EINTERRUPTED  = "interrupted"
	ECANCELLED    = "cancelled"
	EINTERNAL     = "internal"
)

// Error is the one error type of rootcause's domain. Message is safe to show
// to the caller; internal causes go in Err and are only logged.
type Error struct {
	Code    string
	Message string
	// Field names the offending field (invalid_field, invalid_request).
	Field string
	// Details carries structured details (validation_error: field, error).
	Details map[string]any
	// Err is the underlying cause, never shown to API callers.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Validationf returns a validation_error naming field.
func Validationf(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{
		Code:    EVALIDATION,
		Message: fmt.Sprintf("%s: %s", field, msg),
		Field:   field,
		Details: map[string]any{"field": field, "error": msg},
	}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err: the *Error's message,
// or "internal error" for anything else.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "internal error"
}
