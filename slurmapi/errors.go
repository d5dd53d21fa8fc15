package slurmapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Slurm error numbers (slurm/slurm_errno.h) used in errors[] entries, so
// that clients which switch on error_number behave as with slurmrestd.
const (
	ErrAgain                 = 11   // EAGAIN: slurmctld's answer when no job id is left
	ErrControllerDown        = 1001 // SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
	ErrRateLimited           = 1804 // SLURMCTLD_COMMUNICATIONS_BACKOFF: over the rate limit, retry
	ErrInvalidPartition      = 2000 // ESLURM_INVALID_PARTITION_NAME
	ErrAccessDenied          = 2002 // ESLURM_ACCESS_DENIED
	ErrInvalidNodeCount      = 2006 // ESLURM_INVALID_NODE_COUNT
	ErrNodesBusy             = 2016 // ESLURM_NODES_BUSY: srun's "step creation temporarily disabled"
	ErrScriptMissing         = 2009 // ESLURM_JOB_SCRIPT_MISSING
	ErrUserIDMissing         = 2010 // ESLURM_USER_ID_MISSING
	ErrPathnameTooLong       = 2012 // ESLURM_PATHNAME_TOO_LONG
	ErrNodeConfigUnavailable = 2014 // ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
	ErrInvalidJobID          = 2017 // ESLURM_INVALID_JOB_ID
	ErrInvalidNodeName       = 2018 // ESLURM_INVALID_NODE_NAME
	ErrAlreadyDone           = 2021 // ESLURM_ALREADY_DONE
	ErrBadTaskCount          = 2025 // ESLURM_BAD_TASK_COUNT
	ErrNotSupported          = 2036 // ESLURM_NOT_SUPPORTED
	ErrDependency            = 2038 // ESLURM_DEPENDENCY
	ErrInvalidTaskMemory     = 2044 // ESLURM_INVALID_TASK_MEMORY
	ErrInvalidAccount        = 2045 // ESLURM_INVALID_ACCOUNT
	ErrAccountingPolicy      = 2050 // ESLURM_ACCOUNTING_POLICY
	ErrInvalidTimeLimit      = 2051 // ESLURM_INVALID_TIME_LIMIT
	ErrInvalidTimeValue      = 2054 // ESLURM_INVALID_TIME_VALUE
	ErrInvalidQOS            = 2066 // ESLURM_INVALID_QOS
	ErrInvalidNodeState      = 2028 // ESLURM_INVALID_NODE_STATE
	ErrInvalidLicenses       = 2048 // ESLURM_INVALID_LICENSES
	ErrReservationAccess     = 2052 // ESLURM_RESERVATION_ACCESS
	ErrReservationInvalid    = 2053 // ESLURM_RESERVATION_INVALID
	ErrReservationEmpty      = 2080 // ESLURM_RESERVATION_EMPTY: no users, groups or accounts
	ErrReservationNameDup    = 2082 // ESLURM_RESERVATION_NAME_DUP
	ErrInvalidGRES           = 2072 // ESLURM_INVALID_GRES
	ErrJobNotPending         = 2073 // ESLURM_JOB_NOT_PENDING
	ErrInvalidBurstBuffer    = 2094 // ESLURM_INVALID_BURST_BUFFER_REQUEST
	ErrInvalidMCSLabel       = 2099 // ESLURM_INVALID_MCS_LABEL
	ErrX11NotAvailable       = 2112 // ESLURM_X11_NOT_AVAIL
	ErrInvalidArray          = 2081 // ESLURM_INVALID_ARRAY
	ErrRestInvalidQuery      = 9000 // ESLURM_REST_INVALID_QUERY
	ErrRestFailParsing       = 9001 // ESLURM_REST_FAIL_PARSING
	ErrRestInvalidJobs       = 9002 // ESLURM_REST_INVALID_JOBS_DESC
	ErrRestEmptyResult       = 9003 // ESLURM_REST_EMPTY_RESULT
	ErrRestUnknownURL        = 9006 // ESLURM_REST_UNKNOWN_URL
	ErrRestUnknownMethod     = 9007 // ESLURM_REST_UNKNOWN_URL_METHOD
	ErrRestAuthFail          = 9008 // ESLURM_REST_AUTH_FAIL
	ErrRestBadRequest        = 9009 // ESLURM_REST_BAD_REQUEST
)

// Error is one errors[] entry together with the HTTP status it answers
// with. Handlers and the Backend return it for anything the client did
// wrong; any other error becomes a 500 with a generic entry.
type Error struct {
	Status      int    // HTTP status, 4xx for client mistakes
	Number      int    // Slurm error number
	Short       string // short form ("Invalid partition name specified")
	Description string // what exactly was wrong, for the user
	Source      string // where it was detected ("job.partition")
	// RetryAfter, when set, is sent as the Retry-After header: the
	// cluster is briefly unavailable and the same request may succeed.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Source, e.Description, e.Short)
	}
	return fmt.Sprintf("%s (%s)", e.Description, e.Short)
}

