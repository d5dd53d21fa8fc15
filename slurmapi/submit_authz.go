package slurmapi

// What a job description may ask for depends on who asks: as in Slurm,
// only operators and administrators (AdminLevel) raise a job's standing,
// with a priority or a negative nice; a user may only lower their own.

// maxNice bounds nice as Slurm does (NICE_OFFSET - 3), so that priority
// minus nice never overflows.
const maxNice = 2147483645

// checkNice refuses a nice outside Slurm's range.
func checkNice(n int64, source string) *Error {
	if n < -maxNice || n > maxNice {
		return BadRequest(ErrRestInvalidJobs, source, "nice %d is outside -%d..%d", n, maxNice, maxNice)
	}
	return nil
}

// authorizeSubmission refuses a priority or a negative nice from a caller
// who is not an operator, before anything is stored.
func authorizeSubmission(d *JobDesc, id Identity) *Error {
	if id.IsOperator() {
		return nil
	}
	if d.Priority != 0 {
		return Forbidden("job.priority", "user %s may not set a job's priority (%d): only operators and administrators may; lower your job's standing with nice instead", id.User, d.Priority)
	}
	if d.Nice < 0 {
		return Forbidden("job.nice", "user %s may not set a negative nice (%d): only operators and administrators may raise a job's standing", id.User, d.Nice)
	}
	return nil
}

// authorizeNiceUpdate allows a user to raise their job's nice (lower its
// standing), never to lower it again or below 0; operators set any nice.
func authorizeNiceUpdate(id Identity, current, n int64) *Error {
	if e := checkNice(n, "nice"); e != nil {
		return e
	}
	if id.IsOperator() || (n >= 0 && n >= current) {
		return nil
	}
	return Forbidden("nice", "user %s may not lower the job's nice from %d to %d: only operators and administrators may raise a job's standing", id.User, current, n)
}
