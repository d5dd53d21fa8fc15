package slurmapi

import (
	"strings"

	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// setSignal reads the job's warning signal: --signal=[{R|B}:]SIG[@TIME], or
// kill_warning_signal, kill_warning_delay (seconds) and kill_warning_flags
// (BATCH_JOB is B:, RESERVATION_JOB is R:), which win over the directive
// part by part, as slurmrestd's fields do.
func setSignal(d *JobDesc, in *jobDescIn, opts *sbatch.Options) *Error {
	var s sbatch.Signal
	if opts.Signal != nil {
		s = *opts.Signal
	}
	delay, hasDelay := in.KillWarningDelay.Value()
	if in.KillWarningSignal == nil && !hasDelay && in.KillWarningFlags == nil {
		if opts.Signal != nil {
			d.Signal = s.String()
		}
		return nil
	}
	if in.KillWarningSignal != nil {
		n, err := sbatch.SignalNumber(*in.KillWarningSignal)
		if err != nil {
			return BadRequest(ErrRestInvalidJobs, "job.kill_warning_signal", "%v", err)
		}
		s.Num = n
	}
	if s.Num == 0 {
		return BadRequest(ErrRestInvalidJobs, "job.kill_warning_signal", "kill_warning_delay and kill_warning_flags need a kill_warning_signal (or --signal)")
	}
	if opts.Signal == nil {
		s.Before = sbatch.DefaultSignalTime
	}
	if hasDelay {
		if delay < 0 || delay > sbatch.MaxSignalTime {
			return BadRequest(ErrRestInvalidJobs, "job.kill_warning_delay", "kill_warning_delay must be 0-%d seconds, got %d", sbatch.MaxSignalTime, delay)
		}
		s.Before = int(delay)
	}
	if in.KillWarningFlags != nil {
		s.Batch, s.Reservation = false, false
		for _, f := range in.KillWarningFlags {
			switch strings.ToUpper(f) {
			case "BATCH_JOB":
				s.Batch = true
			case "RESERVATION_JOB":
				s.Reservation = true
			default:
				return BadRequest(ErrNotSupported, "job.kill_warning_flags", "kill_warning_flags %q is not supported (BATCH_JOB and RESERVATION_JOB are)", f)
			}
		}
	}
	d.Signal = s.String()
	return nil
}