// short texts as slurm_strerror() gives them.
var shortText = map[int]string{
	ErrAgain:                 "Resource temporarily unavailable",
	ErrControllerDown:        "Unable to contact slurm controller (connect failure)",
	ErrRateLimited:           "Rate limit exceeded, please retry momentarily",
	ErrInvalidPartition:      "Invalid partition name specified",
	ErrAccessDenied:          "Access/permission denied",
	ErrInvalidNodeCount:      "Node count specification invalid",
	ErrScriptMissing:         "Batch job script missing or invalid",
	ErrUserIDMissing:         "Invalid user id",
	ErrPathnameTooLong:       "Pathname of a file, directory or other parameter too long",
	ErrNodeConfigUnavailable: "Requested node configuration is not available",
	ErrInvalidJobID:          "Invalid job id specified",
	ErrInvalidNodeName:       "Invalid node name specified",
	ErrAlreadyDone:           "Job/step already completing or completed",
	ErrBadTaskCount:          "Task count specification invalid",
	ErrNotSupported:          "Requested operation not supported on this system",
	ErrDependency:            "Job dependency problem",
	ErrInvalidTaskMemory:     "Memory required by task is not available",
	ErrInvalidAccount:        "Invalid account or account/partition combination specified",
	ErrAccountingPolicy:      "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
	ErrInvalidTimeLimit:      "Requested time limit is invalid (missing or exceeds some limit)",
	ErrInvalidTimeValue:      "Invalid time specified",
	ErrInvalidQOS:            "Invalid qos specification",
	ErrInvalidGRES:           "Invalid generic resource (gres) specification",
	ErrInvalidNodeState:      "Invalid node state specified",
	ErrInvalidLicenses:       "Invalid license specification",
	ErrReservationAccess:     "Access denied to requested reservation",
	ErrReservationInvalid:    "Requested reservation is invalid",
	ErrReservationEmpty:      "Reservation request lacks users, groups or accounts",
	ErrReservationNameDup:    "Duplicate reservation name",
	ErrJobNotPending:         "Job is no longer pending execution",
	ErrInvalidBurstBuffer:    "Burst Buffer request invalid",
	ErrInvalidMCSLabel:       "Invalid mcs_label specified",
	ErrX11NotAvailable:       "X11 forwarding not available",
	ErrInvalidArray:          "Invalid job array specification",
	ErrRestInvalidQuery:      "Query empty or incorrect type",
	ErrRestFailParsing:       "Unable to parse request",
	ErrRestInvalidJobs:       "Invalid job description",
	ErrRestEmptyResult:       "Nothing found with query",
	ErrRestUnknownURL:        "Unable to find requested URL endpoint",
	ErrRestUnknownMethod:     "Unknown HTTP method requested on known URL endpoint",
	ErrRestAuthFail:          "Authentication failure",
	ErrRestBadRequest:        "Request does not match expected format",
}

// Errorf builds an Error with the short text of its Slurm number.
func Errorf(status, number int, source, format string, args ...any) *Error {
	return &Error{
		Status:      status,
		Number:      number,
		Short:       shortText[number],
		Description: fmt.Sprintf(format, args...),
		Source:      source,
	}
}

// BadRequest is a 400 for a malformed or invalid field.
func BadRequest(number int, source, format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, number, source, format, args...)
}

// NotFound is a 404, used when a named job, node, partition or account
// does not exist (or is not visible to the caller).
func NotFound(number int, source, format string, args ...any) *Error {
	return Errorf(http.StatusNotFound, number, source, format, args...)
}

// Forbidden is a 403 for an authenticated user acting beyond their role.
func Forbidden(source, format string, args ...any) *Error {
	return Errorf(http.StatusForbidden, ErrAccessDenied, source, format, args...)
}

// ErrorTranslator is implemented by a Backend that can word its own
// infrastructure faults (the Kubernetes API unavailable, RBAC missing) as
// errors[] entries; it returns nil for errors it does not recognise.
type ErrorTranslator interface {
	TranslateError(err error) *Error
}

// translate asks the backend, or the one a ledger wraps, to word err.
func translate(b Backend, err error) *Error {
	if lb, ok := b.(ledgerBackend); ok {
		b = lb.Backend
	}
	if t, ok := b.(ErrorTranslator); ok {
		return t.TranslateError(err)
	}
	return nil
}

// asError returns err as an *Error: itself, the backend's translation,
// or a generic 500 entry that does not leak internals beyond the message.
func (s *Server) asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if e := translate(s.backend, err); e != nil {
		return e
	}
	return &Error{
		Status:      http.StatusInternalServerError,
		Number:      1,
		Short:       "Unspecified error",
		Description: err.Error(),
		Source:      "sluice",
	}
}
