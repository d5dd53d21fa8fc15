package slurmapi

import (
	"net/http"
	"time"
)

// DecodeSubmission turns a POST job/submit body from user into a
// validated JobDesc, ready for Backend.Submit. Every problem is an *Error
// with a 4xx status naming the field; warnings name #SBATCH options that
// were accepted without effect.
func DecodeSubmission(body []byte, user string, cat *Catalog, pol SubmitPolicy, now time.Time) (*JobDesc, []string, *Error) {
	if pol.MayRun != nil && !pol.MayRun(user) {
		return nil, nil, Errorf(http.StatusForbidden, ErrUserIDMissing, "user",
			"user %s has no uid at this site and users without one may not run jobs: ask an administrator to map it (slurm.users)", user)
	}
	req, e := decodeSubmitBody(body)
	if e != nil {
		return nil, nil, e
	}
	d, warnings, e := buildJobDesc(req, user, now, pol)
	if e != nil {
		return nil, nil, e
	}
	if e := cat.resolve(d); e != nil {
		return nil, nil, e
	}
	return d, warnings, nil
}
