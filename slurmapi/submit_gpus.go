package slurmapi

import (
	"github.com/sluicehq/sluice/slurmapi/sbatch"
)

// gpuSpec is one GPU demand from one field, before they are combined.
type gpuSpec struct {
	source string
	scope  string // "node", "task", "job"
	gres   []sbatch.GRES
}

// setGPUs combines the GPU fields into d.GPUs. Explicit REST tres_per_*
// fields replace every GPU directive of the script (as one explicit
// option does in sbatch); within one source at most one of per-node,
// per-task and per-job may ask for GPUs.
func setGPUs(d *JobDesc, in *jobDescIn, opts *sbatch.Options, pol SubmitPolicy) *Error {
	var specs []gpuSpec
	for _, f := range []struct {
		source, scope string
		value         *string
	}{
		{"job.tres_per_node", "node", in.TRESPerNode},
		{"job.tres_per_task", "task", in.TRESPerTask},
		{"job.tres_per_job", "job", in.TRESPerJob},
	} {
		if f.value == nil || *f.value == "" {
			continue
		}
		g, err := sbatch.ParseGRES(*f.value)
		if err != nil {
			return BadRequest(ErrInvalidGRES, f.source, "%v", err)
		}
		specs = append(specs, gpuSpec{f.source, f.scope, g})
	}
	if len(specs) == 0 {
		specs = directiveGPUs(opts)
	}
	return combineGPUs(d, specs, pol)
}

// directiveGPUs turns --gres and --gpus* into specs; their values were
// checked when the directives were parsed.
func directiveGPUs(opts *sbatch.Options) []gpuSpec {
	var specs []gpuSpec
	if len(opts.GRES) > 0 {
		specs = append(specs, gpuSpec{"--gres", "node", opts.GRES})
	}
	for _, f := range []struct{ source, scope, value string }{
		{"--gpus-per-node", "node", opts.GPUsPerNode},
		{"--gpus-per-task", "task", opts.GPUsPerTask},
		{"--gpus", "job", opts.GPUs},
	} {
		if f.value == "" {
			continue
		}
		typ, n, _ := sbatch.ParseGPUs(f.value)
		specs = append(specs, gpuSpec{f.source, f.scope, []sbatch.GRES{{Name: "gpu", Type: typ, Count: int64(n)}}})
	}
	return specs
}

func combineGPUs(d *JobDesc, specs []gpuSpec, pol SubmitPolicy) *Error {
	g := &d.GPUs
	scope := ""
	setType := func(source, typ string) *Error {
		if typ == "" {
			return nil
		}
		if g.Type != "" && g.Type != typ {
			return BadRequest(ErrInvalidGRES, source, "GPU type %q conflicts with %q asked elsewhere", typ, g.Type)
		}
		g.Type = typ
		return nil
	}
	for _, s := range specs {
		for _, r := range s.gres {
			if e := setType(s.source, r.Type); e != nil {
				return e
			}
			if r.Count < 0 || r.Count > maxCount {
				return BadRequest(ErrInvalidGRES, s.source, "gres/%s:%d: counts must be between 0 and %d", r.Name, r.Count, maxCount)
			}
			whole := 0
			switch r.Name {
			case "gpu":
				whole = int(r.Count)
			case "shard":
				if s.scope != "node" {
					return BadRequest(ErrInvalidGRES, s.source, "gres/shard is requested per node (tres_per_node or --gres)")
				}
				shards := pol.ShardsPerGPU
				if shards <= 0 {
					shards = 1
				}
				switch {
				case int(r.Count) == shards:
					whole = 1
				case int(r.Count) > shards:
					return BadRequest(ErrInvalidGRES, s.source, "gres/shard:%d is more than one GPU (%d shards each); ask for whole GPUs with gres/gpu", r.Count, shards)
				default:
					g.Fraction = float64(r.Count) / float64(shards)
					g.Shards = int(r.Count)
				}
			case "mps":
				if s.scope != "node" {
					return BadRequest(ErrInvalidGRES, s.source, "gres/mps is requested per node (tres_per_node or --gres)")
				}
				switch {
				case r.Count == 100:
					whole = 1
				case r.Count > 100:
					return BadRequest(ErrInvalidGRES, s.source, "gres/mps:%d: mps is a percentage of one GPU, at most 100", r.Count)
				default:
					g.Fraction = float64(r.Count) / 100
				}
			default:
				return BadRequest(ErrInvalidGRES, s.source, "unknown generic resource %q: Sluice offers gpu, shard and mps", r.Name)
			}
			if whole == 0 {
				continue
			}
			if scope != "" && scope != s.scope {
				return BadRequest(ErrInvalidGRES, s.source, "GPUs are asked both per %s and per %s; use one of them", scope, s.scope)
			}
			scope = s.scope
			switch s.scope {
			case "node":
				g.PerNode += whole
			case "task":
				g.PerTask += whole
			case "job":
				g.PerJob += whole
			}
		}
	}
	if g.Fraction > 0 && (g.PerNode+g.PerTask+g.PerJob > 0 || d.Nodes > 1) {
		return BadRequest(ErrInvalidGRES, specs[0].source, "a shared GPU (gres/shard, gres/mps) is for a single-node job without whole GPUs")
	}
	if g.PerJob > 0 && g.PerJob < d.Nodes {
		return BadRequest(ErrInvalidGRES, specs[0].source, "%d GPUs cannot be spread over %d nodes", g.PerJob, d.Nodes)
	}
	return nil
}
