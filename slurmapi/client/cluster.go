package client

import "context"

// Node is what sinfo and scontrol show of a node (v0.0.44 node).
type Node struct {
	Name          string   `json:"name"`
	State         []string `json:"state"`
	Reason        string   `json:"reason"`
	Partitions    []string `json:"partitions"`
	CPUs          int64    `json:"cpus"`
	RealMemory    int64    `json:"real_memory"`
	GRES          string   `json:"gres"`
	GRESUsed      string   `json:"gres_used"`
	AllocCPUs     int64    `json:"alloc_cpus"`
	AllocMemory   int64    `json:"alloc_memory"`
	TRES          string   `json:"tres"`
	TRESUsed      string   `json:"tres_used"`
	ReasonSetUser string   `json:"reason_set_by_user"`
}

// Partition is what sinfo shows of a partition (v0.0.44 partition_info).
type Partition struct {
	Name  string `json:"name"`
	Nodes struct {
		Configured string `json:"configured"`
		Total      int64  `json:"total"`
	} `json:"nodes"`
	Maximums struct {
		Time NoVal `json:"time"`
	} `json:"maximums"`
	Partition struct {
		State []string `json:"state"`
	} `json:"partition"`
}

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/nodes/", nil, nil, &out)
	return out.Nodes, err
}

// Partitions lists the partitions.
func (c *Client) Partitions(ctx context.Context) ([]Partition, error) {
	var out struct {
		Partitions []Partition `json:"partitions"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/partitions/", nil, nil, &out)
	return out.Partitions, err
}
