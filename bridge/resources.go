package bridge

// Dim names one entry of the fixed resource vector.
type Dim int

// The fixed resource dimensions. GPU is counted in thousandths of a device so that whole and
// fractional requests add up in one number.
const (
	DimGPU       Dim = iota // thousandths of a GPU
	DimGPUMemory            // MiB of GPU memory
	DimCPU                  // millicores
	DimMemory               // bytes
	numDims
)

var dimNames = [numDims]string{"gpu", "gpu-memory", "cpu", "memory"}

func (d Dim) String() string { return dimNames[d] }

// Resources is an amount of every fixed dimension plus named extended resources
// (for example "rdma/ib" or "example.com/fpga").
type Resources struct {
	GPUMilli     int64      `json:"gpuMilli,omitempty" yaml:"gpuMilli,omitempty"`
	GPUMemoryMiB int64      `json:"gpuMemoryMiB,omitempty" yaml:"gpuMemoryMiB,omitempty"`
	CPUMilli     int64      `json:"cpuMilli,omitempty" yaml:"cpuMilli,omitempty"`
	MemoryBytes  int64      `json:"memoryBytes,omitempty" yaml:"memoryBytes,omitempty"`
	Extended     []Quantity `json:"extended,omitempty" yaml:"extended,omitempty"`
}

// Quantity is an amount of one named extended resource.
type Quantity struct {
	Name  string `json:"name" yaml:"name"`
	Value int64  `json:"value" yaml:"value"`
}

// Get returns the amount of one fixed dimension.
func (r Resources) Get(d Dim) int64 { return r.vec()[d] }

func (r Resources) vec() vec {
	return vec{r.GPUMilli, r.GPUMemoryMiB, r.CPUMilli, r.MemoryBytes}
}

// vec is the fixed part of Resources as an array, so that the hot path adds and compares
// without allocating.
type vec [numDims]int64

func (v *vec) add(o vec) {
	for d := range v {
		v[d] += o[d]
	}
}

func (v *vec) sub(o vec) {
	for d := range v {
		v[d] -= o[d]
	}
}

// fitsIn reports whether every dimension of v is at most the one of free.
func (v vec) fitsIn(free vec) bool {
	for d := range v {
		if v[d] > free[d] {
			return false
		}
	}
	return true
}

func (v vec) resources() Resources {
	return Resources{GPUMilli: v[DimGPU], GPUMemoryMiB: v[DimGPUMemory], CPUMilli: v[DimCPU], MemoryBytes: v[DimMemory]}
}

// shareDims are the dimensions fair share and ordering compare; GPU memory follows GPU.
var shareDims = [...]Dim{DimGPU, DimCPU, DimMemory}

// governingDims returns the dimensions that decide whether a queue is over or under its share
// for a request: GPUs when the request has any, otherwise CPU and memory.
func governingDims(need vec) []Dim {
	if need[DimGPU] > 0 {
		return shareDims[:1]
	}
	return shareDims[1:]
}
