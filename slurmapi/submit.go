package slurmapi

import (
	"context"
	"time"
)

// checkSubmitter refuses a submission by user whose jobs may not run at this
// site (SubmitPolicy.CheckUser), before its body is read: no job id is given.
func checkSubmitter(ctx context.Context, user string, pol SubmitPolicy) *Error {
	if pol.CheckUser == nil {
		return nil
	}
	return pol.CheckUser(ctx, user)
}

// DecodeSubmission turns a POST job/submit body from user into a
// validated JobDesc, ready for Backend.Submit. Every problem is an *Error
// with a 4xx status naming the field; warnings name #SBATCH options that
// were accepted without effect.
func DecodeSubmission(body []byte, user string, cat *Catalog, pol SubmitPolicy, now time.Time) (*JobDesc, []string, *Error) {
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
	if e := cat.checkReservation(d, now); e != nil {
		return nil, nil, e
	}
	return d, warnings, nil
}
